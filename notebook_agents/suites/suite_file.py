"""A scenarios file: livekit's ``scenarios.yaml`` (a ``ScenarioGroup``: ``name`` and
``scenarios``, each a ``Scenario``: ``label``, ``instructions``, ``agent_expectations``,
``tags``, ``userdata``), plus scripted ``turns`` to run offline:

    name: Greeter and weather
    scenarios:
      - label: hands off to weather
        userdata: {city: Paris}
        turns:
          - user: transfer to weather
            expect:
              - next_event().is_function_call(name="transfer_to_weather")
              - skip_next_event_if(type="function_call_output")
              - next_event().is_agent_handoff(new_agent_type=WeatherAgent)
          - audio: paris.wav          # a spoken turn (a WAV, relative to this file)
            expect:
              - contains_function_call(name="lookup_weather")

A mistake is a ``SuiteFileError`` naming the file, line and field, and the fix.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from livekit.agents.simulation import Scenario

from ..errors import NotebookAgentsError
from ..runner._samples import spoken_audio
from ..runner.errors import AudioError
from .expectations import Expectation, ExpectationError, parse

_SUITE_KEYS = {"name", "id", "scenarios"}
_SCENARIO_KEYS = {"label", "instructions", "agent_expectations", "tags", "userdata", "id", "turns"}
_TURN_KEYS = {"user", "audio", "expect", "timeout"}
_LINE = re.compile(r"(?P<lead>\s*(?:-\s+)?(?:(?P<key>[A-Za-z_][\w-]*):\s+)?)(?P<value>.*?)\s*$")
"""a line of a scenarios file: its indent, list dash and key; then its value"""
_SYNTAX = re.compile(r"[{\[]|:(\s|$)")
"""what YAML reads as its own syntax in an unquoted value (a mapping, a list, a key)"""
_YAML_SYNTAX = "`{`, `[` and `: ` are YAML's own syntax outside quotes, so"
_EXAMPLE_TURN = "- user: transfer to weather\n  expect: ['next_event().is_function_call()']"


class SuiteFileError(NotebookAgentsError, ValueError):
    """A scenarios file that cannot be run as written: where, what, and the fix."""


class UnknownScenarioError(NotebookAgentsError, KeyError):
    """No scenario of a suite (or of its result) has the label asked for: the message lists
    the labels there are."""

    def __str__(self) -> str:
        return str(self.args[0])  # the message as written, not quoted as a KeyError's key is


@dataclass(frozen=True)
class Turn:
    """One user turn, typed (``user``) or spoken (``audio``: a WAV), and what it must give."""

    user: str | None = None
    audio: Path | None = None
    expect: tuple[Expectation, ...] = ()
    timeout: float = 30.0

    @property
    def spoken(self) -> bool:
        return self.audio is not None

    @property
    def said(self) -> str:
        """The turn as a person reads it: its text, or its audio file's name."""
        return f"spoken: {self.audio.name}" if self.audio is not None else str(self.user)


@dataclass(frozen=True)
class ScriptedScenario:
    """livekit's ``Scenario`` (what ``lk agent simulate`` takes) and the turns scripted here."""

    scenario: Scenario
    turns: tuple[Turn, ...] = ()
    line: int = 0
    """where it starts in its file (1-based; 0 when not from a file)"""

    @property
    def label(self) -> str:
        return str(self.scenario.label)

    @property
    def expectations(self) -> list[Expectation]:
        return [expectation for turn in self.turns for expectation in turn.expect]


@dataclass(frozen=True)
class ScenarioSuite:
    """A file's scenarios, in order; ``load_suite`` reads one."""

    name: str
    scenarios: tuple[ScriptedScenario, ...]
    path: Path | None = None
    lines: Mapping[tuple[Any, ...], int] = field(default_factory=dict, repr=False)

    def __getitem__(self, label: str) -> ScriptedScenario:
        for scenario in self.scenarios:
            if scenario.label == label:
                return scenario
        raise UnknownScenarioError(f"no scenario labelled {label!r}; there are {self.labels}")

    @property
    def labels(self) -> list[str]:
        return [scenario.label for scenario in self.scenarios]

    def error(self, at: tuple[Any, ...], message: str) -> SuiteFileError:
        """A ``SuiteFileError`` about the field at ``at`` (``("scenarios", 0, "turns", 1,
        "expect", 0)``), with its file and line."""
        return _located(self.path, self.lines, at, message)

    def naming(self, agent_type: str) -> tuple[Any, ...]:
        """Where the first expectation naming ``agent_type`` (``new_agent_type=``) is."""
        for s, scenario in enumerate(self.scenarios):
            for t, turn in enumerate(scenario.turns):
                for e, expectation in enumerate(turn.expect):
                    if agent_type in expectation.agent_types:
                        return ("scenarios", s, "turns", t, "expect", e)
        return ()


def load_suite(source: str | os.PathLike[str] | Mapping[str, Any]) -> ScenarioSuite:
    """Read a scenarios file (YAML), or a mapping of the same shape; ``SuiteFileError`` if
    it cannot run."""
    if isinstance(source, Mapping):
        return _Reader(None, {}).suite(source)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SuiteFileError(f"cannot read the scenarios file {path}: {e.strerror}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise _not_yaml(path, text.splitlines(), e) from None
    finally:
        loader.dispose()
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _map_lines(node, (), lines)
    return _Reader(path, lines, text.splitlines()).suite(data)


def _not_yaml(path: Path, source: list[str], error: yaml.YAMLError) -> SuiteFileError:
    """A YAML error where it is, with the fix when an unquoted expectation caused it."""
    problem = getattr(error, "problem", None) or str(error)
    marks = [getattr(error, "problem_mark", None), getattr(error, "context_mark", None)]
    at = [mark.line for mark in marks if mark is not None]
    for index in at:  # where the parser stopped, then where the construct it was in began
        if index < len(source) and (fix := _quoting_fix(source[index])):
            return SuiteFileError(
                f"{path}:{index + 1}: not valid YAML ({problem}): {_YAML_SYNTAX} {fix}"
            )
    where = f"{path}:{at[0] + 1}" if at else str(path)
    return SuiteFileError(f"{where}: not valid YAML: {problem}")


def _quoting_fix(line: str) -> str:
    """How to write ``line`` when its value is unquoted and holds what YAML reads as its own
    syntax (``{``, ``[``, ``: ``, a leading ``:``); "" when it does not."""
    match = _LINE.match(line)
    if match is None:
        return ""
    lead, key, value = match.group("lead"), match.group("key"), match.group("value")
    if not value or value[0] in "'\"" or not (value[0] == ":" or _SYNTAX.search(value)):
        return ""
    what = "the expectation" if key in (None, "expect") else "the value"
    if key is not None and value.startswith("["):  # a list of expectations, inline
        example = '\'next_event().is_function_call(arguments={"city": "Paris"})\''
        return f"quote each expectation in the list, e.g.\n{lead}[{example}]"
    quoted = value.replace("'", "''")  # YAML's single quotes escape only themselves
    return f"quote {what}:\n{lead}'{quoted}'"


def _map_lines(node: yaml.Node, at: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> None:
    """The line (1-based) of each value in the document, by its path of keys and indexes."""
    lines[at] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines[(*at, key.value)] = key.start_mark.line + 1
            _map_lines(value, (*at, key.value), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _map_lines(item, (*at, index), lines)


def _located(
    path: Path | None, lines: Mapping[tuple[Any, ...], int], at: tuple[Any, ...], message: str
) -> SuiteFileError:
    """``message`` about the field at ``at``: the file and line (that of the nearest field
    holding it which has one), then the field."""
    where = _dotted(at) or "the file"
    if path is None:
        return SuiteFileError(f"{where}: {message}")
    line = next((lines[at[:n]] for n in range(len(at), -1, -1) if at[:n] in lines), None)
    head = f"{path}:{line}" if line else str(path)
    return SuiteFileError(f"{head}: {where}: {message}")


class _Reader:
    """Checks each field as it reads it, so an error names the first thing to fix."""

    def __init__(
        self,
        path: Path | None,
        lines: Mapping[tuple[Any, ...], int],
        source: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.lines = lines
        self.source = source

    def fail(self, at: tuple[Any, ...], message: str) -> SuiteFileError:
        return _located(self.path, self.lines, at, message)

    def suite(self, data: Any) -> ScenarioSuite:
        if not isinstance(data, Mapping) or not isinstance(data.get("scenarios"), list):
            raise self.fail(
                (),
                "a scenarios file is livekit's scenarios.yaml shape: `name:` and a list "
                "`scenarios:` of scenarios, each with a `label:`",
            )
        self.unknown(data, (), _SUITE_KEYS)
        scenarios = [
            self.scenario(item, ("scenarios", i)) for i, item in enumerate(data["scenarios"])
        ]
        if not scenarios:
            raise self.fail(("scenarios",), "the list is empty: add a scenario with a `label:`")
        seen: set[str] = set()
        for index, scenario in enumerate(scenarios):
            if scenario.label in seen:
                raise self.fail(
                    ("scenarios", index, "label"),
                    f"the label {scenario.label!r} is used twice: labels name the results, "
                    "make each one different",
                )
            seen.add(scenario.label)
        name = data.get("name") or (self.path.stem if self.path else "scenarios")
        return ScenarioSuite(str(name), tuple(scenarios), self.path, self.lines)

    def scenario(self, data: Any, at: tuple[Any, ...]) -> ScriptedScenario:
        if not isinstance(data, Mapping):
            raise self.fail(at, "each scenario is a mapping with a `label:` and `turns:`")
        self.unknown(data, at, _SCENARIO_KEYS)
        label = data.get("label")
        if not isinstance(label, str) or not label.strip():
            raise self.fail(at, "a scenario needs a `label:` (a short name for its result)")
        for key in ("instructions", "agent_expectations", "id"):
            if not isinstance(data.get(key, ""), str):
                raise self.fail((*at, key), f"`{key}:` is text")
        tags = data.get("tags") or {}
        if not isinstance(tags, Mapping):
            raise self.fail((*at, "tags"), "`tags:` is a mapping of names to text, as livekit's")
        userdata = data.get("userdata")
        if userdata is not None and not isinstance(userdata, Mapping):
            raise self.fail((*at, "userdata"), "`userdata:` is a mapping (your scenario's data)")
        turns = data.get("turns") or []
        if not isinstance(turns, list):
            raise self.fail((*at, "turns"), f"`turns:` is a list of turns, e.g.\n{_EXAMPLE_TURN}")
        scenario = Scenario(
            label=label,
            instructions=data.get("instructions", ""),
            agent_expectations=data.get("agent_expectations", ""),
            tags={str(k): str(v) for k, v in tags.items()},
            userdata=json.dumps(userdata) if userdata else "",
            id=data.get("id", ""),
        )
        read = tuple(self.turn(turn, (*at, "turns", i)) for i, turn in enumerate(turns))
        return ScriptedScenario(scenario, read, self.lines.get(at, 0))

    def turn(self, data: Any, at: tuple[Any, ...]) -> Turn:
        if not isinstance(data, Mapping):
            raise self.fail(at, f"a turn is a mapping, e.g.\n{_EXAMPLE_TURN}")
        self.unknown(data, at, _TURN_KEYS)
        if ("user" in data) == ("audio" in data):
            raise self.fail(
                at, "a turn has either `user:` (what the user types) or `audio:` (a WAV file)"
            )
        user, audio = data.get("user"), data.get("audio")
        if "user" in data and not (isinstance(user, str) and user.strip()):
            raise self.fail((*at, "user"), "`user:` is the text the user types")
        path: Path | None = None
        if "audio" in data:
            if not isinstance(audio, str):
                raise self.fail((*at, "audio"), "`audio:` is a WAV file's path")
            path = Path(audio) if self.path is None else self.path.parent / audio
            if not path.is_file():
                raise self.fail(
                    (*at, "audio"), f"no file {path}: a path relative to the scenarios file"
                )
            try:  # read now as run_audio will, so a bad file stops the suite before it runs
                spoken_audio(path, None)
            except OSError as e:
                raise self.fail(
                    (*at, "audio"), f"cannot read {path} ({e.strerror}): give a readable WAV file"
                ) from None
            except AudioError as e:
                raise self.fail((*at, "audio"), str(e)) from None
        timeout = data.get("timeout", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise self.fail((*at, "timeout"), "`timeout:` is seconds, a positive number")
        expect = data.get("expect") or []
        if isinstance(expect, str):
            expect = [expect]
        if not isinstance(expect, list):
            raise self.fail((*at, "expect"), "`expect:` is a list of expectations")
        checks = []
        for index, text in enumerate(expect):
            if isinstance(text, Mapping | list):
                raise self.fail((*at, "expect", index), self.read_as(text, (*at, "expect", index)))
            try:
                checks.append(parse(text))
            except ExpectationError as e:
                raise self.fail((*at, "expect", index), str(e)) from None
        return Turn(user, path, tuple(checks), float(timeout))

    def read_as(self, value: Mapping[str, Any] | list[Any], at: tuple[Any, ...]) -> str:
        """Why an expectation is YAML's mapping or list, and its line written as a string."""
        shape = "a mapping" if isinstance(value, Mapping) else "a list"
        line = self.lines.get(at, 0)
        fix = _quoting_fix(self.source[line - 1]) if 0 < line <= len(self.source) else ""
        return f"YAML read this expectation as {shape}: {fix or 'quote the expectation'}"

    def unknown(self, data: Mapping[str, Any], at: tuple[Any, ...], known: set[str]) -> None:
        for key in data:
            if key not in known:
                raise self.fail(
                    (*at, key), f"unknown field `{key}`: the fields are {', '.join(sorted(known))}"
                )


def _dotted(at: Sequence[Any]) -> str:
    """``scenarios[1].turns[0].expect[2]``"""
    text = ""
    for part in at:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text
