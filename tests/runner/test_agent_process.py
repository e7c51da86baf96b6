"""An agent script in another process (livekit's console transport), driven from here.

Real subprocesses running ``python -m livekit.agents console``, livekit's ``RemoteSession``
over TCP on 127.0.0.1, the real OpenAI realtime plugin against the emulator.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest
from livekit.agents import RunResult, llm
from livekit.agents.voice.remote_session import TcpSessionTransport
from livekit.protocol.agent_pb import agent_session as agent_pb

from notebook_agents import AgentProcess, RunnerError, Trace, TraceEvent
from notebook_agents.analysis import TraceAnalysis, breakdowns
from notebook_agents.emulator import Emulator, EmulatorError
from notebook_agents.runner import AgentRunner, RemoteAgent, RunnerState
from notebook_agents.trace import EventKind, check_event_data
from notebook_agents.views import AgentGraphView, ChatView
from tests.doc_examples import DOCS, python_block, run
from tests.views.test_chat_view import Browser, finished

SCRIPT = Path(__file__).parents[1] / "upstream" / "greeter_weather_console.py"
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def assert_trace_matches_history(
    events: list[TraceEvent], history: list[llm.ChatItem]
) -> list[tuple[str | None, str]]:
    """The trace of a remote session against the agent's own history: every event valid, every
    message once in the session's order, every tool call and output, each handoff (by
    livekit's ids); returns the handoffs (from, to)."""
    for event in events:
        check_event_data(event.kind, event.data)
    said = [(i.role, i.id) for i in history if isinstance(i, llm.ChatMessage)]
    traced = [
        ("user" if e.kind == "user_message" else "assistant", e.data["item_id"])
        for e in events
        if e.kind in ("user_message", "agent_message")
    ]
    assert traced == said
    calls = [(i.name, i.call_id, i.arguments) for i in history if isinstance(i, llm.FunctionCall)]
    assert [(e.data["name"], e.data["call_id"], e.data["arguments"]) for e in events
            if e.kind == "tool_call"] == calls  # fmt: skip
    outputs = [(i.call_id, i.output) for i in history if isinstance(i, llm.FunctionCallOutput)]
    assert [(e.data["call_id"], e.data["output"]) for e in events
            if e.kind == "tool_output"] == outputs  # fmt: skip
    handoffs = [
        (i.old_agent_id, i.new_agent_id) for i in history if isinstance(i, llm.AgentHandoff)
    ]
    assert [(e.data["from_id"], e.data["to_id"]) for e in events if e.kind == "handoff"] == handoffs
    return handoffs


@pytest.fixture
def processes() -> Iterator[list[AgentProcess]]:
    made: list[AgentProcess] = []
    yield made
    for process in made:
        process.stop()


@pytest.fixture
async def greeter(emulator: Emulator, processes: list[AgentProcess]) -> AsyncIterator[AgentProcess]:
    """PR #5229's agents, unchanged, run as a console script in another process."""
    agent = AgentProcess(SCRIPT, emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    yield agent


def first_event(trace: Trace, kind: EventKind) -> asyncio.Future[TraceEvent]:
    """The trace's first event of ``kind``, delivered on this loop."""
    found: asyncio.Future[TraceEvent] = asyncio.get_running_loop().create_future()

    def seen(event: TraceEvent) -> None:
        if event.kind == kind and not found.done():
            found.set_result(event)

    trace.subscribe(seen)
    for event in trace.of_kind(kind)[:1]:  # recorded already, before anyone subscribed
        seen(event)
    return found


def nothing_listens(address: tuple[str, int] | None) -> bool:
    assert address is not None
    with socket.socket() as probe:
        return probe.connect_ex(address) != 0


def gone(process: subprocess.Popen[bytes] | None) -> bool:
    assert process is not None
    return process.poll() is not None and not psutil.pid_exists(process.pid)


@pytest.mark.slow
async def test_upstream_agents_hand_off_and_the_trace_matches_their_history(
    greeter: AgentProcess, tmp_path: Path
) -> None:
    assert isinstance(greeter, AgentRunner) and greeter.state is RunnerState.RUNNING
    result = await greeter.run("transfer to weather")
    assert isinstance(result, RunResult) and result.done()
    result.expect.next_event().is_function_call(name="transfer_to_weather")
    result.expect.next_event().is_function_call_output()
    handoff = result.expect.next_event().is_agent_handoff()
    assert handoff.event().item.new_agent_id == "weather_agent"
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    weather = await greeter.run("lookup weather location=Paris")
    weather.expect.contains_function_call(name="lookup_weather", arguments={"location": "Paris"})
    assert await greeter.send_text("hello") == 'You are a weather agent. You said: "hello".'

    history = await greeter.history()
    events = greeter.trace.events
    handoffs = assert_trace_matches_history(events, history)
    assert handoffs == [(None, "greeter_agent"), ("greeter_agent", "weather_agent")]
    # named as in the kernel: by class (the script says each agent's as it starts)
    assert [(e.agent, e.data["to_class"]) for e in events if e.kind == "handoff"] == [
        ("GreeterAgent", "tests.upstream.greeter_weather:GreeterAgent"),
        ("WeatherAgent", "tests.upstream.greeter_weather:WeatherAgent"),
    ]
    # the greetings are each agent's on_enter; the reply to the weather lookup the tool's
    said_how = [(e.data["phase"], e.data["source"]) for e in events if e.kind == "agent_message"]
    assert said_how == [
        ("on_enter", "generate_reply"),
        ("on_enter", "generate_reply"),
        ("turn", "tool_reply"),
        ("turn", "generate_reply"),
    ]

    # every view and analysis reads it as a kernel session's trace
    analysis = TraceAnalysis(events)
    assert [h.target for h in analysis.handoffs] == ["GreeterAgent", "WeatherAgent"]
    assert [h.label for h in analysis.handoffs] == ["", "mode unknown"]  # protocol says neither
    loaded = Trace.load(greeter.trace.save(tmp_path / "remote.jsonl"))
    assert [e.to_record() for e in loaded.events] == [e.to_record() for e in events]


@pytest.mark.slow
async def test_stop_ends_only_its_own_process_and_nothing_listens(greeter: AgentProcess) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # noqa: ASYNC220
    try:
        process = greeter.process
        greeter.stop()
        assert greeter.state is RunnerState.STOPPED and gone(process)
        assert nothing_listens(greeter.address)
        assert bystander.poll() is None
        closed = greeter.trace.events[-1]
        assert closed.kind == "closed" and closed.data["reason"] == "user_initiated"
        with pytest.raises(RunnerError, match="stopped"):
            await greeter.send_text("hello")
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.slow
async def test_livekit_spans_come_over_and_split_its_turns_and_handoffs_into_phases(
    greeter: AgentProcess,
) -> None:
    await greeter.run("transfer to weather")
    # the agent's batches come within a moment of the turn: wait for the handoff's
    deadline = asyncio.get_running_loop().time() + 30
    while not any(s.name == "update_agent" for s in greeter.trace.spans):
        assert asyncio.get_running_loop().time() < deadline, "no update_agent span came"
        await asyncio.sleep(0.05)
    spans = greeter.trace.spans
    assert {s.scope for s in spans} == {"livekit-agents"}
    update = next(s for s in spans if s.name == "update_agent")
    assert update.attributes["lk.agent_label"] == "weather_agent"
    assert 0 < update.start < update.end < greeter.trace.now()  # on the trace's clock
    handoff = next(b for b in breakdowns(greeter.trace) if b.kind == "handoff")
    assert handoff.label == "GreeterAgent → WeatherAgent · unknown"
    # livekit's steps of it, from its spans (which of them were critical varies with the run)
    named = {p.name for p in handoff.phases}
    assert {"tool_return", "on_exit", "drain", "session_update", "on_enter"} <= named
    turn = next(b for b in breakdowns(greeter.trace) if b.kind == "turn")
    # the wait ends at the first text; the model's response span may end after it, loaded
    # (CI: realtime_response came last once), so its place in the list is not asserted
    assert "first_text" in [p.name for p in turn.phases]


@pytest.mark.slow
async def test_its_output_is_kept_after_stop_without_colour_codes(greeter: AgentProcess) -> None:
    await greeter.send_text("hello")
    greeter.stop()
    output = greeter.output
    assert "livekit.agents" in output  # the script's console logging, all of it
    assert "\x1b[" not in output


@pytest.mark.slow
async def test_a_process_that_dies_mid_call_fails_the_runner_with_its_reason(
    greeter: AgentProcess,
) -> None:
    closed = first_event(greeter.trace, "closed")
    assert greeter.process is not None
    greeter.process.kill()
    event = await asyncio.wait_for(closed, 10)
    assert event.data["reason"] == "error"
    assert greeter.state is RunnerState.FAILED
    with pytest.raises(RunnerError, match=r"the agent process was killed \(SIGKILL\)") as raised:
        await greeter.send_text("hello")
    # its logging says nothing of why it was killed: none of it is quoted
    assert "DEBUG" not in str(raised.value) and "\n" not in str(raised.value)
    assert repr(greeter).endswith("was killed (SIGKILL); " + START_AGAIN + ">")


START_AGAIN = "make a new AgentProcess(...).start() to talk to the agent again"


@pytest.mark.slow
async def test_a_huge_output_line_is_cut_where_errors_and_repr_quote_it(
    tmp_path: Path, processes: list[AgentProcess]
) -> None:
    script = tmp_path / "loud_agent.py"
    script.write_text("print('x' * 1_000_000)\nraise SystemExit('no model configured')\n")
    agent = AgentProcess(script)
    processes.append(agent)
    with pytest.raises(RunnerError) as raised:
        await agent.start().ready()
    message = str(raised.value)
    assert "exited with code 1 before it dialed" in message
    assert "no model configured" in message
    assert re.search(r"x{100}… \(\d+ more characters cut\)", message)
    assert len(message) < 5_000
    assert len(repr(agent)) < 500 and "exited with code 1" in repr(agent)
    assert "x" * 1_000_000 in agent.output  # its output itself is whole


@pytest.mark.slow
async def test_a_model_that_cannot_connect_fails_the_greeting_with_its_error(
    emulator: Emulator, processes: list[AgentProcess]
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens there once closed
    nowhere = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    agent = AgentProcess(SCRIPT, emulator=emulator, env=nowhere)
    processes.append(agent)
    await agent.start().ready()
    with pytest.raises(RunnerError) as raised:
        await agent.greeting(timeout=60)
    message = str(raised.value)
    assert "greets=False" not in message and "did not greet" not in message
    assert re.search(r"realtime model failed.*APIConnectionError", message)
    assert f"Connect call failed ('127.0.0.1', {port})" in message  # livekit's own words
    assert agent.state is RunnerState.FAILED
    with pytest.raises(RunnerError, match="APIConnectionError"):
        await agent.send_text("hello")


async def test_an_emulator_stopped_since_is_refused_at_start_naming_the_fix(
    processes: list[AgentProcess],
) -> None:
    emulator = Emulator().start()
    agent = AgentProcess(SCRIPT, emulator=emulator)
    processes.append(agent)
    emulator.stop()  # its CA file is gone: the agent would fail on a missing SSL_CERT_FILE
    with pytest.raises(EmulatorError, match=r"the emulator is not running: call start\(\)"):
        agent.start()
    assert agent.process is None and agent.state is RunnerState.NEW


async def test_the_printed_command_names_the_one_agent_script_of_the_folder(
    emulator: Emulator,
    processes: list[AgentProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shutil.copy(NOTEBOOKS / "weather_agent.py", tmp_path / "my_weather.py")
    (tmp_path / "helpers.py").write_text("TIMEOUT = 3\n")  # not an agent: no AgentServer
    monkeypatch.chdir(tmp_path)
    agent = AgentProcess(emulator=emulator)
    processes.append(agent)
    agent.start()
    assert " console my_weather.py --connect-addr " in capsys.readouterr().out


def test_a_missing_script_is_refused_naming_the_fix() -> None:
    with pytest.raises(RunnerError, match=r"no agent script at nope\.py.*defines your AgentServer"):
        AgentProcess("nope.py")


@pytest.mark.slow
async def test_a_process_that_exits_before_dialing_says_why(
    tmp_path: Path, processes: list[AgentProcess]
) -> None:
    script = tmp_path / "broken_agent.py"
    script.write_text("raise SystemExit('no model configured: set OPENAI_BASE_URL')\n")
    agent = AgentProcess(script)
    processes.append(agent)
    with pytest.raises(RunnerError, match=r"(?s)exited with code 1 before it dialed.*no model"):
        await agent.start().ready()
    assert agent.state is RunnerState.STOPPED and gone(agent.process)
    assert nothing_listens(agent.address)


@pytest.mark.slow
async def test_a_process_that_never_dials_times_out_naming_the_fix(
    tmp_path: Path, processes: list[AgentProcess]
) -> None:
    script = tmp_path / "silent_agent.py"
    script.write_text(
        "from livekit.agents import AgentServer, JobContext\n"
        "server = AgentServer()\n"
        "@server.rtc_session()\n"
        "async def entrypoint(ctx: JobContext) -> None:\n"
        "    return None  # never starts a session, so it never dials\n"
    )
    agent = AgentProcess(script, start_timeout=3)
    processes.append(agent)
    with pytest.raises(RunnerError, match=r"did not dial.*within 3 s.*session\.start"):
        await agent.start().ready()
    assert agent.state is RunnerState.STOPPED and gone(agent.process)
    assert nothing_listens(agent.address)


async def test_an_agent_of_an_unknown_protocol_version_is_refused(
    emulator: Emulator, processes: list[AgentProcess], capsys: pytest.CaptureFixture[str]
) -> None:
    agent = AgentProcess(emulator=emulator)
    processes.append(agent)
    agent.start()
    printed = capsys.readouterr().out
    assert agent.address is not None and f"--connect-addr 127.0.0.1:{agent.address[1]}" in printed
    peer = TcpSessionTransport(*agent.address)
    await peer.start()  # an agent of a livekit to come dials
    answering = asyncio.create_task(_answer_as(peer, sdk_version="9.0.0"))
    try:
        with pytest.raises(RunnerError, match=r"livekit-agents 9\.0\.0.*does not know"):
            await agent.ready()
    finally:
        answering.cancel()
        await peer.close()
    assert agent.state is RunnerState.STOPPED and nothing_listens(agent.address)


@pytest.mark.slow
async def test_the_printed_command_attaches_as_printed(
    emulator: Emulator,
    processes: list[AgentProcess],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-real-key")
    agent = AgentProcess(emulator=emulator)
    processes.append(agent)
    agent.start()
    printed = capsys.readouterr().out
    command = printed.splitlines()[-1].strip()
    assert "sk-the-users-real-key" not in printed  # the emulator's placeholder, never a real key
    # the user's agent.py (notebook 05's, whose model needs a key), in a shell of its own that
    # has no OpenAI settings and whose plain `python` is not this environment's
    shutil.copy(NOTEBOOKS / "weather_agent.py", tmp_path / "agent.py")
    shell_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    started = subprocess.Popen(  # noqa: ASYNC220
        command, shell=True, cwd=tmp_path, env=shell_env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        await agent.ready()
        result = await agent.run("transfer to weather")
        result.expect.contains_function_call(name="transfer_to_weather")
    finally:
        agent.stop()
        os.killpg(started.pid, signal.SIGTERM)
        started.communicate(timeout=10)


async def test_an_agent_that_never_dials_the_listener_names_where_to_look(
    processes: list[AgentProcess],
) -> None:
    agent = AgentProcess(start_timeout=0.5)
    processes.append(agent)
    with pytest.raises(RunnerError, match=r"(?s)within 0\.5 s.*output of the command.*crash"):
        await agent.start().ready()


async def _answer_as(peer: TcpSessionTransport, sdk_version: str) -> None:
    """A peer speaking the protocol as a future livekit would report itself."""
    async for message in peer:
        request = message.request
        kind = request.WhichOneof("request")
        response = agent_pb.SessionResponse(request_id=request.request_id)
        if kind == "ping":
            response.pong.SetInParent()
        elif kind == "get_framework_info":
            response.get_framework_info.sdk = "python"
            response.get_framework_info.sdk_version = sdk_version
        await peer.send_message(agent_pb.AgentSessionMessage(response=response))


@pytest.mark.slow
async def test_the_checking_guides_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = DOCS / "guides" / "checking.md"
    block = python_block(page, "AgentProcess(")
    # the user's agent.py: PR #5229's agents as a console script
    (tmp_path / "agent.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.upstream.greeter_weather_console import server\n"
    )
    monkeypatch.chdir(tmp_path)
    await run(block, {}, page)
    assert "['GreeterAgent', 'WeatherAgent']" in capsys.readouterr().out


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
async def test_a_turn_sent_during_the_greeting_waits_for_it_and_is_answered(
    emulator: Emulator, processes: list[AgentProcess]
) -> None:
    agent = AgentProcess(SCRIPT, emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    # at once, as a notebook cell does: the greeter is still generating its on_enter greeting
    result = await agent.run("hello")
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    assert reply_of(result) == 'You are a friendly greeter. You said: "hello".'
    # what it said on its own as it started, as NotebookRunner.greeting() gives it
    greeting = await agent.greeting()
    assert isinstance(greeting, RunResult) and greeting.done()
    greeting.expect.next_event().is_agent_handoff(new_agent_type=RemoteAgent)
    greeting.expect.next_event().is_message(role="assistant")
    greeting.expect.no_more_events()
    assert reply_of(greeting) == "You are a friendly greeter. How can I help you?"
    assert await agent.greeting() is greeting


def reply_of(result: RunResult[object]) -> str:
    return "".join(
        e.item.text_content or "" for e in result.events if isinstance(e.item, llm.ChatMessage)
    )


SILENT_AGENT = """
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai

server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(llm=openai.realtime.RealtimeModel(modalities=["text"]))
    await session.start(agent=Agent(instructions="You are Ada."), room=ctx.room)
"""
"""an agent that says nothing until spoken to (no on_enter)"""


@pytest.mark.slow
async def test_an_agent_that_does_not_greet_takes_turns_at_once_when_it_says_so(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    script = tmp_path / "ada.py"
    script.write_text(SILENT_AGENT)
    agent = AgentProcess(script, emulator=emulator, greets=False)
    processes.append(agent)
    await agent.start().ready()
    greeting = await agent.greeting()
    greeting.expect.next_event().is_agent_handoff()  # Ada entered, and said nothing
    greeting.expect.no_more_events()
    assert await agent.send_text("hello") == 'You are Ada. You said: "hello".'


@pytest.mark.slow
async def test_the_views_that_take_a_runner_take_an_agent_process(greeter: AgentProcess) -> None:
    # the greeting may come over before the view exists: the browser asks for what it missed
    await asyncio.wait_for(first_event(greeter.trace, "agent_message"), 30)
    chat = ChatView(greeter)
    browser = Browser(chat)
    graph = AgentGraphView(greeter)  # follows its trace, as a NotebookRunner's
    weather = asyncio.Event()  # the weather agent has spoken
    greeter.trace.subscribe(
        lambda e: weather.set() if e.kind == "agent_message" and e.agent == "WeatherAgent" else None
    )
    turn = chat.say("transfer to weather")
    assert turn is not None
    await asyncio.wait_for(finished(chat, turn, weather), 30)
    assert chat.pending == 0 and chat.error == ""
    lines = browser.lines()
    greeting = ("GreeterAgent", "You are a friendly greeter. How can I help you?")
    weather_said = next(i for i, (who, _) in enumerate(lines) if who == "WeatherAgent")
    assert greeting in lines[:weather_said] and ("you", "transfer to weather") in lines
    assert graph.trace is greeter.trace and graph.current == "WeatherAgent"
