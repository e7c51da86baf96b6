"""Trace analysis (engine side): lanes, state spans, handoffs, bring-ups and idle gaps, from a
list of events and from a real session's trace, the same whether fed at once or one by one."""

from __future__ import annotations

import importlib
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from notebook_agents.analysis import (
    BringUp,
    Gap,
    Span,
    Speech,
    TraceAnalysis,
    bring_ups,
    handoff_label,
    milliseconds,
)
from notebook_agents.trace import EventKind, Trace, TraceEvent
from tests.conftest import MakeModel
from tests.views.test_timeline_view import converse


def _state(seq: int, t: float, kind: EventKind, agent: str, old: str, new: str) -> TraceEvent:
    return TraceEvent(seq, t, kind, agent, {"old": old, "new": new})


def test_speech_spans_carry_their_words_and_how_long_the_caller_waited() -> None:
    """The user speaks, the agent answers 0.5 s after the user stopped, is spoken over; the
    agent handed to speaks 0.75 s after the caller stopped (0.25 s after the handoff), and
    again after a handoff no one asked for. Speech is listed as it ends."""
    reply = {"text": "You are A. Wait", "interrupted": True}
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        _state(1, 1.0, "user_state", "A", "listening", "speaking"),
        _state(2, 2.0, "user_state", "A", "speaking", "listening"),
        TraceEvent(3, 2.25, "user_transcript", "A", {"text": "hello", "final": True}),
        _state(4, 2.5, "agent_state", "A", "thinking", "speaking"),
        _state(5, 3.0, "user_state", "A", "listening", "speaking"),
        TraceEvent(6, 3.125, "agent_message", "A", reply),
        _state(7, 3.125, "agent_state", "A", "speaking", "listening"),
        _state(8, 3.5, "user_state", "A", "speaking", "listening"),
        TraceEvent(9, 3.625, "user_transcript", "A", {"text": "transfer", "final": False}),
        TraceEvent(10, 3.75, "user_transcript", "A", {"text": "transfer to b", "final": True}),
        TraceEvent(11, 4.0, "handoff", "B", {"from": "A", "to": "B"}),
        _state(12, 4.25, "agent_state", "B", "thinking", "speaking"),
        TraceEvent(13, 5.0, "agent_message", "B", {"text": "B here."}),
        _state(14, 5.25, "agent_state", "B", "speaking", "listening"),
        TraceEvent(15, 6.0, "handoff", "A", {"from": "B", "to": "A"}),
        _state(16, 6.5, "agent_state", "A", "listening", "speaking"),
        _state(17, 7.0, "agent_state", "A", "speaking", "listening"),
        _state(18, 8.0, "agent_state", "A", "listening", "speaking"),
        _state(19, 8.5, "agent_state", "A", "speaking", "listening"),
    ]
    assert TraceAnalysis(events).speech == [
        Speech("user", "A", 1.0, 2.0, "hello"),
        Speech("agent", "A", 2.5, 3.125, "You are A. Wait", 0.5, True, "speech"),
        Speech("user", "A", 3.0, 3.5, "transfer to b"),
        Speech("agent", "B", 4.25, 5.25, "B here.", 0.75, answers="speech"),
        Speech("agent", "A", 6.5, 7.0, "", 0.5, answers="handoff"),
        Speech("agent", "A", 8.0, 8.5),  # unprompted
    ]


Row = tuple[float, EventKind, dict[str, Any]]


def _recorded(rows: list[Row]) -> list[TraceEvent]:
    """Events as a real session recorded them (times, kinds and the fields speech reads)."""
    return [TraceEvent(seq, t, kind, "A", data) for seq, (t, kind, data) in enumerate(rows)]


def _said(t: float, text: str, interrupted: bool = False) -> Row:
    return t, "agent_message", {"text": text, "interrupted": interrupted}


def _went(t: float, kind: EventKind, old: str, new: str) -> Row:
    return t, kind, {"old": old, "new": new}


# a realtime voice agent spoken over (test_runner_voice's barge-in, as one run recorded it):
# the caller's "thank you" cuts the reply short and is answered 28 ms after it ended
BARGE_IN: list[Row] = [
    _went(0.706, "user_state", "listening", "speaking"),
    _went(2.578, "user_state", "speaking", "listening"),
    (2.616, "user_transcript", {"text": "hello there", "final": True}),
    (2.617, "user_message", {"text": "hello there"}),
    _went(2.677, "agent_state", "listening", "speaking"),
    _went(3.871, "user_state", "listening", "speaking"),
    _went(3.881, "agent_state", "speaking", "listening"),
    _said(3.882, "You are the", interrupted=True),
    _went(4.883, "user_state", "speaking", "listening"),
    (4.901, "user_transcript", {"text": "thank you", "final": True}),
    (4.901, "user_message", {"text": "thank you"}),
    _went(4.911, "agent_state", "listening", "speaking"),
    _went(7.709, "agent_state", "speaking", "listening"),
    _said(7.709, 'You are the Concierge. You said: "thank you".'),
]
# a cascaded voice agent talked over (silero's VAD): the caller speaks over the end of the
# reply, which goes on uncut; livekit takes no turn from it (no transcript)
TALK_OVER: list[Row] = [
    _went(1.342, "user_state", "listening", "speaking"),
    _went(2.559, "user_state", "speaking", "listening"),
    (3.289, "user_transcript", {"text": "hello there", "final": True}),
    (4.486, "user_message", {"text": "hello there"}),
    _went(4.486, "agent_state", "listening", "thinking"),
    _went(4.518, "agent_state", "thinking", "speaking"),
    _went(5.835, "user_state", "listening", "speaking"),
    _said(7.141, 'You are the Concierge. You said: "hello there".'),
    _went(7.141, "agent_state", "speaking", "listening"),
    _went(7.815, "user_state", "speaking", "listening"),
]


# the same spoken over with livekit's false-interruption pause (cascaded, no echo warm-up):
# the caller's noise pauses the reply, nothing is heard in it, and the reply resumes 2 s later
FALSE_INTERRUPTION: list[Row] = [
    _went(0.835, "user_state", "listening", "speaking"),
    _went(2.055, "user_state", "speaking", "listening"),
    (3.474, "user_transcript", {"text": "hello there", "final": True}),
    (3.981, "user_message", {"text": "hello there"}),
    _went(3.982, "agent_state", "listening", "thinking"),
    _went(4.103, "agent_state", "thinking", "speaking"),
    _went(5.468, "user_state", "listening", "speaking"),
    _went(5.915, "agent_state", "speaking", "listening"),
    _went(6.631, "user_state", "speaking", "listening"),
    _went(8.639, "agent_state", "listening", "speaking"),
    _said(9.454, 'You are the Concierge. You said: "hello there".'),
    _went(9.454, "agent_state", "speaking", "listening"),
]


def test_a_reply_resumed_after_a_false_interruption_answers_nothing() -> None:
    paused, resumed = [
        s for s in TraceAnalysis(_recorded(FALSE_INTERRUPTION)).speech if s.speaker == "agent"
    ]
    assert round(paused.first_audio_s or 0, 3) == 2.048  # from the end of "hello there"
    assert resumed.first_audio_s is None  # not an answer to the noise that paused it
    assert resumed.text.endswith('You said: "hello there".')


def test_after_a_barge_in_the_caller_waits_from_the_end_of_the_speech_that_cut_in() -> None:
    """Then the agent speaks again on its own (a ``say`` from a background task, 20 s on):
    unprompted, nothing carried over."""
    later: list[Row] = [
        _went(27.0, "agent_state", "listening", "speaking"),
        _went(28.0, "agent_state", "speaking", "listening"),
    ]
    agent = [s for s in TraceAnalysis(_recorded(BARGE_IN + later)).speech if s.speaker == "agent"]
    waits = [round(s.first_audio_s, 3) if s.first_audio_s is not None else None for s in agent]
    assert waits == [0.099, 0.028, None]  # from "hello there", from "thank you", unprompted
    assert [s.interrupted for s in agent] == [True, False, False]


# a realtime model answering before the session's own VAD (silero, 1.5 s of silence) ends the
# caller's speech (test_runner_voice's, as one run recorded it, on a clock started at 1000.0):
# "hello there" is answered, "thank you" cuts the answer short and is answered in turn
OVERLAPPED: list[Row] = [
    _went(0.842, "user_state", "listening", "speaking"),
    (2.727, "user_transcript", {"text": "hello there", "final": True}),
    (2.727, "user_message", {"text": "hello there", "metrics": {"started_speaking_at": 1000.8}}),
    _went(2.775, "agent_state", "listening", "speaking"),
    _went(3.457, "user_state", "speaking", "listening"),
    _went(4.039, "user_state", "listening", "speaking"),
    _went(4.08, "agent_state", "speaking", "listening"),
    (4.08, "agent_message", {"text": "You are the Concierge.", "interrupted": True,
                             "metrics": {"e2e_latency": 1.225, "started_speaking_at": 1002.745}}),
    (5.017, "user_transcript", {"text": "thank you", "final": True}),
    (5.017, "user_message", {"text": "thank you", "metrics": {"started_speaking_at": 1004.0}}),
    _went(5.039, "agent_state", "listening", "speaking"),
    _went(6.134, "user_state", "speaking", "listening"),
    _went(7.837, "agent_state", "speaking", "listening"),
    (7.837, "agent_message", {"text": 'You are the Concierge. You said: "thank you".',
                              "metrics": {"e2e_latency": 0.438, "started_speaking_at": 1005.038}}),
]  # fmt: skip


def _without_agent_metrics(rows: list[Row]) -> list[Row]:
    return [
        (t, kind, {k: v for k, v in data.items() if k != "metrics"} if kind == "agent_message"
         else data)
        for t, kind, data in rows
    ]  # fmt: skip


def _waits(speech: list[Speech]) -> list[float | None]:
    return [
        round(s.first_audio_s, 3) if s.first_audio_s is not None else None
        for s in speech
        if s.speaker == "agent"
    ]


def test_a_reply_begun_before_livekits_vad_ended_the_callers_speech_is_waited_for() -> None:
    """livekit's e2e_latency on the reply says where its VAD put the end of the speech: the
    caller's speech ends there and the wait counts from it; without the trace's clock the wait
    is livekit's figure; without livekit's figures the reply came, as far as the trace knows,
    while the caller spoke: 0.0."""
    speech = TraceAnalysis(_recorded(OVERLAPPED), started_at=1000.0).speech
    assert _waits(speech) == [1.255, 0.439]
    assert [round(s.end, 3) for s in speech if s.speaker == "user"] == [1.52, 4.6]
    assert all(s.overlapped and s.answers == "speech" for s in speech if s.speaker == "agent")
    assert _waits(TraceAnalysis(_recorded(OVERLAPPED)).speech) == [1.225, 0.438]
    unmeasured = TraceAnalysis(_recorded(_without_agent_metrics(OVERLAPPED)), started_at=1000.0)
    assert _waits(unmeasured.speech) == [0.0, 0.0]
    assert [s.end for s in unmeasured.speech if s.speaker == "user"] == [3.457, 6.134]


def test_an_agent_speaking_over_the_caller_unasked_answers_nothing() -> None:
    """No turn was taken from the caller's speech and livekit counted no wait: the agent spoke
    on its own (a ``say`` from a background task) over the caller."""
    rows: list[Row] = [
        _went(1.0, "user_state", "listening", "speaking"),
        _went(1.5, "agent_state", "listening", "speaking"),
        _went(2.5, "user_state", "speaking", "listening"),
        _said(3.0, "Still there?"),
        _went(3.0, "agent_state", "speaking", "listening"),
    ]
    (said,) = [
        s for s in TraceAnalysis(_recorded(rows), started_at=1000.0).speech if s.speaker == "agent"
    ]
    assert (said.first_audio_s, said.answers, said.overlapped) == (None, None, False)


def test_talking_over_an_agent_that_goes_on_prompts_nothing_later() -> None:
    """The talk-over ended after the reply: a reply spoken later on the agent's own (20 s on)
    is unprompted, and an agent handed to unasked is waited for from its handoff."""
    speaks: list[Row] = [
        _went(27.25, "agent_state", "listening", "speaking"),
        _went(28.0, "agent_state", "speaking", "listening"),
    ]
    handed: list[Row] = [(27.0, "handoff", {"from": "A", "to": "B"})]
    for after, wait in ((speaks, None), (handed + speaks, 0.25)):
        said = TraceAnalysis(_recorded(TALK_OVER + after)).speech
        first, later = [s for s in said if s.speaker == "agent"]
        assert round(first.first_audio_s or 0, 3) == 1.959  # from the end of "hello there"
        assert later.first_audio_s == wait


def test_state_spans_follow_the_session_state_across_a_handoff() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_state", "A", {"old": "initializing", "new": "listening"}),
        TraceEvent(2, 0.5, "agent_state", "A", {"old": "listening", "new": "thinking"}),
        TraceEvent(3, 0.6, "handoff", "B", {"from": "A", "to": "B"}),
        TraceEvent(4, 0.9, "agent_state", "B", {"old": "thinking", "new": "speaking"}),
        TraceEvent(5, 1.2, "closed", None, {}),
    ]
    analysis = TraceAnalysis(events)
    assert analysis.lanes == ["A", "B"]
    assert analysis.state_spans() == [
        Span("A", 0.0, 0.1, "initializing"),
        Span("A", 0.1, 0.5, "listening"),
        Span("A", 0.5, 0.6, "thinking"),
        Span("B", 0.6, 0.9, "thinking"),  # B starts in the state the session was in
        Span("B", 0.9, 1.2, "speaking"),  # until the session closed
    ]
    assert analysis.open_span is None


def test_a_loaded_trace_without_its_close_ends_its_last_span_at_its_last_event() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_state", "A", {"old": "initializing", "new": "listening"}),
        TraceEvent(2, 0.7, "user_message", "A", {"text": "hi"}),
    ]
    analysis = TraceAnalysis(events)
    assert analysis.open_span == Span("A", 0.1, 0.7, "listening")
    assert analysis.state_spans()[-1] == Span("A", 0.1, 0.7, "listening")


def test_a_bring_up_runs_from_the_handoff_to_the_new_agents_first_words() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_message", "A", {"text": "hi"}),  # the first agent: no bring-up
        TraceEvent(
            2,
            0.5,
            "handoff",
            "B",
            {"from": "A", "to": "B", "session": "reused", "context": "copied"},
        ),
        TraceEvent(3, 0.55, "agent_message", "A", {"text": "goodbye"}),  # A's on_exit: not B's
        TraceEvent(4, 0.8, "agent_message", "B", {"text": "B here"}),
        TraceEvent(5, 0.9, "agent_message", "B", {"text": "again"}),  # only the first words
        TraceEvent(
            6, 1.0, "handoff", "A", {"from": "B", "to": "A", "session": "fresh", "context": "own"}
        ),
        TraceEvent(7, 1.1, "agent_state", "A", {"old": "listening", "new": "thinking"}),
        TraceEvent(8, 1.3, "agent_state", "A", {"old": "thinking", "new": "speaking"}),
        TraceEvent(9, 2.0, "agent_message", "A", {"text": "A again"}),  # said once spoken
        TraceEvent(10, 2.2, "handoff", "B", {"from": "A", "to": "B"}),
        TraceEvent(11, 2.5, "closed", None, {}),  # B never spoke: none
    ]
    found = bring_ups(events)
    assert [(b.agent, b.start, b.end) for b in found] == [("B", 0.5, 0.8), ("A", 1.0, 1.3)]
    assert [b.handoff.seq for b in found] == [2, 6]
    assert [(b.handoff.mode, b.handoff.label) for b in found] == [
        ("reused+copied", "reused · copied"),
        ("fresh+own", "fresh · own"),
    ]
    assert round(found[0].seconds, 9) == 0.3
    assert (milliseconds(0.3), milliseconds(0.0042)) == ("300 ms", "4.2 ms")


def test_handoffs_are_labelled_in_the_benchs_vocabulary() -> None:
    assert handoff_label({"session": "reused", "context": "empty"}) == "reused · empty"
    # no realtime session: a cascaded pipeline, as the bench names it
    assert handoff_label({"session": "none", "context": "copied"}) == "cascaded · copied"
    assert handoff_label({"from": None, "to": "A", "session": None, "context": None}) == ""


def test_idle_gaps_are_the_quiet_stretches_spent_waiting_on_the_caller() -> None:
    events = [
        TraceEvent(0, 1.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 1.2, "agent_state", "A", {"old": "initializing", "new": "listening"}),
        TraceEvent(2, 1.5, "metrics", "A", {}),  # any event counts: the session was busy
        TraceEvent(3, 4.4, "user_state", "A", {"old": "listening", "new": "speaking"}),
        TraceEvent(4, 40.0, "user_message", "A", {"text": "back"}),
        TraceEvent(5, 40.5, "agent_state", "A", {"old": "listening", "new": "thinking"}),
        # 5.5 s thinking without a word: the model being slow, not the caller away
        TraceEvent(6, 46.0, "agent_message", "A", {"text": "sorry, that took a while"}),
        TraceEvent(7, 47.0, "closed", None, {}),
    ]
    analysis = TraceAnalysis(events)
    assert (analysis.start, analysis.end) == (1.0, 47.0)
    assert analysis.gaps == [Gap(4.4, 40.0)]  # 2.9 s is not idle, 35.6 s listening is
    assert TraceAnalysis(events, idle_after=2.0).gaps == [Gap(1.5, 4.4), Gap(4.4, 40.0)]


async def test_a_real_sessions_trace_reads_the_same_live_and_loaded(
    models: MakeModel, tmp_path: Path
) -> None:
    trace = Trace()
    live = TraceAnalysis()
    trace.subscribe(live.add)  # one event at a time, as they are recorded
    await converse(models, trace)
    loaded = TraceAnalysis(Trace.load(trace.save(tmp_path / "trace.jsonl")).events)
    assert live.lanes == loaded.lanes == ["Alice", "Bob"]
    assert live.state_spans() == loaded.state_spans()
    assert live.handoffs == loaded.handoffs
    assert [(h.source, h.target, h.label) for h in loaded.handoffs] == [
        (None, "Alice", ""),
        ("Alice", "Bob", "reused · copied"),
        ("Bob", "Alice", "reused · own"),
    ]
    assert live.bring_ups == loaded.bring_ups
    # each agent handed to spoke: its bring-up ends at its first words, after the handoff
    assert [b.agent for b in loaded.bring_ups] == ["Bob", "Alice"]
    assert all(isinstance(b, BringUp) and b.seconds > 0 for b in loaded.bring_ups)
    # the spans tile the session: each starts where the one before it ended
    spans = loaded.state_spans()
    assert all(a.end == b.start for a, b in pairwise(spans))
    assert spans[-1].end == trace.of_kind("closed")[0].t


def test_the_old_phases_path_still_works_and_warns_naming_the_new_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 31: the phases joined the analysis package; ``notebook_agents.phases`` (and its
    submodules) keep working for one release, with a warning that says what to import."""
    import notebook_agents.analysis as analysis

    for name in [n for n in sys.modules if n.startswith("notebook_agents.phases")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.warns(DeprecationWarning, match=r"use notebook_agents\.analysis") as seen:
        import notebook_agents.phases as old
    assert seen[0].filename == __file__  # it names the import, not importlib's machinery
    assert old.turn_phases is analysis.turn_phases and old.Breakdown is analysis.Breakdown
    names = importlib.import_module("notebook_agents.phases.names")
    assert names.PHASE_COLORS is analysis.phases.names.PHASE_COLORS
