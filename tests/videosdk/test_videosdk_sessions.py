"""A VideoSDK agents session run offline by ``VideoSDKRunner``, recorded into a ``Trace``.

Real parts: videosdk-agents' ``AgentSession``, ``Pipeline`` and orchestrator, its OpenAI
plugins over loopback sockets to a real ``Emulator``, the agent's audio track read in real
time by the offline room.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import mock_tools
from videosdk.agents import AgentSession, Pipeline, function_tool
from videosdk.plugins.openai import OpenAILLM, OpenAIRealtime

from notebook_agents import TraceAnalysis
from notebook_agents.emulator import Emulator
from notebook_agents.emulator.latency import LatencyModel
from notebook_agents.runner import AgentRunner
from notebook_agents.runner.errors import RunnerError, TurnError
from notebook_agents.runner.notebook_runner import RunnerState, reply_text
from notebook_agents.speech import synthesize
from notebook_agents.trace import Trace, TraceEvent
from notebook_agents.trace.schema import check_event_data
from notebook_agents.videosdk import VideoSDKRunner
from tests.runner.test_runner_core import CALLS, never_awaited

from . import videosdk_agents

_NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto")
_watching: list[list[tuple[str, Any]]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event in _NETWORK_EVENTS:
        _watching[-1].append((event, args[1] if event != "socket.getaddrinfo" else args[0]))


sys.addaudithook(_audit)  # cannot be removed: it records only while a test watches


@contextmanager
def network_seen() -> Iterator[list[tuple[str, Any]]]:
    """Every socket connect, bind and name lookup of the process while inside."""
    seen: list[tuple[str, Any]] = []
    _watching.append(seen)
    try:
        yield seen
    finally:
        _watching.remove(seen)


def _off_loopback(seen: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    def loopback(address: Any) -> bool:
        if isinstance(address, tuple):
            return str(address[0]) in ("127.0.0.1", "localhost")
        if isinstance(address, str | bytes):  # a unix socket, or a name looked up
            return str(address) in ("127.0.0.1", "localhost") or str(address).startswith("/")
        return address is None

    return [(event, address) for event, address in seen if not loopback(address)]


def checked_events(
    runner: VideoSDKRunner, emulator: Emulator, seen: list[tuple[str, Any]]
) -> list[TraceEvent]:
    """The runner's trace, after checking it contacted only the emulator (the audit hook heard
    its connects there) and that every event holds to the schema."""
    assert ("socket.connect", ("127.0.0.1", emulator.port)) in seen  # the hook hears them
    assert not _off_loopback(seen), f"left 127.0.0.1: {_off_loopback(seen)}"
    events = runner.trace.events
    for event in events:
        check_event_data(event.kind, event.data)
    return events


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


async def _two_agent_session(emulator: Emulator) -> VideoSDKRunner:
    runner = VideoSDKRunner(videosdk_agents.entrypoint, emulator=emulator).start()
    await runner.ready()
    return runner


async def test_a_typed_session_with_a_tool_and_a_handoff_is_traced_exactly_once(
    emulator: Emulator,
) -> None:
    with network_seen() as seen:
        runner = await _two_agent_session(emulator)
        try:
            assert await runner.send_text("Please get the weather, city: Paris")
            reply = await runner.send_text("Please transfer me to billing")
        finally:
            runner.stop()
    assert reply == "Billing here, how can I help?"
    events = checked_events(runner, emulator, seen)
    kinds = [event.kind for event in events]
    assert kinds[0] == "handoff" and kinds[-1] == "closed"
    handoffs = [e.data for e in events if e.kind == "handoff"]
    assert [(h["from"], h["to"]) for h in handoffs] == [
        (None, "FrontDesk"),
        ("FrontDesk", "Billing"),
    ]
    # VideoSDK's own ids beside the names (its default is a random UUID), as every runner keeps
    front_desk, billing = (h["to_id"] for h in handoffs)
    assert [(h["from_id"], h["to_id"]) for h in handoffs] == [
        (None, front_desk),
        (front_desk, billing),
    ]
    assert front_desk and billing and front_desk != billing
    # Billing inherits FrontDesk's context (inherit_context=True): copied, on no realtime model
    assert handoffs[1]["context"] == "copied" and handoffs[1]["session"] == "none"
    messages = [e for e in events if e.kind in ("user_message", "agent_message")]
    ids = Counter(str(e.data["item_id"]) for e in messages)
    assert ids and max(ids.values()) == 1, f"a message recorded twice: {ids}"
    said = [
        (e.agent, e.data["text"], e.data["source"], e.data["phase"])
        for e in messages
        if e.kind == "agent_message"
    ]
    assert said[0] == ("FrontDesk", "Hello, front desk.", "say", "on_enter")
    assert ("Billing", "Billing here, how can I help?", "say", "on_enter") in said
    calls = [e.data for e in events if e.kind == "tool_call"]
    outputs = [e.data for e in events if e.kind == "tool_output"]
    assert [c["name"] for c in calls] == ["get_weather", "transfer_to_billing"]
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    weather = next(e for e in messages if e.kind == "agent_message" and e.data["phase"] == "turn")
    assert weather.data["source"] == "tool_reply" and "sunny" in weather.data["text"]
    # the session's usage so far, per model, from VideoSDK's turn metrics
    usage = {u["type"]: u for u in [e for e in events if e.kind == "metrics"][-1].data["usage"]}
    assert usage["tts_usage"]["provider"] == "OpenAITTS"
    assert usage["tts_usage"]["counts"]["characters_count"] >= len(weather.data["text"])
    # the tool's call and output come before the handoff it made, the handoff before B speaks
    at = {id(e): i for i, e in enumerate(events)}
    handoff = next(e for e in events if e.kind == "handoff" and e.data["to"] == "Billing")
    tool_output = next(e for e in events if e.kind == "tool_output")
    billing_says = next(e for e in events if e.kind == "agent_message" and e.agent == "Billing")
    assert at[id(tool_output)] < at[id(handoff)] < at[id(billing_says)]
    # VideoSDK's states in the trace's words, the spoken reply between speaking and idle
    states = [(e.data["old"], e.data["new"]) for e in events if e.kind == "agent_state"]
    assert states[0] == ("initializing", "speaking") or states[0][0] == "initializing"
    assert ("speaking", "idle") in states and states[-1][1] == "closing"
    assert "listening" not in [new for old, new in states if old == "closing"]
    # typed turns: VideoSDK announces the text as a transcript, but nothing was heard
    assert "user_transcript" not in kinds


async def test_a_tool_that_raises_is_a_tool_error_and_ends_the_turn_without_a_reply(
    emulator: Emulator,
) -> None:
    runner = await _two_agent_session(emulator)
    try:
        with pytest.raises(TurnError, match="check_balance raised: the accounts service is down"):
            await runner.send_text("Please check the balance")
        # the runner takes the next turn: VideoSDK left its agent "thinking", not stuck
        assert await runner.send_text("Please transfer me to billing")
    finally:
        runner.stop()
    errors = [e.data for e in runner.trace.events if e.kind == "error"]
    assert [(e["source"], e["type"], e.get("tool")) for e in errors] == [
        ("tool", "ToolError", "check_balance")
    ]


async def test_a_reply_asked_while_one_is_in_progress_is_a_no_op(emulator: Emulator) -> None:
    runner = await _two_agent_session(emulator)
    try:
        session = runner.session
        assert session is not None
        before = len(runner.trace.of_kind("agent_message"))
        first, second = await asyncio.gather(
            runner.call(session.reply, "Tell the user the opening hours"),
            runner.call(session.reply, "Tell the user a joke"),
        )
    finally:
        runner.stop()
    replies = runner.trace.of_kind("agent_message")[before:]
    generated = [e for e in replies if e.data["source"] == "generate_reply"]
    assert len(generated) == 1 and first is second


async def test_a_spoken_turn_is_heard_answered_aloud_and_traced_once(emulator: Emulator) -> None:
    with network_seen() as seen:
        runner = VideoSDKRunner(videosdk_agents.spoken_entrypoint, emulator=emulator).start()
        try:
            await runner.ready()
            # typed first: the emulator then hears speech in the words its model was offered
            await runner.send_text("Please get the weather, city: Paris")
            reply = await runner.send_audio(synthesize("please transfer me to billing"))
        finally:
            runner.stop()
    assert reply == "Billing here, how can I help?"
    events = checked_events(runner, emulator, seen)
    heard = [e.data for e in events if e.kind == "user_transcript"]
    assert len(heard) == 1 and heard[0]["final"]
    assert {"transfer", "billing"} <= set(str(heard[0]["text"]).split())
    users = [e.data["text"] for e in events if e.kind == "user_message"]
    assert users == ["Please get the weather, city: Paris", heard[0]["text"]]
    handoffs = [(e.data["from"], e.data["to"]) for e in events if e.kind == "handoff"]
    assert handoffs[-1] == ("FrontDesk", "Billing")
    ids = Counter(str(e.data["item_id"]) for e in events if e.kind.endswith("_message"))
    assert max(ids.values()) == 1
    # Billing's greeting was said aloud: the room played audio after the handoff
    assert runner.room is not None and runner.room.played
    t0 = time.perf_counter() - runner.trace.now()  # the trace's clock is perf_counter's
    handoff = next(e for e in events if e.kind == "handoff" and e.data["to"] == "Billing")
    assert runner.room.played[-1].ended - t0 > handoff.t
    states = [e.data["new"] for e in events if e.kind == "agent_state" and e.agent == "Billing"]
    assert "speaking" in states


async def test_a_first_spoken_turn_is_heard_in_the_agents_words(emulator: Emulator) -> None:
    # nothing typed first: the emulator's recognizer knows the words the runner offered it
    runner = VideoSDKRunner(videosdk_agents.spoken_entrypoint, emulator=emulator).start()
    try:
        await runner.ready()
        reply = await runner.send_audio(synthesize("please transfer me to billing"))
    finally:
        runner.stop()
    assert reply == "Billing here, how can I help?"


async def test_a_spoken_turn_that_timed_out_says_where_it_stood(emulator: Emulator) -> None:
    """As the kernel runner's do: a lone "hi", which the emulator hears as no words (its
    grammar cannot tell it from "bye"), got no reply, and the turn said only that the agent
    "did not answer within 5 s". This pipeline has no VAD, so VideoSDK reports no user state:
    whether speech was detected is not said."""
    runner = VideoSDKRunner(videosdk_agents.spoken_entrypoint, emulator=emulator).start()
    try:
        await runner.ready()
        with pytest.raises(RunnerError) as late:
            await runner.send_audio(synthesize("hi"), timeout=5.0)
        assert str(late.value).startswith(
            "the spoken turn got no reply within timeout=5 s: no transcript came: the speech "
            "recognizer (the session's STT, or the realtime model's transcription) heard no "
            "words in it, or did not answer in time"
        ), late.value
        # its audio had been spoken, all of it: a turn cut inside it says how far it got
        with pytest.raises(RunnerError, match=r"its audio was still being spoken \(0\.\d s of "):
            await runner.send_audio(synthesize("please transfer me to billing"), timeout=0.5)
    finally:
        runner.stop()


async def test_a_spoken_turn_that_calls_a_tool_returns_the_reply_said_after_it(
    emulator: Emulator,
) -> None:
    # a spoken turn's reply is added to VideoSDK's context after it was played
    runner = VideoSDKRunner(videosdk_agents.spoken_entrypoint, emulator=emulator).start()
    try:
        await runner.ready()
        await runner.send_text("Please get the weather, city: Paris")
        # a spoken city is heard when the session's words name it (the tool's description)
        result = await runner.run_audio(synthesize("please get weather city paris"))
    finally:
        runner.stop()
    result.expect.next_event().is_function_call(name="get_weather", arguments={"city": "Paris"})
    result.expect.next_event().is_function_call_output()
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    assert 'The tool returned: "sunny in Paris"' in reply_text(result)  # VideoSDK's JSON


async def test_a_reply_asked_in_a_handoffs_on_enter_belongs_to_that_turn(
    emulator: Emulator,
) -> None:
    runner = VideoSDKRunner(videosdk_agents.reception_entrypoint, emulator=emulator).start()
    try:
        await runner.ready()
        result = await runner.run("Please transfer me to the dentist")
        after = await runner.send_text("hello there")
    finally:
        runner.stop()
    result.expect.next_event().is_function_call(name="transfer_to_dentist")
    result.expect.next_event().is_function_call_output()
    result.expect.next_event().is_agent_handoff(new_agent_type=videosdk_agents.Dentist)
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    greeting = next(e for e in runner.trace.of_kind("agent_message") if e.agent == "Dentist")
    assert (greeting.data["source"], greeting.data["phase"]) == ("generate_reply", "on_enter")
    assert "Greet the patient" not in after  # the next turn answers only itself


async def test_a_videosdk_turn_is_checked_with_livekits_run_result_expect(
    emulator: Emulator,
) -> None:
    runner = await _two_agent_session(emulator)
    try:
        assert isinstance(runner, AgentRunner)  # every view and analysis takes it
        greeting = await runner.greeting()
        greeting.expect.next_event().is_agent_handoff(new_agent_type=videosdk_agents.FrontDesk)
        greeting.expect.next_event().is_message(role="assistant")
        greeting.expect.no_more_events()
        result = await runner.run("Please transfer me to billing")
    finally:
        runner.stop()
    result.expect.next_event().is_function_call(name="transfer_to_billing")
    result.expect.next_event().is_function_call_output()
    result.expect.next_event().is_agent_handoff(new_agent_type=videosdk_agents.Billing)
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    with pytest.raises(AssertionError, match="Expected new_agent 'FrontDesk', got 'Billing'"):
        result.expect[2].is_agent_handoff(new_agent_type=videosdk_agents.FrontDesk)


async def test_livekits_mock_tools_around_a_videosdk_turn_is_refused_at_once(
    emulator: Emulator,
) -> None:
    """livekit's ``with mock_tools(...)`` mocks livekit's agents: around a VideoSDK turn the
    real tool ran, silently."""
    runner = await _two_agent_session(emulator)
    mocks = {"transfer_to_billing": lambda: "mocked"}
    try:
        with mock_tools(videosdk_agents.FrontDesk, mocks), pytest.raises(RunnerError) as refused:
            await runner.run("Please transfer me to billing")
        assert str(refused.value) == (
            "run() with `with mock_tools(...)` around it: livekit's mocks reach only livekit "
            "agents run in this kernel (NotebookRunner), not this runner's: mock the tool in "
            "the agent's own code"
        )
        assert runner.trace.of_kind("user_message") == []  # nothing was sent
        assert "Billing" in await runner.send_text("Please transfer me to billing")
    finally:
        runner.stop()


async def test_the_trace_of_a_videosdk_session_reads_as_a_livekit_ones(
    emulator: Emulator, tmp_path: Path
) -> None:
    runner = await _two_agent_session(emulator)
    try:
        await runner.send_text("Please transfer me to billing")
    finally:
        runner.stop()
    analysis = TraceAnalysis.of(runner.trace)
    assert [(h.source, h.target) for h in analysis.handoffs][-1] == ("FrontDesk", "Billing")
    spoken = [(s.agent, s.text) for s in analysis.speech if s.speaker == "agent"]
    assert ("Billing", "Billing here, how can I help?") in spoken
    contexts = runner.trace.contexts_at()
    assert "Please transfer me to billing" in [i.get("text") for i in contexts["Billing"]]
    loaded = Trace.load(runner.trace.save(tmp_path / "videosdk.jsonl"))
    assert [e.to_record() for e in loaded.events] == [e.to_record() for e in runner.trace.events]
    assert runner.trace.to_otlp_json() and runner.trace.to_chrome_json()


async def test_an_entrypoint_that_raises_fails_ready_naming_it_and_leaves_nothing_running(
    emulator: Emulator,
) -> None:
    async def broken(ctx: Any) -> None:
        raise ValueError("no pipeline configured")

    threads = set(threading.enumerate())
    runner = VideoSDKRunner(broken, emulator=emulator).start()
    with pytest.raises(RunnerError, match="entrypoint raised ValueError: no pipeline configured"):
        await runner.ready()
    assert runner.state is RunnerState.FAILED  # as ready() raises, not a moment later
    runner.stop()
    assert set(threading.enumerate()) <= threads
    with pytest.raises(RunnerError, match="stopped"):
        await runner.send_text("hello")


async def test_a_realtime_pipeline_is_refused_before_it_connects(emulator: Emulator) -> None:
    async def realtime(ctx: Any) -> None:
        model = OpenAIRealtime(model="gpt-realtime", base_url=emulator.base_url())
        pipeline = Pipeline(llm=model)
        await ctx.run_until_shutdown(session=AgentSession(videosdk_agents.FrontDesk(), pipeline))

    runner = VideoSDKRunner(realtime, emulator=emulator).start()
    with pytest.raises(RunnerError, match=r"cascaded pipelines.*OpenAIRealtime\) is not supported"):
        await runner.ready()
    runner.stop()
    assert emulator.connections == []


def test_a_function_that_is_not_an_async_entrypoint_is_refused_naming_the_shape() -> None:
    async def no_context() -> None:
        pass

    for wrong in (videosdk_agents.FrontDesk, no_context):
        with pytest.raises(TypeError, match=r"async def entrypoint\(ctx: JobContext\)"):
            VideoSDKRunner(wrong)  # type: ignore[arg-type]


async def test_without_an_emulator_a_missing_key_names_the_emulator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    runner = VideoSDKRunner(videosdk_agents.entrypoint).start()
    with pytest.raises(RunnerError, match=r"OPENAI_API_KEY.*emulator=Emulator\(\).start\(\)"):
        await runner.ready()
    runner.stop()
    del runner
    gc.collect()
    # the failure reached the notebook once: no "Future exception was never retrieved" later
    assert [u.exc_value for u in unraisable] == []


async def test_a_spoken_turn_to_a_pipeline_without_speech_recognition_is_refused_at_once(
    emulator: Emulator,
) -> None:
    runner = await _two_agent_session(emulator)  # Pipeline(llm=..., tts=...)
    try:
        with pytest.raises(RunnerError, match=r"no speech recognition.*Pipeline\(stt=OpenAISTT"):
            await runner.send_audio(synthesize("hello"))
        assert runner.trace.of_kind("user_message") == []
    finally:
        runner.stop()


class SyncTools(videosdk_agents.FrontDesk):
    @function_tool
    def check_opening_hours(self) -> str:
        """The opening hours."""
        return "nine to five"


async def test_a_tool_that_is_not_async_is_named_as_the_cause(emulator: Emulator) -> None:
    async def entrypoint(ctx: Any) -> None:
        session = AgentSession(SyncTools(), Pipeline(llm=OpenAILLM()))
        await ctx.run_until_shutdown(session=session)

    runner = VideoSDKRunner(entrypoint, emulator=emulator).start()
    try:
        await runner.ready()
        with pytest.raises(TurnError, match=r"check_opening_hours raised.*make it `async def`"):
            await runner.send_text("Please check the opening hours")
    finally:
        runner.stop()


async def test_stopping_runs_the_agents_on_exit_and_records_closed_last(
    emulator: Emulator,
) -> None:
    runner = await _two_agent_session(emulator)
    runner.stop()
    events = runner.trace.events
    assert events[-1].kind == "closed" and events[-1].data["reason"] == "job_shutdown"
    goodbye = [e for e in events if e.kind == "agent_message" and e.data["phase"] == "on_exit"]
    assert [e.data["text"] for e in goodbye] == ["Goodbye from the front desk."]


async def test_a_turn_cancelled_by_a_stop_settles_its_submitted_future() -> None:
    """``submit_text``'s future settles (cancelled) when the stop cancels its turn: a widget's
    callback waiting on it is called, not left waiting for good."""
    slow = LatencyModel(first_token_ms=60_000)  # the turn is still going when the stop comes
    with Emulator(latency=slow) as emulator:
        runner = VideoSDKRunner(videosdk_agents.text_only_entrypoint, emulator=emulator).start()
        try:
            await runner.ready()
            typed = asyncio.Event()  # the first turn has gone in: the stop cancels it midway

            def on_event(event: TraceEvent) -> None:
                if event.kind == "user_message":
                    typed.set()

            runner.trace.subscribe(on_event)
            replies = [runner.submit_text("hello"), runner.submit_text("hello again")]
            await asyncio.wait_for(typed.wait(), runner.start_timeout)
        finally:
            runner.stop()
    # settled as the job ended: a cancelled turn's future too (it was left pending for good)
    assert [reply.done() for reply in replies] == [True, True]
    # cancelled with the job's loop, or ended by the stop as the session closes under it
    outcomes = [reply.cancelled() or type(reply.exception()).__name__ for reply in replies]
    assert set(outcomes) <= {True, "TurnStopped"}, outcomes


@pytest.mark.parametrize("method", CALLS)
def test_a_forgotten_await_names_the_videosdk_runner(method: str) -> None:
    runner = VideoSDKRunner(videosdk_agents.entrypoint)
    warned = never_awaited(lambda: CALLS[method](runner))
    assert warned == [f"coroutine 'VideoSDKRunner.{method}' was never awaited"]
