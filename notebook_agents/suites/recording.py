"""From a call to a regression suite: a conversation held in the notebook, typed or spoken,
through any runner, written as a scenario of a scenarios file that passes when run and fails
when the agent does otherwise.

A suites function, not a ``Trace`` method: the trace sits below the suites (the layering
contract in pyproject.toml), and what a scenario is belongs here.

What happened is read from the trace, so every runner's call can be written (the kernel's,
another process's, a VideoSDK job's, a saved trace loaded): its turns, split where the user
spoke, and in each turn the events livekit's ``RunResult`` holds, in order, as one
``next_event()`` chain ending in ``no_more_events()``: each reply as an assistant message,
each tool call with its name and arguments, each tool output with whether it failed, each
handoff with the class handed to. A run of the same agent gives the same events in the same
order, so the chain holds; an agent that hands off elsewhere, calls another tool or other
arguments, or says more or less, breaks it at that event. What the agent said is not held to
its words (a model words the same answer differently): that is a judge's work.

A spoken turn's audio is the runner's (``runner.spoken``: the samples ``send_audio`` was
given), written as a WAV file beside the scenarios file, with the line conditions it crossed
(``conditions:``); the trace alone keeps no audio.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import NotebookAgentsError
from ..runner import AgentRunner, SpokenAudio
from ..runner._core import fails_turn
from ..speech.wav import wav_bytes
from ..trace import Trace, TraceEvent
from .suite_file import (
    ScriptedScenario,
    SuiteFileError,
    Turn,
    append_scenario,
    load_suite,
    new_id,
)

_CHECKED = ("agent_message", "tool_call", "tool_output", "handoff")
"""the kinds of event a turn's ``RunResult`` holds (messages, tool calls and outputs,
handoffs), which its expectations are written from"""
_SLACK = 2.0
"""a recorded turn gets this many times as long as it took when run again"""


@dataclass
class _RecordedTurn:
    """One user turn of the call: what the user typed or said, and what followed."""

    said: str
    """the typed text, or what was heard of the speech"""
    audio: SpokenAudio | None
    began: float
    events: list[TraceEvent] = field(default_factory=list)
    heard_speech: bool = False
    """speech was heard where no audio was kept (a live microphone, or a trace alone)"""


class ScenarioSourceError(NotebookAgentsError, TypeError):
    """``to_scenario`` given something that is not a call: a runner or its ``Trace``."""


def to_scenario(
    call: Trace | AgentRunner,
    label: str,
    path: str | os.PathLike[str] = "scenarios.yaml",
) -> ScriptedScenario:
    """Write the conversation held so far on ``call`` (a runner, or its ``Trace``) as the
    scenario ``label`` of the scenarios file at ``path``, and return it as read back.

    Each user turn becomes a turn of the scenario (``user:`` the text typed; ``audio:`` a
    WAV file beside ``path`` for one spoken through the runner, named by the scenario's
    ``id`` and the turn's index), and what followed it becomes its ``expect:`` chain: each
    reply an assistant message, each tool call with its name and arguments, each tool output
    with whether it failed, each handoff with the class handed to (its name, or its dotted
    path when two classes of the call share one), then ``no_more_events()``. The agent's
    greeting, before the first turn, is not a turn (``run_suite`` checks turns only).

    The scenario gets a new stable ``id``, and goes at the end of the file, whose other text
    stays as it was (a file not there is made). Refused, writing nothing, with a
    ``SuiteFileError`` naming the fix: a label the file has already, a call with no turn yet
    or with a turn that went wrong (it would not pass), a spoken turn whose audio was not kept
    (a ``Trace`` alone, a live microphone), a file that cannot be read.
    """
    trace, spoken = _call(call)
    if not isinstance(label, str) or not label.strip():
        raise SuiteFileError(
            f"to_scenario needs a label, a short name for the scenario's result, not {label!r}"
        )
    turns = _turns(trace.events, spoken)
    if not turns:
        raise SuiteFileError(
            "the call has no user turn yet, and a scenario is the user's turns and what each "
            "gave: talk to the agent first (await runner.send_text('...'))"
        )
    for index, turn in enumerate(turns):
        _refuse_unreplayable(index, turn, trace is call)
    path = Path(path)
    if not path.parent.is_dir():
        raise SuiteFileError(
            f"{path}: there is no folder {path.parent} to write the scenarios file in: make "
            "it first, or give a path in a folder that is there"
        )
    existing = load_suite(path) if path.exists() else None  # a file unread is refused here
    taken = {s.id for s in existing.scenarios} if existing is not None else set()
    scenario_id = new_id("SCN_", taken)
    classes = _class_names(e for turn in turns for e in turn.events)
    written: list[Path] = []
    try:
        fields: dict[str, Any] = {"id": scenario_id, "label": label, "turns": []}
        for index, turn in enumerate(turns):
            said: dict[str, Any] = {}
            if turn.audio is not None:
                wav = path.parent / f"{scenario_id}.turn{index}.wav"
                with wav.open("xb") as file:  # never over a file already there
                    written.append(wav)
                    file.write(wav_bytes(turn.audio.samples, turn.audio.rate))
                said["audio"] = wav.name
                if turn.audio.line:  # played again through the line it was spoken through
                    said["conditions"] = turn.audio.line.to_records()
            else:
                said["user"] = turn.said
            said["expect"] = _expectations(turn.events, classes)
            timeout = math.ceil(_SLACK * _seconds(turn))
            if timeout > Turn.timeout:
                said["timeout"] = timeout
            fields["turns"].append(said)
        suite = append_scenario(path, fields)  # refuses a label taken: the WAVs go again
    except BaseException:
        for wav in written:
            with contextlib.suppress(OSError):
                wav.unlink()
        raise
    return suite[label]


def _call(call: object) -> tuple[Trace, list[SpokenAudio]]:
    """The call's trace, and the audio of its spoken turns where its runner kept it."""
    if isinstance(call, Trace):
        return call, []
    if isinstance(call, AgentRunner):
        return call.trace, list(getattr(call, "spoken", []))
    raise ScenarioSourceError(
        f"to_scenario takes the call's runner (NotebookRunner, AgentProcess, VideoSDKRunner) "
        f"or its Trace, not {type(call).__name__}"
    )


def _turns(events: Sequence[TraceEvent], spoken: Sequence[SpokenAudio]) -> list[_RecordedTurn]:
    """The user turns of the call, each with the events that followed it: a spoken turn
    from its audio's start (the words heard during it are its own), a typed one from its
    message."""
    waiting = sorted(spoken, key=lambda audio: audio.began)
    turns: list[_RecordedTurn] = []
    heard = False  # speech heard since the last turn began
    for event in events:
        while waiting and waiting[0].began <= event.t:
            audio = waiting.pop(0)
            turns.append(_RecordedTurn("", audio, audio.began))
            heard = False
        hearing = _spoken_at(turns, event.t)
        if event.kind == "user_message":
            if hearing is not None:  # the words of the turn being spoken
                hearing.said = " ".join(filter(None, [hearing.said, event.data["text"]]))
                continue
            turns.append(_RecordedTurn(event.data["text"], None, event.t, heard_speech=heard))
            heard = False
        elif event.kind == "user_transcript" or (
            event.kind == "user_state" and event.data["new"] == "speaking"
        ):
            heard = hearing is None
        elif turns and (event.kind in _CHECKED or event.kind == "error"):
            turns[-1].events.append(event)
    turns += [_RecordedTurn("", audio, audio.began) for audio in waiting]
    return turns


def _spoken_at(turns: list[_RecordedTurn], t: float) -> _RecordedTurn | None:
    """The last turn, if trace time ``t`` falls while its audio was spoken."""
    last = turns[-1] if turns else None
    if last is not None and last.audio is not None and t <= last.audio.ended:
        return last
    return None


def _refuse_unreplayable(index: int, turn: _RecordedTurn, trace_alone: bool) -> None:
    """Raise why ``turn`` cannot be written as one that passes when run, naming the fix."""
    what = f"turn {index} ({turn.said!r})"
    if turn.heard_speech:
        where = (
            "a Trace keeps no audio: pass the runner that spoke it, to_scenario(runner, ...), "
            "which keeps what send_audio() was given"
            if trace_alone
            else "the runner keeps the audio of send_audio()/run_audio() turns only, not a "
            "live microphone's (VoiceView, hear(), push-to-talk): speak the turn with "
            "send_audio() to record it"
        )
        raise SuiteFileError(f"{what} was spoken and its audio was not kept: {where}")
    for event in turn.events:
        if event.kind == "error" and fails_turn(event, spoken=turn.audio is not None):
            raise SuiteFileError(
                f"{what} went wrong ({event.data['message']}), so a scenario of it would not "
                "pass when run: record a call whose turns went right (to_scenario writes the "
                "whole call so far: start a new runner for it)"
            )


def _expectations(events: Iterable[TraceEvent], classes: dict[str, str]) -> list[str]:
    """A turn's events as livekit's ``RunResult.expect`` chain, in order, then the end."""
    chain = []
    for event in events:
        data = event.data
        if event.kind == "agent_message":
            chain.append('next_event().is_message(role="assistant")')
        elif event.kind == "tool_call":
            arguments = _arguments(data["arguments"])
            given = f", arguments={_literal(arguments)}" if arguments else ""
            chain.append(f"next_event().is_function_call(name={_literal(data['name'])}{given})")
        elif event.kind == "tool_output":
            chain.append(f"next_event().is_function_call_output(is_error={data['is_error']})")
        elif event.kind == "handoff" and data["from"] is not None:
            # a class this process does not hold (an agent in another process: livekit's
            # RunResult then holds a stand-in of no class of the user's) cannot be named
            to_class = data.get("to_class")
            named = ""
            if isinstance(to_class, str) and _held_here(to_class):
                named = f"new_agent_type={classes[to_class]}"
            chain.append(f"next_event().is_agent_handoff({named})")
    chain.append("no_more_events()")
    return chain


def _held_here(to_class: str) -> bool:
    """Whether the class ``module:qualname`` is one an imported module of this process holds,
    or one made in a function of such a module (read from the modules' dicts: nothing is
    imported)."""
    module, _, qualname = to_class.partition(":")
    held: Any = sys.modules.get(module)
    if held is not None and "<locals>" in qualname:
        return True
    for part in qualname.split("."):
        held = vars(held).get(part) if isinstance(held, ModuleType | type) else None
    return isinstance(held, type)


def _class_names(events: Iterable[TraceEvent]) -> dict[str, str]:
    """Each class the call handed off to (``module:qualname``, the trace's ``to_class``) as
    an expectation names it: its ``__name__``, as livekit's handoff gives it; its dotted path
    where another class of the call has the same name."""
    handed = {e.data["to_class"] for e in events if e.kind == "handoff" and e.data.get("to_class")}
    names = {to_class: to_class.rpartition(":")[2].rpartition(".")[2] for to_class in handed}
    written = {}
    for to_class, name in names.items():
        module, _, qualname = to_class.partition(":")
        shared = list(names.values()).count(name) > 1
        written[to_class] = f"{module}.{qualname}" if shared and "<" not in qualname else name
    return written


def _arguments(text: str) -> dict[str, Any]:
    """A tool call's arguments as the model sent them (JSON); {} if they are no JSON object
    (then the call is held to its name alone)."""
    try:
        arguments = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no literal an expectation can hold")


def _literal(value: Any) -> str:
    """``value`` (from JSON) as the Python literal an expectation holds: strings in double
    quotes, as livekit's examples write them."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    return repr(value)  # a number, True, False or None


def _seconds(turn: _RecordedTurn) -> float:
    """How long the turn took: to its last event, or its audio's end."""
    ends = [e.t for e in turn.events]
    if turn.audio is not None:
        ends.append(turn.audio.ended)
    return max(ends, default=turn.began) - turn.began
