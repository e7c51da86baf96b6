"""Every turn's wait split into phases (``turn_phases``), on real parts: the runner, the
emulator, livekit's own pipeline (silero's VAD, its turn detector, the OpenAI plugins). Each
phase sits where livekit's spans and the trace's events put it; the critical ones add up to
the wait; the caller's wait is the same figure in ``TraceAnalysis.speech`` and in the
breakdown, and it is reconciled with livekit's ``lk.e2e_latency``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    JobContext,
    TurnHandlingOptions,
    function_tool,
    inference,
)
from livekit.plugins import openai, silero

from notebook_agents import NotebookRunner, TraceAnalysis
from notebook_agents.analysis import Breakdown, Phase, turn_phases
from notebook_agents.analysis.phases.table import UNEXPLAINED, WAIT
from notebook_agents.analysis.phases.turns import TOLERANCE
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from notebook_agents.trace import Trace, TraceEvent, TraceSpan
from notebook_agents.views import TimelineView
from tests.conftest import API_KEY, started
from tests.handoff_agents import Concierge
from tests.runner.test_runner import production_server
from tests.runner.test_runner_voice import realtime_voice_server, voice_server
from tests.trace.test_trace_spans import cascaded_server
from tests.upstream import greeter_weather

SAME_MOMENT = 0.02
"""two records of one moment (a span's end and the event livekit emits right after it) are
apart by the code between them, which a loaded machine stretches: the issue's 20 ms"""


def spoken_trace(
    server: AgentServer, *words: str, greeting: bool = False, typed: str | None = None
) -> Trace:
    """The trace of a runner that took each of ``words`` spoken (after its greeting, if
    ``greeting``), then ``typed`` if given, on a loop of its own."""

    async def run() -> Trace:
        runner = NotebookRunner(server, audio=True)
        runner.start()
        try:
            await runner.ready()
            if greeting:
                await runner.greeting()
            for said in words:
                await runner.send_audio(synthesize(said))
            if typed is not None:
                await runner.send_text(typed)
        finally:
            runner.stop()
        return runner.trace

    with pytest.MonkeyPatch.context() as env:
        for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
            env.delenv(name, raising=False)
        return asyncio.run(run())


@pytest.fixture(scope="module")
def spoken() -> Iterator[Trace]:
    """The issue's spoken "what is two plus three" to the cascaded Concierge, offline, with
    livekit's turn detector unsure the caller finished, as it was there (probability ~0.32
    under its 0.36): pinned, because run to run the probability lands on either side."""
    unsure: TurnHandlingOptions = {
        "turn_detection": inference.TurnDetector(unlikely_threshold=0.99),
        "endpointing": {"max_delay": HELD_S},
    }
    with Emulator() as emulator:
        yield spoken_trace(
            voice_server(emulator, turn_handling=unsure),
            "what is two plus three",
        )


class Pharmacy(Agent):
    """Issue 30's pharmacy agent: a tool the caller asks for by voice. It greets first, as a
    caller's agent does: a cascaded session's STT listens in what its LLM was offered (the
    emulator's vocabulary), which the greeting offers the tool."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the Pharmacy. You refill prescriptions.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def refill_prescription(self, medication: str, quantity: int) -> str:
        """Refill the caller's prescription."""
        return f"{quantity} {medication} refilled"


HELD_S = 5.0
"""livekit's endpointing max_delay for the unsure turns: the issue's 2.5 s default, made longer
so that the offline transcript (~1.5 s; 2.9-4.6 s seen on a machine loaded 6x its cores) and the
preemptive reply come before the end of turn, as they did in the issue"""


def pharmacy_server(emulator: Emulator, *, preemptive_tts: bool = False) -> AgentServer:
    """The cascaded Pharmacy, livekit's turn detector unsure the caller finished (as it was in
    the issue: livekit then waits its endpointing max_delay, ``HELD_S`` here), its reply made
    preemptively (livekit's default), with its TTS too if ``preemptive_tts``."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            vad=silero.VAD.load(),
            stt=openai.STT(base_url=emulator.base_url(), api_key=API_KEY),
            llm=openai.LLM(base_url=emulator.base_url(), api_key=API_KEY),
            tts=openai.TTS(base_url=emulator.base_url(), api_key=API_KEY),
            turn_handling={
                "turn_detection": inference.TurnDetector(unlikely_threshold=0.99),
                "endpointing": {"max_delay": HELD_S},
                "preemptive_generation": {"preemptive_tts": preemptive_tts},
            },
        )
        await session.start(agent=Pharmacy(), room=ctx.room)

    return server


def pharmacy_trace(emulator: Emulator, *words: str, preemptive_tts: bool = False) -> Trace:
    """The trace of the Pharmacy's greeting, then each of ``words`` spoken, then the tool
    asked for by typing."""
    return spoken_trace(
        pharmacy_server(emulator, preemptive_tts=preemptive_tts),
        *words,
        greeting=True,
        typed="refill prescription medication=aspirin quantity=30",
    )


@pytest.fixture(scope="module")
def pharmacy() -> Iterator[Trace]:
    """Issue 30's spoken "refill prescription medication aspirin quantity thirty", answered by
    a tool the model called while the caller was still being heard, then the same typed."""
    with Emulator() as emulator:
        yield pharmacy_trace(emulator, "refill prescription medication aspirin quantity thirty")


def only(trace: Trace, name: str) -> TraceSpan:
    (span,) = [s for s in trace.spans if s.name == name]
    return span


def first(trace: Trace, name: str) -> TraceSpan:
    return next(s for s in trace.spans if s.name == name)


def phase(breakdown: Breakdown, name: str) -> Phase:
    (found,) = [p for p in breakdown.phases if p.name == name]
    return found


def speaking(trace: Trace) -> TraceEvent:
    return next(e for e in trace.of_kind("agent_state") if e.data["new"] == "speaking")


def clock(trace: Trace, unix: float) -> float:
    return unix - trace.started_at


def assert_critical_phases_fill_the_wait(b: Breakdown) -> None:
    """The critical phases follow one another from the wait's start to its end, and add up
    to the wait within 20 ms (either way: two clocks may put one moment a little apart)."""
    critical = [p for p in b.phases if p.critical]
    assert critical[0].start == pytest.approx(b.start, abs=SAME_MOMENT)
    assert critical[-1].end == pytest.approx(b.end, abs=SAME_MOMENT)
    for before, after in pairwise(critical):
        assert after.start >= before.end - SAME_MOMENT
    assert abs(b.unexplained) < 0.02


@pytest.mark.slow
def test_a_spoken_turns_phases_add_up_to_its_wait_each_where_livekit_put_it(
    spoken: Trace, tmp_path: Path
) -> None:
    (b,) = turn_phases(spoken)
    (heard,) = spoken.of_kind("user_message")
    metrics = heard.data["metrics"]
    assert (b.kind, b.label, b.agent, b.spoken) == ("turn", "turn 1 · spoken", "Concierge", True)
    # the wait: from the end of speech, as livekit's VAD placed it, to the first audio out
    assert b.start == clock(spoken, metrics["stopped_speaking_at"])
    assert b.end == speaking(spoken).t
    assert_critical_phases_fill_the_wait(b)
    assert b.speech_id == only(spoken, "agent_turn").attributes["lk.speech_id"]

    vad = phase(b, "vad_end_of_speech")  # the VAD said so once its silence had passed
    (stopped,) = [e for e in spoken.of_kind("user_state") if e.data["new"] == "listening"]
    assert (vad.start, vad.end) == (b.start, stopped.t)
    assert "min_silence_duration" in vad.note
    transcript = phase(b, "final_transcript")
    (final,) = [e for e in spoken.of_kind("user_transcript") if e.data["final"]]
    assert transcript.end == final.t
    assert transcript.livekit == only(spoken, "user_turn").attributes["lk.transcription_delay"]
    detection = only(spoken, "eou_detection")
    eou = phase(b, "eou_detection")
    assert (eou.start, eou.end) == (detection.start, detection.end)

    # the end of turn is livekit's endpointing delay, its maximum: the turn detector was
    # unsure the caller had finished
    end_of_turn = phase(b, "end_of_turn")
    wait = only(spoken, "eou_wait")
    assert end_of_turn.critical and (end_of_turn.start, end_of_turn.end) == (b.start, wait.end)
    assert end_of_turn.livekit == metrics["end_of_turn_delay"]
    probability = detection.attributes["lk.eou.probability"]
    assert probability < detection.attributes["lk.eou.unlikely_threshold"]
    assert wait.attributes["lk.eou.endpointing_delay"] == HELD_S
    assert end_of_turn.seconds == pytest.approx(HELD_S, abs=0.02)
    assert end_of_turn.seconds > 0.9 * b.wait
    assert f"probability {probability:.2f}" in end_of_turn.note
    assert "max_delay" in end_of_turn.note and "turn_handling" in end_of_turn.note
    # what ran beside it: the VAD, the transcript, the detection, the preemptive LLM request
    assert not any(
        phase(b, name).critical
        for name in ("vad_end_of_speech", "final_transcript", "eou_detection", "llm_first_token")
    )

    llm = phase(b, "llm_first_token")
    node = only(spoken, "llm_node")
    assert llm.start == node.start and llm.livekit == node.attributes["lk.response.ttft"]
    assert llm.seconds == pytest.approx(llm.livekit)
    tts = phase(b, "tts_first_byte")
    request = first(spoken, "tts_request")
    assert tts.critical and tts.start == request.start
    assert tts.livekit == only(spoken, "tts_node").attributes["lk.response.ttfb"]
    out = phase(b, "first_audio")
    assert out.critical and (out.start, out.end) == (tts.end, b.end)

    loaded = Trace.load(spoken.save(tmp_path / "spoken.jsonl"))
    assert turn_phases(loaded) == [b]


@pytest.mark.slow
def test_the_callers_wait_is_one_figure_reconciled_with_livekits_e2e_latency(
    spoken: Trace, tmp_path: Path
) -> None:
    """Issue 22: ``TraceAnalysis.speech`` said the caller waited ~1945 ms while livekit's
    e2e_latency said 2.52 s. The first counted from the VAD's end-of-speech event, the second
    from the end of speech that event reports: the VAD's silence apart."""
    (b,) = turn_phases(spoken)
    (said,) = spoken.of_kind("agent_message")
    e2e = said.data["metrics"]["e2e_latency"]
    assert b.attributes["lk.e2e_latency"] == e2e
    # one start; livekit stamps the first frame, the trace records the state it then sets
    began = clock(spoken, said.data["metrics"]["started_speaking_at"])
    assert b.wait - e2e == pytest.approx(b.end - began, abs=1e-9)
    assert 0 <= b.end - began < SAME_MOMENT

    user, agent = TraceAnalysis.of(spoken).speech
    assert (agent.answers, agent.first_audio_s) == ("speech", b.wait)
    assert user.end == b.start  # the caller stopped where livekit says they did
    # the timeline says the same of a saved trace
    view = TimelineView(Trace.load(spoken.save(tmp_path / "spoken.jsonl")))
    assert view.analysis.speech[1].first_audio_s == pytest.approx(b.wait, abs=1e-9)
    # issue 31: TraceAnalysis(trace.events) counted from the VAD's event: a trace's events
    # carry its clock and spans now, so every door to a trace's analysis gives the same wait
    for door in (TraceAnalysis(spoken), TraceAnalysis(spoken.events)):
        assert door.speech == TraceAnalysis.of(spoken).speech
        assert door.turns() == [b] == turn_phases(spoken)
    # events with no clock (a bare list): the speech ends at the VAD's event, the wait lacks
    # the silence
    _, late = TraceAnalysis(list(spoken.events)).speech
    assert late.first_audio_s == pytest.approx(b.wait - phase(b, "vad_end_of_speech").seconds)


@pytest.mark.slow
def test_the_table_has_a_row_per_phase_per_turn_and_the_wait_beside_livekits(
    spoken: Trace,
) -> None:
    analysis = TraceAnalysis.of(spoken)
    (b,) = analysis.turns()
    live = TraceAnalysis(started_at=spoken.started_at)  # as a view takes them, one by one
    for event in spoken.events:
        live.add(event)
    for span in spoken.spans:
        live.add_span(span)
    assert live.turns() == [b] == turn_phases(spoken)
    rows = analysis.phase_rows()
    assert [r.phase for r in rows] == [WAIT, *(p.name for p in b.phases), UNEXPLAINED]
    wait, *phases, rest = rows
    assert (wait.label, wait.ms, wait.livekit_ms) == (
        "turn 1 · spoken",
        b.wait * 1000,
        b.attributes["lk.e2e_latency"] * 1000,
    )
    assert "e2e_latency" in wait.note and rest.ms == b.unexplained * 1000
    assert [(r.start, r.ms, r.critical, r.note) for r in phases] == [
        (p.start, p.seconds * 1000, p.critical, p.note) for p in b.phases
    ]
    table = analysis.phase_table()
    text, html = str(table), table._repr_html_()
    assert "end_of_turn" in text and "(final_transcript)" in text and "livekit ms" in text
    assert "<table" in html and "max_delay" in html
    assert "truth ms" not in text  # no truth for a turn: the column is left out


def endpointing_server(emulator: Emulator, delay: float) -> AgentServer:
    """The cascaded Concierge with the endpointing delay the note says to set (both: livekit
    takes the max after an unsure end-of-turn detection, the min after a sure one)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            vad=silero.VAD.load(),
            stt=openai.STT(base_url=emulator.base_url(), api_key=API_KEY),
            llm=openai.LLM(base_url=emulator.base_url(), api_key=API_KEY),
            tts=openai.TTS(base_url=emulator.base_url(), api_key=API_KEY),
            turn_handling={"endpointing": {"min_delay": delay, "max_delay": delay}},
        )
        await session.start(agent=Concierge(), room=ctx.room)

    return server


@pytest.mark.slow
def test_the_end_of_turn_notes_advice_changes_it() -> None:
    """The endpointing delay set as the note says: livekit waits it, and the end of turn takes
    it (4 s: longer than the offline transcript takes, even loaded, so still what the caller
    waits on)."""
    with Emulator() as emulator:
        trace = spoken_trace(endpointing_server(emulator, 4.0), "what is two plus three")
    (b,) = turn_phases(trace)
    end_of_turn = phase(b, "end_of_turn")
    wait = only(trace, "eou_wait")
    assert wait.attributes["lk.eou.endpointing_delay"] == 4.0
    assert end_of_turn.critical and "delay (4.00 s)" in end_of_turn.note
    assert (end_of_turn.start, end_of_turn.end) == (b.start, wait.end)
    assert end_of_turn.seconds > 4.0 - SAME_MOMENT  # livekit waits at least its delay
    assert_critical_phases_fill_the_wait(b)


def assert_end_of_turn_then_the_reply(b: Breakdown, trace: Trace) -> None:
    """The caller waited on livekit's end of turn, then on the reply: the end of turn from the
    wait's start to livekit's commit, every other critical phase after it (what the reply made
    while the caller spoke ran beside the end of turn)."""
    (wait,) = [s for s in trace.spans if s.name == "eou_wait" and b.start < s.end < b.end]
    critical = [p for p in b.phases if p.critical]
    assert (critical[0].name, critical[0].start, critical[0].end) == (
        "end_of_turn",
        b.start,
        wait.end,
    )
    assert all(p.start >= wait.end - TOLERANCE for p in critical[1:]), critical
    assert_critical_phases_fill_the_wait(b)


@pytest.mark.slow
def test_a_spoken_turn_answered_by_a_tool_waits_on_the_end_of_turn_not_the_model(
    pharmacy: Trace,
) -> None:
    """Issue 30: the model called the tool while the caller was still being heard (livekit's
    preemptive generation, its turn detector unsure), and livekit ran the tool only once the
    turn ended: the seconds the caller waited are livekit's end of turn, not the model's
    (``llm_tool_call`` had taken them from the model's request on, the end of turn shown as
    parallel)."""
    spoken, typed = turn_phases(pharmacy)
    (call, *_) = pharmacy.of_kind("tool_call")
    assert call.data["name"] == "refill_prescription"
    assert_end_of_turn_then_the_reply(spoken, pharmacy)
    end_of_turn = phase(spoken, "end_of_turn")
    assert end_of_turn.seconds == pytest.approx(HELD_S, abs=0.02)
    assert "max_delay" in end_of_turn.note
    # the model's round that called the tool ran beside the end of turn, as livekit timed it
    tool = first(pharmacy, "function_tool")
    # the last round begun before the tool ran is the one that called it (one begun on the
    # transcript so far and superseded ends first); not the first begun after the speech's
    # end: under load livekit's VAD ends the speech late, after that round had begun
    round_ = max(
        (s for s in pharmacy.spans if s.name == "llm_node" and s.start < tool.start),
        key=lambda s: s.start,
    )
    assert round_.end < end_of_turn.end < tool.start, "the model answered before the end of turn"
    # (the end-of-turn detection may begin inside it too, on a loaded machine: it is the
    # model's phases that are asked about)
    made = [
        p
        for p in spoken.phases
        if round_.start <= p.start < round_.end and p.name.startswith("llm_")
    ]
    assert {p.name for p in made} == {"llm_first_token", "llm_response"}
    assert not any(p.critical for p in made)
    (token,) = [p for p in made if p.name == "llm_first_token"]
    assert token.livekit == round_.attributes["lk.response.ttft"]
    # then livekit scheduled the reply, ran the tool, and the model answered its output
    critical = [p for p in spoken.phases if p.critical]
    names = [p.name for p in critical]
    # (livekit's on_user_turn_completed hook may sit before or after it, on a loaded
    # machine; or take up the whole stretch, the scheduling then too short to be a phase)
    between = critical[names.index("end_of_turn") + 1 : names.index("tool")]
    assert sorted(p.name for p in between) in (
        ["reply_start"],
        ["on_user_turn_completed", "reply_start"],
        ["on_user_turn_completed"],
    )
    assert all("preemptive" in p.note for p in between if p.name == "reply_start")
    assert phase(spoken, "tool").note == "refill_prescription()"
    answer = names[names.index("tool") + 1 :]  # the tool's output to the model, its answer
    assert answer[:2] == ["tool_output", "llm_first_token"]
    assert answer[-2:] == ["tts_first_byte", "first_audio"]

    # typed, nothing holds the tool: the caller waited on the model's round up to the call
    typed_tool = [s for s in pharmacy.spans if s.name == "function_tool"][-1]
    calling = [s for s in pharmacy.spans if s.name == "llm_node" and typed.start <= s.start]
    tool_call = phase(typed, "llm_tool_call")
    assert (tool_call.start, tool_call.end) == (calling[0].start, typed_tool.start)
    # then the model answered the tool's output, once the tool and its stream were over
    # (whichever came last is on the path)
    names = [p.name for p in typed.phases if p.critical]
    assert names[0] == "reply_start" and names[names.index("tool_output") - 1] in (
        "tool",
        "llm_response",
        "llm_tool_call",
    )
    assert names[names.index("tool_output") + 1] == "llm_first_token"
    assert_critical_phases_fill_the_wait(typed)


@pytest.mark.slow
def test_the_first_audio_waits_on_the_tts_not_on_a_reply_whose_text_ended_as_it_came(
    pharmacy: Trace, tmp_path: Path
) -> None:
    """The reply's first audio waits on its first byte from the TTS, however the model's whole
    reply ended in the same millisecond (as it did in a loaded CI run, which blamed
    ``llm_response``: the later-ending of two simultaneous steps was taken for the cause)."""
    spoken, _ = turn_phases(pharmacy)
    first_byte = phase(spoken, "tts_first_byte")
    answer = [s for s in pharmacy.spans if s.name == "llm_node" and s.start < first_byte.start]
    saved = pharmacy.save(tmp_path / "pharmacy.jsonl")
    lines = saved.read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("span", {}).get("span_id") == answer[-1].span_id:
            record["span"]["end"] = first_byte.end + TOLERANCE / 2  # the same moment
            lines[i] = json.dumps(record)
    saved.write_text("\n".join(lines) + "\n")
    (moved, _) = turn_phases(Trace.load(saved))
    names = [p.name for p in moved.phases if p.critical]
    assert names[-2:] == ["tts_first_byte", "first_audio"]
    assert_critical_phases_fill_the_wait(moved)


@pytest.mark.slow
def test_a_spoken_turn_whose_audio_was_made_while_the_caller_spoke_waits_on_the_end_of_turn() -> (
    None
):
    """With ``preemptive_tts`` livekit synthesizes the reply before the end of turn too, and
    plays it once the turn ended: the first audio's phase starts there, not at its first byte
    (where it took the end of turn's hold)."""
    with Emulator() as emulator:
        trace = pharmacy_trace(emulator, "what is two plus three", preemptive_tts=True)
    spoken, _ = turn_phases(trace)
    tts = phase(spoken, "tts_first_byte")
    assert tts.end < phase(spoken, "end_of_turn").end and not tts.critical
    assert_end_of_turn_then_the_reply(spoken, trace)
    assert phase(spoken, "first_audio").critical


async def typed_trace(runners: list[NotebookRunner], server: AgentServer, *texts: str) -> Trace:
    runner = await started(runners, NotebookRunner(server))
    for text in texts:
        await runner.send_text(text)
    runner.stop()
    return runner.trace


async def test_a_typed_turns_phases_add_up_to_its_wait(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    """On the Chat Completions LLM: the text reaches the session, the reply starts, the LLM
    answers, its first text goes out."""
    trace = await typed_trace(runners, cascaded_server(emulator), "what is 2 plus 3")
    (b,) = turn_phases(trace)
    (typed,) = trace.of_kind("user_message")
    assert (b.label, b.spoken, b.agent) == ("turn 1 · typed", False, "Agent")
    assert b.start == clock(trace, typed.data["created_at"]) and b.end == speaking(trace).t
    assert_critical_phases_fill_the_wait(b)
    node = only(trace, "llm_node")
    critical = [(p.name, p.start) for p in b.phases if p.critical]
    assert critical[:2] == [("reply_start", b.start), ("llm_first_token", node.start)]
    # then the first text out; on a loaded machine it can go out only after the LLM's whole
    # (short) answer came, which is then on the path too, up to the very end when the text
    # left with the answer's last chunk (its own step then lasts nothing)
    assert [name for name, _ in critical[2:]] in (
        ["first_text"],
        ["llm_response", "first_text"],
        ["llm_response"],
    )
    assert critical[-1][1] >= node.start + node.attributes["lk.response.ttft"]
    assert phase(b, "llm_first_token").livekit == node.attributes["lk.response.ttft"]
    assert turn_phases(Trace.load(trace.save(tmp_path / "typed.jsonl"))) == [b]
    (agent,) = TraceAnalysis.of(trace).speech
    assert (agent.answers, agent.first_audio_s) == ("text", b.wait)


def response_created(span: TraceSpan, trace: Trace) -> float:
    """When livekit's realtime plugin took the model's response.created (its metrics)."""
    return clock(trace, json.loads(span.attributes["lk.realtime_model_metrics"])["timestamp"])


async def test_a_typed_turn_to_a_realtime_model_splits_what_exists(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """No LLM or TTS node: the message reaches the model, it creates its response, the
    response's first output goes out."""
    trace = await typed_trace(runners, production_server(emulator), "hello")
    (b,) = turn_phases(trace)
    (typed,) = trace.of_kind("user_message")
    assert_critical_phases_fill_the_wait(b)
    # livekit records the message once the model has it: the message's phase ends there. On a
    # loaded machine that record can come after the response began (seen in a loaded run of
    # the suite: no message_sync at all); then no phase claims it
    inference = only(trace, "realtime_inference")
    synced = [p.end for p in b.phases if p.name == "message_sync"]
    if typed.t <= inference.start and typed.t - b.start > TOLERANCE:
        assert synced == [typed.t]
    else:
        assert synced == []
    critical = [p.name for p in b.phases if p.critical]
    assert set(critical) <= {
        "message_sync",
        "response_created",
        "realtime_first_token",
        "realtime_response",
        "first_text",
    }
    if "lk.realtime_model_metrics" in inference.attributes and "response_created" in critical:
        # livekit's metrics of the response (lost when they come after its span ended)
        assert phase(b, "response_created").end == response_created(inference, trace)


@pytest.mark.slow
async def test_a_spoken_turn_to_a_realtime_model_splits_what_exists(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(realtime_voice_server(emulator), audio=True))
    await runner.send_audio(synthesize("what is two plus three"))
    runner.stop()
    trace = runner.trace
    (b,) = turn_phases(trace)
    (stopped,) = [e for e in trace.of_kind("user_state") if e.data["new"] == "listening"]
    assert b.spoken and b.start == stopped.t  # the model's server said the speech ended
    assert_critical_phases_fill_the_wait(b)
    created = phase(b, "response_created")
    assert created.end == response_created(only(trace, "realtime_inference"), trace)
    assert "turn_detection" in created.note
    assert not phase(b, "final_transcript").critical
    assert phase(b, "first_audio").end == b.end


async def test_an_upstream_agents_turns_split_through_its_tool_and_handoff(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """livekit/agents PR #5229's Greeter/Weather, unchanged: the turn that hands over waits
    through the tool and the handoff to the new agent's first words."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )
    runner = await started(runners, NotebookRunner(greeter_weather.make_server(model)))
    await runner.greeting()
    await runner.send_text("transfer to weather")
    await runner.send_text("lookup weather location=Paris")
    runner.stop()
    transfer, lookup = turn_phases(runner.trace)  # the greeting answers no one
    assert transfer.agent == lookup.agent == "WeatherAgent"
    assert phase(transfer, "tool").note == "transfer_to_weather()"
    handoff = phase(transfer, "handoff")
    update = only(runner.trace, "update_agent")
    assert handoff.critical and (handoff.start, handoff.end) == (update.start, update.end)
    assert_critical_phases_fill_the_wait(transfer)
    assert "lookup_weather()" in [p.note for p in lookup.phases]
    assert abs(lookup.unexplained) < 0.02
