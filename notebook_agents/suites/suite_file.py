"""A scenarios file: livekit's ``scenarios.yaml`` (a ``ScenarioGroup``: ``name`` and
``scenarios``, each a ``Scenario``: ``label``, ``instructions``, ``agent_expectations``,
``tags``, ``userdata``), plus scripted ``turns`` to run offline:

    name: Greeter and weather
    scenarios:
      - label: hands off to weather
        userdata: {city: Paris}
        repeat: 5                     # runs 5 times, each on a fresh agent: pass@k, flaky
        turns:
          - user: transfer to weather
            expect:
              - next_event().is_function_call(name="transfer_to_weather")
              - skip_next_event_if(type="function_call_output")
              - next_event().is_agent_handoff(new_agent_type=WeatherAgent)
          - audio: paris.wav          # a spoken turn (a WAV, relative to this file)
            conditions:               # the line it crosses (else the scenario's, if any)
              - noise: {kind: babble, snr_db: 10}
              - telephone
            expect:
              - contains_function_call(name="lookup_weather")
          - audio: stop.wav
            at: 0.5                   # spoken over the reply above, 0.5 s into it
            expect:
              - next_event().is_message(role="assistant")

A mistake is a ``SuiteFileError`` naming the file, line and field, and the fix; a file is read
within bounds (``_bounded_yaml``), so any file is read or refused at once.

A scenario's ``id`` and the file's are LiveKit's (``SCN_`` / ``SCNG_`` and 12 characters, e.g.
``SCN_4mTvH7yLdKpZ``: https://docs.livekit.io/testing/simulations/write-a-scenario/): kept as
read, and ``add_missing_ids`` writes the ones a file lacks into it, changing nothing else.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from livekit.agents.simulation import Scenario

from ..errors import NotebookAgentsError
from ..runner._barge_in import FIRST_AUDIO, cue_seconds
from ..runner._samples import spoken_audio
from ..runner.errors import AudioError, CueError
from ..speech.line import NOISE_KINDS, Line, LineError
from ._bounded_yaml import BoundedLoader, YamlRefusal
from .expectations import Expectation, ExpectationError, parse

_SUITE_KEYS = {"name", "id", "scenarios"}
_SCENARIO_KEYS = {
    *("label", "instructions", "agent_expectations", "tags", "userdata", "id", "turns"),
    "repeat",
    "conditions",
}
MOST_REPEATS = 100
"""the most runs a scenario's ``repeat:`` (or ``run_suite(..., repeat=)``) asks for: each is a
fresh agent (~0.1-0.5 s offline), so 100 is minutes, past what pass@k is read at (k of 3-10)"""
_TURN_KEYS = {"user", "audio", "expect", "timeout", "conditions", "at"}
_LINE = re.compile(r"(?P<lead>\s*(?:-\s+)?(?:(?P<key>[A-Za-z_][\w-]*):\s+)?)(?P<value>.*?)\s*$")
"""a line of a scenarios file: its indent, list dash and key; then its value"""
_SYNTAX = re.compile(r"[{\[]|:(\s|$)")
"""what YAML reads as its own syntax in an unquoted value (a mapping, a list, a key)"""
_YAML_SYNTAX = "`{`, `[` and `: ` are YAML's own syntax outside quotes, so"
_EXAMPLE_TURN = "- user: transfer to weather\n  expect: ['next_event().is_function_call()']"
_CONDITIONS_EXAMPLE = (
    ", e.g.\nconditions:\n  - noise: {kind: babble, snr_db: 10}\n  - telephone\n"
    "  - packet_loss: {rate: 0.05, conceal: repeat}"
)
_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
"""livekit's ids: a prefix and 12 of shortuuid's characters (livekit/protocol utils/guid:
``Size = 12``, ``IDAlphabet = shortuuid.DefaultAlphabet``)"""


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
    conditions: Line | None = None
    """the line a spoken turn crosses (``conditions:``, its own or its scenario's); None:
    the runner's (``runner.conditions``)"""
    at: float | None = None
    """a barge-in (``at:``): spoken this many seconds into the reply to the turn before (0:
    at its first audio), over it, rather than once the agent is quiet"""

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
    repeat: int = 1
    """how many times it runs (``repeat:``), each on a fresh agent: pass@k and flakiness"""

    @property
    def label(self) -> str:
        return str(self.scenario.label)

    @property
    def id(self) -> str:
        """Its stable ``id`` as the file gives it (``SCN_...``), "" when it has none."""
        return str(self.scenario.id)

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
    id: str = ""
    """the file's ``id`` (LiveKit's scenario group, ``SCNG_...``), "" when it has none"""

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
    return _read(Path(source))[0]


def add_missing_ids(path: str | os.PathLike[str]) -> ScenarioSuite:
    """Give the scenarios file at ``path``, and each scenario in it, the stable ``id`` it
    lacks, as LiveKit's CLI wants them, and return the suite read again.

    Each id is a new line ``id: SCN_...`` before the scenario's first field (in a
    ``{...}`` scenario, its first entry), in the file's own indentation and line endings;
    nothing else in the file changes (comments, order, quoting, blank lines). A file that
    has every id is not written. A file that cannot be read is refused as ``load_suite``
    refuses it, and not written."""
    path = Path(path)
    suite, document = _read(path)
    taken = {suite.id, *(scenario.id for scenario in suite.scenarios)}
    edits: dict[int, tuple[int, str]] = {}
    expected = dict(document.data)  # the file as it must read once edited
    if not suite.id:
        expected["id"] = new_id("SCNG_", taken)
        edits.update(_id_edit(document.text, document.first_keys, document.node, expected["id"]))
    items = next(value for key, value in document.node.value if key.value == "scenarios")
    expected["scenarios"] = []
    read = zip(items.value, suite.scenarios, document.data["scenarios"], strict=True)
    for node, scenario, fields in read:
        if not scenario.id:
            fields = {**fields, "id": new_id("SCN_", taken)}
            edits.update(_id_edit(document.text, document.first_keys, node, fields["id"]))
        expected["scenarios"].append(fields)
    if not edits:
        return suite
    text = document.text
    for start in sorted(edits, reverse=True):
        end, written = edits[start]
        text = text[:start] + written + text[end:]
    try:
        edited = _parse(path, text).data
    except SuiteFileError:
        edited = None
    if edited != expected:
        raise SuiteFileError(
            f"{path}: adding ids here would change more than ids (a scenario written as an "
            "alias of another value, say): add a line `id: SCN_` and 12 letters and digits to "
            "each scenario by hand; the file is unchanged"
        )
    _write_whole(path, text)
    return load_suite(path)


def append_scenario(path: str | os.PathLike[str], fields: Mapping[str, Any]) -> ScenarioSuite:
    """Add a scenario, ``fields`` (its YAML data: ``id``, ``label``, ``turns``, ...), as the
    last of the scenarios file at ``path``, and return the suite read again; a file not there
    is made, with a ``name`` and LiveKit's group ``id``.

    The scenario is new text at the end of the file's ``scenarios:`` list, in the list's own
    indentation and line endings; nothing else in the file changes (comments, order,
    quoting). A file that cannot be read is refused as ``load_suite`` refuses it, and a label
    the file has already; a file that would not load with the scenario is left as it was."""
    path = Path(path)
    if not path.exists():
        group = {  # the id first, as lk writes it
            "id": new_id("SCNG_", {str(fields.get("id", ""))}),
            "name": _suite_name(path),
            "scenarios": [dict(fields)],
        }
        _write_checked(path, _yaml_text(group), group, None)
        return _loaded_or_undone(path, None)
    suite, document = _read(path)
    label = fields.get("label")
    if label in suite.labels:
        at = suite.labels.index(label)
        line = suite.lines.get(("scenarios", at, "label"), 0)
        raise SuiteFileError(
            f"{path}:{line}: the label {label!r} is scenarios[{at}]'s already: labels name "
            "the results, so give this scenario another label, or delete that one from the "
            "file first; the file is unchanged"
        )
    text = document.text
    items = next(value for key, value in document.node.value if key.value == "scenarios")
    newline = "\r\n" if "\r\n" in text else "\n"
    if items.flow_style:  # `scenarios: [{...}]`: one more entry, as JSON (YAML's flow style)
        at = items.value[-1].end_mark.index
        added = ", " + json.dumps(dict(fields), ensure_ascii=False)
    else:
        at = items.end_mark.index  # where the next token (or the end) begins
        line_start = text.rfind("\n", 0, at) + 1
        if not text[line_start:at].strip():  # the next key's indentation: before it
            at = line_start
        indent = " " * items.start_mark.column  # the column of the list's dashes
        dumped = _yaml_text([dict(fields)]).splitlines()
        added = "".join(f"{indent}{line}{newline}" for line in dumped)
        if at > 0 and text[at - 1] != "\n":  # a file whose last line has no line end
            added = newline + added
    expected = {**document.data, "scenarios": [*document.data["scenarios"], dict(fields)]}
    _write_checked(path, text[:at] + added + text[at:], expected, document.text)
    return _loaded_or_undone(path, document.text)


def _suite_name(path: Path) -> str:
    """A new file's ``name``: its own, less what marks it a scenarios file."""
    name = path.name
    for suffix in (".yaml", ".yml", ".scenarios", "scenarios"):
        name = name.removesuffix(suffix)
    return name.strip(".-_ ") or "scenarios"


class _IndentedLists(yaml.SafeDumper):  # type: ignore[misc]
    """Lists indented under their key, as livekit's and these docs' scenarios files are."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _yaml_text(data: Any) -> str:
    """``data`` as block YAML, keys in the order given, each value on one line."""
    return str(
        yaml.dump(data, Dumper=_IndentedLists, sort_keys=False, allow_unicode=True, width=2**31 - 1)
    )


def _write_checked(path: Path, text: str, expected: Any, original: str | None) -> None:
    """Write ``text`` to ``path`` if it reads as ``expected``; else refuse, writing nothing."""
    try:
        written = _parse(path, text).data
    except SuiteFileError:
        written = None
    if written != expected:
        state = "unchanged" if original is not None else "not made"
        raise SuiteFileError(
            f"{path}: the scenario would not read back as written here: add it by hand; "
            f"the file is {state}"
        )
    _write_whole(path, text)


def _loaded_or_undone(path: Path, original: str | None) -> ScenarioSuite:
    """The file at ``path`` read again; if it does not load, it is put back as it was
    (``original``, or no file) and the reason raised."""
    try:
        return load_suite(path)
    except SuiteFileError:
        if original is None:
            path.unlink(missing_ok=True)
        else:
            _write_whole(path, original)
        raise


def _write_whole(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole or not at all: an editor or lk never reads half."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    temporary.write_bytes(text.encode("utf-8"))
    if path.exists():
        shutil.copymode(path, temporary)
    os.replace(temporary, path)


def new_id(prefix: str, taken: set[str]) -> str:
    """A new LiveKit id (``prefix``: ``SCN_`` for a scenario, ``SCNG_`` for a file) none of
    ``taken`` is; added to ``taken``."""
    while True:
        new = prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))
        if new not in taken:
            taken.add(new)
            return new


def _id_edit(
    text: str, first_keys: Mapping[int, int], mapping: yaml.MappingNode, new: str
) -> dict[int, tuple[int, str]]:
    """The edit giving ``mapping`` the id ``new``, before its first key: {start: (end, text
    put there)}."""
    given = [value for key, value in mapping.value if key.value == "id"]
    if given:  # `id: ''` or a bare `id:`: the value is replaced
        value = given[-1]
        start, end = value.start_mark.index, value.end_mark.index
        return {start: (end, new if text[start - 1 : start].isspace() else f" {new}")}
    start = first_keys[id(mapping)]
    if mapping.flow_style:  # `{label: a}`: at the front, inside the brace
        return {start: (start, f"id: {new}, ")}
    line_start = text.rfind("\n", 0, start) + 1
    lead = text[line_start:start].lstrip("\ufeff")  # `  - `: the first field's column
    indent = "".join(c if c == "\t" else " " for c in lead)
    newline = "\r\n" if "\r\n" in text else "\n"
    return {start: (start, f"id: {new}{newline}{indent}")}


@dataclass(frozen=True)
class _Document:
    text: str
    node: Any
    """the YAML node of the whole file, with its marks (None for an empty file)"""
    data: Any
    first_keys: Mapping[int, int]
    """where each mapping node's first key starts in ``text``"""


def _read(path: Path) -> tuple[ScenarioSuite, _Document]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SuiteFileError(f"cannot read the scenarios file {path}: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")  # not read_text: line endings stay as written
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        line_start = raw.rfind(b"\n", 0, e.start) + 1
        column = len(raw[line_start : e.start].decode("utf-8", "replace")) + 1
        raise SuiteFileError(
            f"{path}:{line}: not UTF-8 text (the byte 0x{raw[e.start]:02x} at column "
            f"{column}): save the file as UTF-8"
        ) from None
    document = _parse(path, text)
    lines: dict[tuple[Any, ...], int] = {}
    if document.node is not None:
        _map_lines(document.node, (), lines)
    return _Reader(path, lines, text.splitlines()).suite(document.data), document


def _parse(path: Path, text: str) -> _Document:
    loader: BoundedLoader | None = None
    try:
        loader = BoundedLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except YamlRefusal as e:
        raise SuiteFileError(f"{path}:{e.line}: {e.message}") from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow anywhere
        line = text.count("\n", 0, e.position) + 1
        raise SuiteFileError(
            f"{path}:{line}: the character U+{e.character:04X} is not allowed in YAML: remove it"
        ) from None
    except yaml.YAMLError as e:
        raise _not_yaml(path, text.splitlines(), e) from None
    finally:
        if loader is not None:
            loader.dispose()
    return _Document(text, node, data, loader.first_keys)


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


def _map_lines(
    node: yaml.Node, at: tuple[Any, ...], lines: dict[tuple[Any, ...], int], line: int = 0
) -> None:
    """The line (1-based) of each field in the document, by its path of keys and indexes: a
    key's own line (its value may start below it), a list item's line."""
    lines[at] = line or node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _map_lines(value, (*at, key.value), lines, key.start_mark.line + 1)
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
        ids: dict[str, int] = {}
        for index, scenario in enumerate(scenarios):
            first = ids.setdefault(scenario.id, index) if scenario.id else index
            if first != index:
                line = self.lines.get(("scenarios", first, "id"), 0)
                raise self.fail(
                    ("scenarios", index, "id"),
                    f"the id {scenario.id!r} is also scenarios[{first}]'s (line {line}): ids "
                    "name a scenario's results across runs, so make each one different "
                    "(delete this one and add_missing_ids() gives it a new id)",
                )
        name = data.get("name") or (self.path.stem if self.path else "scenarios")
        group_id = self.text_field(data, (), "id")
        return ScenarioSuite(str(name), tuple(scenarios), self.path, self.lines, group_id)

    def scenario(self, data: Any, at: tuple[Any, ...]) -> ScriptedScenario:
        if not isinstance(data, Mapping):
            raise self.fail(at, "each scenario is a mapping with a `label:` and `turns:`")
        self.unknown(data, at, _SCENARIO_KEYS)
        label = data.get("label")
        if not isinstance(label, str) or not label.strip():
            raise self.fail(at, "a scenario needs a `label:` (a short name for its result)")
        instructions, expectations, scenario_id = (
            self.text_field(data, at, key) for key in ("instructions", "agent_expectations", "id")
        )
        tags = data.get("tags") or {}
        if not isinstance(tags, Mapping):
            raise self.fail((*at, "tags"), "`tags:` is a mapping of names to text, as livekit's")
        userdata = data.get("userdata")
        if userdata is not None and not isinstance(userdata, Mapping):
            raise self.fail((*at, "userdata"), "`userdata:` is a mapping (your scenario's data)")
        if userdata and (unfit := _not_json(userdata, (*at, "userdata"))):
            raise self.fail(*unfit)
        repeat = data.get("repeat", 1)
        if why := repeat_refused(repeat):
            raise self.fail((*at, "repeat"), f"`repeat:` {why}")
        turns = data.get("turns") or []
        if not isinstance(turns, list):
            raise self.fail((*at, "turns"), f"`turns:` is a list of turns, e.g.\n{_EXAMPLE_TURN}")
        scenario = Scenario(
            label=label,
            instructions=instructions,
            agent_expectations=expectations,
            tags={str(k): str(v) for k, v in tags.items()},
            userdata=json.dumps(userdata, allow_nan=False) if userdata else "",
            id=scenario_id,
        )
        line = self.line(data, at) if "conditions" in data else None
        read = tuple(self.turn(turn, (*at, "turns", i), line) for i, turn in enumerate(turns))
        return ScriptedScenario(scenario, read, self.lines.get(at, 0), repeat)

    def turn(self, data: Any, at: tuple[Any, ...], line: Line | None = None) -> Turn:
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
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)  # YAML's .nan, .inf
            or timeout <= 0
        ):
            raise self.fail((*at, "timeout"), "`timeout:` is seconds, a positive number")
        if "conditions" in data:
            if path is None:
                raise self.fail(
                    (*at, "conditions"),
                    "`conditions:` is the line a spoken turn's audio crosses: give the turn "
                    "`audio:` (a WAV file), or take `conditions:` off this typed turn",
                )
            line = self.line(data, at)
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
        conditions = line if path is not None else None
        return Turn(user, path, tuple(checks), float(timeout), conditions, self.cue(data, at))

    def line(self, data: Mapping[str, Any], at: tuple[Any, ...]) -> Line:
        """A ``conditions:`` list as a ``Line`` (a noise file relative to this file)."""
        written = data["conditions"]
        if self.path is not None and isinstance(written, list):
            written = [self.noise_file(item) for item in written]
        try:
            return Line.read([] if written is None else written)
        except LineError as e:
            raise self.fail((*at, "conditions"), f"{e}{_CONDITIONS_EXAMPLE}") from None

    def noise_file(self, item: Any) -> Any:
        """A ``noise:`` whose ``kind`` is a file, with its path made relative to this file."""
        fields = item.get("noise") if isinstance(item, Mapping) and len(item) == 1 else None
        if self.path is None or not isinstance(fields, Mapping):
            return item
        kind = fields.get("kind")
        if not isinstance(kind, str) or kind in NOISE_KINDS:
            return item
        return {"noise": {**fields, "kind": str(self.path.parent / kind)}}

    def cue(self, data: Mapping[str, Any], at: tuple[Any, ...]) -> float | None:
        """A spoken turn's ``at:`` (a barge-in) as seconds into the reply, None without."""
        if "at" not in data:
            return None
        if "audio" not in data:
            raise self.fail(
                (*at, "at"),
                "`at:` makes a spoken turn speak over the agent's reply: give the turn an "
                "`audio:` (a WAV), or remove `at:`",
            )
        try:
            return cue_seconds(data["at"])
        except CueError:
            raise self.fail(
                (*at, "at"),
                f"`at:` is when the caller starts speaking over the reply to the turn before: "
                f"seconds into it (a number from 0, e.g. `at: 0.5`) or `at: {FIRST_AUDIO}`, "
                f"not {data['at']!r}",
            ) from None

    def text_field(self, data: Mapping[str, Any], at: tuple[Any, ...], key: str) -> str:
        """A field that is text, "" when absent or empty (`id:` left blank)."""
        value = data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail((*at, key), f"`{key}:` is text")
        return value

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


def repeat_refused(repeat: object) -> str:
    """Why ``repeat`` is no count of runs (a file's ``repeat:``, ``run_suite(..., repeat=)``),
    or ""."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 0 < repeat <= MOST_REPEATS:
        return (
            f"is how many times to run the scenario, a whole number from 1 to {MOST_REPEATS} "
            f"(e.g. 5), not {repeat!r}"
        )
    return ""


def _not_json(value: Any, at: tuple[Any, ...]) -> tuple[tuple[Any, ...], str] | None:
    """Where ``value`` (userdata) holds what JSON cannot carry, and why; None if nowhere.
    livekit sends userdata as JSON (``Scenario.userdata``), and so does lk: Go's encoder
    refuses NaN and infinities."""
    if isinstance(value, float) and not math.isfinite(value):
        written = ".nan" if math.isnan(value) else "-.inf" if value < 0 else ".inf"
        return at, (
            f"{written} is not a number JSON can carry (livekit sends userdata as JSON): give "
            "a finite number, or quote it as text"
        )
    if isinstance(value, datetime.date):
        kind = "a timestamp" if isinstance(value, datetime.datetime) else "a date"
        return at, (
            f"YAML reads {value} as {kind}, which JSON (livekit's userdata) cannot carry: "
            f"quote it, '{value}'"
        )
    if isinstance(value, Mapping):
        found = (_not_json(item, (*at, key)) for key, item in value.items())
        return next((problem for problem in found if problem), None)
    if isinstance(value, list):
        found = (_not_json(item, (*at, index)) for index, item in enumerate(value))
        return next((problem for problem in found if problem), None)
    if value is None or isinstance(value, str | int | float):
        return None
    return at, (
        f"YAML reads this as {type(value).__name__} (a YAML tag), which JSON (livekit's "
        "userdata) cannot carry: write it as text, a number, a list or a mapping"
    )


def _dotted(at: Sequence[Any]) -> str:
    """``scenarios[1].turns[0].expect[2]``"""
    text = ""
    for part in at:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text
