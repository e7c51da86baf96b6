"""NotebookRunner under real agent code and faults: turns in the job's context, failed turns,
dead sessions, an unreachable LiveKit, an interrupted start, the offline room (issue 12)."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import psutil
import pytest
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    APIConnectionError,
    APIConnectOptions,
    JobContext,
    function_tool,
    get_job_context,
    stt,
)
from livekit.agents.ipc import mock_room
from livekit.agents.utils import http_context
from livekit.plugins import openai

from notebook_agents import NotebookRunner, RunnerError, Trace, TraceEvent, TurnError
from notebook_agents import _livekit_internals as livekit
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from notebook_agents.runner._real_room import LiveKitCredentials
from notebook_agents.trace.schema import check_event_data
from notebook_agents.views import ChatView, StateView, TimelineView
from tests.conftest import API_KEY, started
from tests.upstream import greeter_weather


def realtime(base_url: str, **options: Any) -> openai.realtime.RealtimeModel:
    return openai.realtime.RealtimeModel(
        base_url=base_url, api_key=API_KEY, modalities=["text"], **options
    )


def server_for(
    base_url: str,
    agent: Callable[[], Agent] = lambda: Agent(instructions="You are Ada."),
    **model_options: Any,
) -> AgentServer:
    """A production-style server: each job makes its agent and model (so its HTTP session)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(llm=realtime(base_url, **model_options))
        await session.start(agent=agent(), room=ctx.room)

    return server


async def wait_for_kind(trace: Trace, kind: str, timeout: float = 30.0) -> None:
    """Until ``trace`` records an event of ``kind`` (delivered on this loop)."""
    seen = asyncio.Event()

    def on_event(event: TraceEvent) -> None:
        if event.kind == kind:
            seen.set()

    unsubscribe = trace.subscribe(on_event)
    try:
        if not any(event.kind == kind for event in trace.events):
            await asyncio.wait_for(seen.wait(), timeout)
    finally:
        unsubscribe()


# -- 1. turns from the notebook run in the job's context ------------------------------------


class Concierge(Agent):
    """Tools that need the job: its context, its room, and its HTTP session."""

    def __init__(self, base_url: str) -> None:
        super().__init__(instructions="You are Concierge.")
        self.base_url = base_url
        self.seen: dict[str, Any] = {}

    async def on_enter(self) -> None:
        self.seen["entry_http"] = http_context.http_session()

    @function_tool
    async def where_am_i(self) -> str:
        """Say which room this call is in."""
        ctx = get_job_context()  # raised "no job context found" for turns sent from cells
        self.seen["tool_room"] = ctx.room.name
        return f"room {ctx.room.name}"

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Hand the caller to billing, on a realtime model of its own."""
        self.seen["tool_http"] = http_context.http_session()
        return Billing(realtime(self.base_url))


class Billing(Agent):
    def __init__(self, model: openai.realtime.RealtimeModel) -> None:
        super().__init__(instructions="You are Billing.", llm=model)

    async def on_enter(self) -> None:
        self.session.generate_reply()


async def test_turns_sent_from_cells_run_in_the_job_context(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    agent = Concierge(emulator.base_url())
    runner = await started(runners, NotebookRunner(server_for(emulator.base_url(), lambda: agent)))

    await runner.send_text("where am i")
    output = runner.trace.of_kind("tool_output")[-1].data
    assert (output["output"], output["is_error"]) == (f"room {runner.room_name}", False)
    assert agent.seen["tool_room"] == runner.room_name  # 12: the room's name is the runner's

    # a model made during a turn uses the job's HTTP session (closed with the job), not a
    # private one livekit would never close
    assert (await asyncio.wrap_future(runner.submit_text("transfer to billing"))).startswith(
        "You are Billing."
    )
    assert agent.seen["tool_http"] is agent.seen["entry_http"]


async def test_offline_room_name_is_each_runners_own(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    front, back = Concierge(emulator.base_url()), Concierge(emulator.base_url())
    front_desk = AgentServer()
    back_office = AgentServer()

    # two servers (a server runs once at a time), each with its own entrypoint
    @front_desk.rtc_session()
    async def front_entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(llm=realtime(emulator.base_url()))
        await session.start(agent=front, room=ctx.room)

    @back_office.rtc_session()
    async def back_entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(llm=realtime(emulator.base_url()))
        await session.start(agent=back, room=ctx.room)

    # both run at once on livekit's one cached offline room; each job sees its own name
    first = NotebookRunner(front_desk, room="front-desk").start()
    second = NotebookRunner(back_office, room="back-office").start()
    runners.extend([first, second])
    await first.ready()
    await second.ready()
    await first.send_text("where am i")
    await second.send_text("where am i")
    assert (front.seen["tool_room"], back.seen["tool_room"]) == ("front-desk", "back-office")


# -- 2. nothing fails silently --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("cancel_responses=1", "cancelled its response"),
        ("fail_responses=1", "response failed"),
        ("fail_first=1", "response failed"),
        ("error_on=conversation.item.create", "rejected the user item 'hello'"),
        # refused at the websocket: the emulator's reason reaches the caller, not a bare 400
        ("rtt_ms=-5", r"rtt_ms=-5 must be between 0 and 60000 ms"),
    ],
)
async def test_a_turn_that_went_wrong_raises_and_is_traced(
    emulator: Emulator, runners: list[NotebookRunner], fault: str, says: str
) -> None:
    server = server_for(f"{emulator.base_url()}?{fault}")
    runner = await started(runners, NotebookRunner(server))

    with pytest.raises(TurnError, match=says) as raised:
        await runner.send_text("hello")
    assert raised.value.errors and raised.value.errors[0].kind == "error"
    went_wrong = runner.trace.of_kind("error", "context_diverged")
    assert raised.value.errors == [e for e in went_wrong if e.seq >= raised.value.errors[0].seq]
    if fault.startswith("error_on"):  # livekit holds the words the model never took
        parted = runner.trace.of_kind("context_diverged")[-1]
        assert [item["text"] for item in parted.data["missing"]] == ["hello"]
    if fault.startswith("fail_first"):  # only the first response fails: the call goes on
        assert await runner.send_text("hello again") == 'You are Ada. You said: "hello again".'
    assert runner.state is RunnerState.RUNNING


class DroppingSTT(stt.STT[Literal["metrics_collected", "error"]]):
    """A streaming speech recognizer that loses its service once, when ``drop`` is set."""

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=False))
        self.drop = asyncio.Event()

    async def _recognize_impl(self, *args: Any, **kwargs: Any) -> stt.SpeechEvent:
        raise NotImplementedError("streaming only")

    def stream(self, **kwargs: Any) -> stt.RecognizeStream:
        return _DroppingStream(stt=self, conn_options=APIConnectOptions(max_retry=0))


class _DroppingStream(stt.RecognizeStream):
    async def _run(self) -> None:
        recognizer = self._stt
        assert isinstance(recognizer, DroppingSTT)
        await recognizer.drop.wait()
        recognizer.drop.clear()  # livekit makes a new stream: that one keeps going
        raise APIConnectionError("lost the speech service")


class Listener(Agent):
    def __init__(self, recognizer: DroppingSTT) -> None:
        super().__init__(instructions="You are Ada.")
        self.recognizer = recognizer

    @function_tool
    async def drop_speech(self) -> str:
        """Cut the speech recognizer off (while this typed turn runs)."""
        self.recognizer.drop.set()
        return "dropped"


async def test_a_typed_turn_does_not_fail_on_speech_recognition(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        chat = openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")
        recognizer = DroppingSTT()
        session: AgentSession[None] = AgentSession(stt=recognizer, llm=chat)
        await session.start(agent=Listener(recognizer), room=ctx.room)

    runner = await started(runners, NotebookRunner(server))
    turn_starts = len(runner.trace)
    assert (await runner.send_text("drop speech")).startswith("You are Ada.")
    during = [e for e in runner.trace.events_since(turn_starts) if e.kind == "error"]
    assert [e.data["source"] for e in during] == ["stt"]  # traced, not raised
    assert "lost the speech service" in during[0].data["message"]
    assert runner.state is RunnerState.RUNNING


class Forecaster(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Ada.")

    @function_tool
    async def get_weather(self, city: str) -> str:
        """Look up the weather in a city."""
        return f"sunny in {city}"


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_a_turn_after_which_the_plugin_lacks_what_livekit_holds_raises(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The tool result's ack comes half a second after livekit stopped waiting for it: the
    model holds the result (the emulator took it at once), the plugin's view does not, and
    the plugin's next sync would be made from that view."""
    url = emulator.base_url(ack_delay_ms=5500, ack_delay_items="function_call_output")
    runner = await started(runners, NotebookRunner(server_for(url, Forecaster)))

    with pytest.raises(TurnError, match="the plugin's view lacks 1 item livekit has") as raised:
        await runner.send_text("get weather city=Oslo")
    assert raised.value.reply == "You are Ada. The tool returned: sunny in Oslo"
    timed_out, parted = raised.value.errors
    assert timed_out.kind == "error" and "update_chat_ctx timed out" in timed_out.data["message"]
    assert parted.kind == "context_diverged" and parted.data["model_source"] == "plugin"
    assert "(the model's own agrees)" in parted.data["message"]
    assert [item["text"] for item in parted.data["missing"]] == ["sunny in Oslo"]

    await wait_for_kind(runner.trace, "context_converged")  # the ack came: whole again
    assert await runner.send_text("hello") == 'You are Ada. You said: "hello".'


class Shop(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Shop.")

    @function_tool
    async def check_stock(self, item: str) -> str:
        """Check how many of an item are in stock."""
        raise RuntimeError("inventory database is down")


async def test_a_tool_that_raises_is_an_error_event_and_the_conversation_goes_on(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """livekit tells the model only "An internal error occurred" and logs the exception: the
    trace records the exception itself, where the views mark errors. The turn is not a
    TurnError: as in livekit, the model hears of the failure and answers."""
    runner = await started(runners, NotebookRunner(server_for(emulator.base_url(), Shop)))

    reply = await runner.send_text("check stock item=apples")
    assert reply == "You are Shop. The tool returned: An internal error occurred"
    (call,) = runner.trace.of_kind("tool_call")
    (error,) = runner.trace.of_kind("error")
    (output,) = runner.trace.of_kind("tool_output")
    assert error.agent == "Shop" and call.seq < error.seq < output.seq
    assert error.data == {
        "message": "the tool check_stock raised RuntimeError: inventory database is down "
        "(the model was told only that an internal error occurred)",
        "type": "RuntimeError",
        "source": "tool",
        "recoverable": True,
        "tool": "check_stock",
        "call_id": call.data["call_id"],
    }
    check_event_data("error", error.data)
    # the chat shows it as a line, the timeline as an error mark at the tool's agent
    chat = [r for r in ChatView(runner)._sent if r["kind"] == "error"]
    assert [r["text"] for r in chat] == [error.data["message"]]
    timeline = TimelineView(runner.trace)
    (marked,) = [r for r in timeline._sent if r["seq"] == error.seq]
    lane, style, hover = marked["mark"]
    assert (timeline.lanes[lane], style) == ("Shop", "error")
    assert "inventory database is down" in hover
    assert runner.state is RunnerState.RUNNING
    assert await runner.send_text("hello") == 'You are Shop. You said: "hello".'


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_a_turn_answered_while_the_model_holds_another_conversation_raises(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """livekit/agents PR #5229's Greeter/Weather agents, unchanged (one shared RealtimeModel,
    ``on_enter`` replies). The transfer's tool output is acked 6 s late, after livekit gave up
    at 5 s: the model holds it, livekit's and the plugin's records do not, and agree. The
    emulator is the model's side (its conversation by the session's id): the next turn,
    answered from a conversation livekit does not hold, is a TurnError too."""
    url = emulator.base_url(ack_delay_ms=6000, ack_delay_items="function_call_output")
    model = openai.realtime.RealtimeModel(base_url=url, api_key=API_KEY, modalities=["text"])
    runner = NotebookRunner(greeter_weather.make_server(model))
    runners.append(runner)
    try:
        runner.start()
        await runner.ready()
        with pytest.raises(TurnError, match="update_chat_ctx timed out") as handoff:
            await runner.send_text("transfer to weather")
        timed_out, parted = handoff.value.errors  # the model already held it
        assert (timed_out.kind, parted.kind) == ("error", "context_diverged")

        with pytest.raises(TurnError, match="the model holds 1 item livekit lacks") as raised:
            await runner.send_text("hello")
        assert raised.value.reply == 'You are a weather agent. You said: "hello".'
        assert raised.value.errors == [parted] and parted.agent == "WeatherAgent"
        assert parted.data["model_source"] == "server"  # the plugin's view agreed
        (extra,) = parted.data["extra"]
        assert (extra["type"], extra["text"]) == ("function_call_output", "")
        assert parted.data["model"] == emulator.conversations()[-1][: len(parted.data["model"])]
        assert parted.data["missing"] == [] and not parted.data["order"]
        check_event_data(parted.kind, parted.data)
        assert runner.state is RunnerState.RUNNING
    finally:
        runner.stop()
        await model.aclose()


async def test_a_session_the_model_refused_to_configure_fails_every_turn(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The model rejects every ``session.update``: the session runs without the agent's
    instructions and tools (livekit goes on as if they were set). Each turn raises while it
    does, not only the first; the runner keeps running, so a fix can be tried on it."""
    runner = await started(
        runners,
        NotebookRunner(server_for(emulator.base_url(error_on="session.update"), Forecaster)),
    )
    for text in ("hello", "get weather city=Oslo", "hello again"):
        with pytest.raises(TurnError, match=r"the model rejected session\.update") as raised:
            await runner.send_text(text)
        assert raised.value.reply == f'You said: "{text}".'  # no instructions, no tool
        refused = raised.value.errors[-1].data
        assert (refused["type"], refused["source"]) == ("SessionUpdateRejected", "realtime")
        assert {"instructions", "tools"} <= set(refused["settings"])
        assert "runs without its instructions, tools" in refused["message"]
        check_event_data("error", refused)
    assert runner.state is RunnerState.RUNNING


# -- 3. a dead session says so --------------------------------------------------------------


async def test_an_entrypoint_raising_after_ready_fails_the_runner(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(llm=realtime(emulator.base_url()))
        await session.start(agent=Agent(instructions="You are Ada."), room=ctx.room)
        raise ValueError("the CRM is down")

    runner = await started(runners, NotebookRunner(server))
    await wait_for_kind(runner.trace, "closed")

    assert "failed" in repr(runner) and "the CRM is down" in repr(runner)
    assert runner.state is RunnerState.FAILED
    error = runner.trace.of_kind("error")[-1].data
    assert "the CRM is down" in error["message"] and error["recoverable"] is False
    closed = runner.trace.of_kind("closed")
    assert len(closed) == 1 and closed[0].data["reason"] == "error"
    assert "the CRM is down" in closed[0].data["error"]
    with pytest.raises(RunnerError, match=r"the CRM is down.*new NotebookRunner"):
        await runner.send_text("hello?")
    view = StateView(runner.trace)
    assert view.closed and "the CRM is down" in view.failure
    runner.stop()
    assert runner.state.value == "stopped"


async def test_an_unrecoverable_model_error_fails_the_runner(
    runners: list[NotebookRunner],
) -> None:
    emulator = Emulator().start()
    try:
        # no retries: the lost connection is unrecoverable at once
        options = APIConnectOptions(max_retry=0)
        server = server_for(emulator.base_url(), conn_options=options)
        runner = await started(runners, NotebookRunner(server))
        assert await runner.send_text("hello") == 'You are Ada. You said: "hello".'
    finally:
        emulator.stop()  # the model's server goes away mid-call
    await wait_for_kind(runner.trace, "closed")

    assert runner.state is RunnerState.FAILED and "unrecoverable" in repr(runner)
    assert [e.data["recoverable"] for e in runner.trace.of_kind("error")][-1] is False
    closed = runner.trace.of_kind("closed")
    assert len(closed) == 1 and closed[0].data["reason"] == "error"
    with pytest.raises(RunnerError, match=r"unrecoverable error.*new NotebookRunner"):
        await runner.send_text("hello?")


# -- 4. an interrupt inside start() ---------------------------------------------------------


async def test_an_interrupt_inside_start_leaves_the_server_restored(
    emulator: Emulator, runners: list[NotebookRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_for(emulator.base_url())
    before = livekit.server_options(server)

    def interrupted(server: AgentServer, entrypoint: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        # the interrupt lands on start()'s last step before the server thread: everything
        # else (options, loopback, environment) is changed by then
        patch.setattr(livekit, "set_entrypoint", interrupted)
        runner = NotebookRunner(server)
        with pytest.raises(KeyboardInterrupt):
            runner.start()
    assert livekit.server_options(server) == before and not livekit.server_running(server)
    assert runner.state is RunnerState.STOPPED

    again = NotebookRunner(server).start()
    runners.append(again)
    await again.ready()
    assert await again.send_text("hi") == 'You are Ada. You said: "hi".'


# -- 5. an unreachable LiveKit --------------------------------------------------------------


async def test_an_unreachable_livekit_fails_fast_and_leaves_nothing(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{probe.getsockname()[1]}"
    server = server_for(emulator.base_url())
    before = livekit.server_options(server)
    environment = dict(os.environ)
    listening = _listening_ports()
    entered: list[str] = []
    server_entry = livekit.entrypoint_of(server)

    async def counted(ctx: JobContext) -> None:
        entered.append(ctx.room.name)
        await server_entry(ctx)

    livekit.set_entrypoint(server, counted)
    before["_entrypoint_fnc"] = counted
    runner = NotebookRunner(server, livekit_url=url, api_key="key", api_secret="s" * 32)
    runner.start()
    with pytest.raises(RunnerError, match=r"check livekit_url=, or leave out") as raised:
        await asyncio.wait_for(runner.ready(), 15)  # not the 30 s start timeout
    assert url in str(raised.value) and "entrypoint" not in str(raised.value)
    assert entered == []
    assert runner.state is RunnerState.STOPPED
    assert livekit.server_options(server) == before and not livekit.server_running(server)
    assert _listening_ports() == listening  # livekit's worker HTTP listener is closed
    assert dict(os.environ) == environment  # livekit's run copied the secret into it

    offline = NotebookRunner(server).start()  # the same server still runs offline
    runners.append(offline)
    await offline.ready()
    assert await offline.send_text("hi") == 'You are Ada. You said: "hi".'


def test_livekit_errors_name_the_setting_as_the_user_gave_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given = LiveKitCredentials.resolve("ws://127.0.0.1:9", "key", "secret")
    assert given is not None and given.url_setting == "livekit_url="
    assert given.offline_hint.startswith("leave out livekit_url=")
    monkeypatch.setenv("LIVEKIT_URL", "ws://127.0.0.1:9")
    monkeypatch.setenv("LIVEKIT_API_KEY", "key")
    monkeypatch.setenv("LIVEKIT_API_SECRET", "secret")
    from_env = LiveKitCredentials.resolve()
    assert from_env is not None and from_env.url_setting == "LIVEKIT_URL"
    assert from_env.offline_hint.startswith("unset LIVEKIT_URL")


def _listening_ports() -> set[int]:
    return {
        c.laddr.port
        for c in psutil.Process().net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    }


# -- 14. the cached offline room does not grow ----------------------------------------------


async def test_start_stop_cycles_leave_no_calls_on_the_offline_room(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    server = server_for(emulator.base_url())
    for _ in range(3):
        runner = NotebookRunner(server).start()
        runners.append(runner)
        await runner.ready()
        await runner.send_text("hi")
        assert livekit.mock_room_call_records() > 0  # the job did use it
        runner.stop()
        assert livekit.mock_room_call_records() == 0


async def test_turns_add_no_calls_to_the_offline_room(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """What livekit's room IO sends every turn (transcriptions, session messages, the
    agent's state) goes nowhere offline: the cached room's mock kept each call, ~33 a turn
    with their payloads, until the runner stopped."""
    runner = await started(runners, NotebookRunner(server_for(emulator.base_url())))
    await runner.send_text("hi")
    before = livekit.mock_room_call_records()
    for _ in range(3):
        await runner.send_text("hello")
    assert livekit.mock_room_call_records() == before


async def test_offline_the_session_sends_no_session_messages_to_the_room(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """Nobody can join the offline room to drive or watch the session (livekit's
    ``RemoteSession``), so it hosts none: before, every event of every turn was encoded for
    the room and dropped there (~5 messages a turn)."""
    runner = await started(runners, NotebookRunner(server_for(emulator.base_url())))
    participant = mock_room.create_mock_room().local_participant
    sent: list[str] = []
    send_bytes = participant.send_bytes

    async def counted(*args: Any, topic: str = "", **kwargs: Any) -> Any:
        sent.append(topic)
        return await send_bytes(*args, topic=topic, **kwargs)

    participant.send_bytes = counted
    try:
        for _ in range(3):
            await runner.send_text("hello")
    finally:
        participant.send_bytes = send_bytes
    assert sent == []


SAMPLED_UNDER_COLLECTION = """
import asyncio, gc, threading, time
from livekit.agents.telemetry import loop_monitor
from notebook_agents import NotebookRunner


async def entrypoint(ctx):
    pass


NotebookRunner(entrypoint).start().stop()  # as a kernel's first runner does


class Holder:  # a cycle with a threading.local (google-genai's clients hold some): the
    def __init__(self):  # collector frees it
        self.local, self.me = threading.local(), self


spawning = True


class Spawner:  # each collection leaves fresh garbage for the next, inside the sample
    def __init__(self):
        self.me = self

    def __del__(self):
        if spawning:
            Holder()
            Spawner()


waiting = threading.Barrier(21)


def other():
    def deeper():  # a frame whose frame object _current_frames makes, collecting
        waiting.wait()
        time.sleep(60)
    deeper()


for _ in range(20):
    threading.Thread(target=other, daemon=True).start()
waiting.wait()
monitor = loop_monitor.start_monitoring(asyncio.new_event_loop(), name="stalled")
Spawner()
gc.set_threshold(1)
monitor._sample_loop_thread(1.0)  # what its watchdog calls when the loop stalls
spawning = False
gc.set_threshold(700)
print("sampled")
"""


def test_livekits_loop_monitor_samples_a_stalled_job_without_hanging_the_kernel(
    tmp_path: Path,
) -> None:
    """livekit's loop monitor samples a stalled job's stack with ``sys._current_frames()``;
    on CPython 3.11 a collection inside it that frees a ``threading.local`` deadlocks the
    process with the GIL held (a CI run's main suite hung there for half an hour). Once a
    runner has started in the process, the sample is taken with the collector paused; before,
    this script never ended."""
    script = tmp_path / "sampled_under_collection.py"
    script.write_text(SAMPLED_UNDER_COLLECTION)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    try:  # the bound of a deadlock, not a speed: it takes about 2 s
        done = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the loop monitor's stack sample deadlocked the process")
    assert done.stdout.strip().splitlines()[-1:] == ["sampled"], done.stderr[-2000:]


def test_every_private_livekit_name_exists() -> None:
    missing = missing_names(livekit.PRIVATE_NAMES)
    assert not missing, f"livekit no longer has: {', '.join(missing)}"


def missing_names(private_names: dict[Any, tuple[str, ...]]) -> list[str]:
    """Each ``owner.name`` of ``private_names`` the installed package lacks."""
    return [
        f"{getattr(owner, '__qualname__', owner.__name__)}.{name}"
        for owner, names in private_names.items()
        for name in names
        if not _has(owner, name)
    ]


def _has(owner: Any, name: str) -> bool:
    """On the module or class, or an attribute its ``__init__`` sets on every instance."""
    init = inspect.unwrap(getattr(owner, "__init__", object.__init__))  # livekit decorates some
    sets = getattr(getattr(init, "__code__", None), "co_names", ())
    return hasattr(owner, name) or (isinstance(owner, type) and name in sets)
