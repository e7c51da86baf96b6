"""NotebookRunner in-process: production entrypoints offline, bad input, real-room mode."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from livekit import api
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai

from notebook_agents import NotebookRunner, RunnerError
from notebook_agents import _livekit_internals as livekit_internals
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from tests.conftest import API_KEY, started


def production_server(
    emulator: Emulator, instructions: str = "You are Ada. Be kind."
) -> AgentServer:
    """An agent exactly as it would deploy: default room options, no VAD/STT/TTS given."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            llm=openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        )
        await session.start(agent=Agent(instructions=instructions), room=ctx.room)

    return server


async def test_production_entrypoint_runs_offline_unchanged(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(production_server(emulator))
    runners.append(runner)
    assert runner.start() is runner
    session = await runner.ready()
    assert session is runner.session
    # the offline room is text-only: no audio track is published or read
    assert session.output.audio is None and session.input.audio is None

    assert await runner.send_text("hello there") == 'You are Ada. You said: "hello there".'
    assert await runner.send_text("what is 6 times 7") == "You are Ada. 6 * 7 = 42."
    kinds = [event.kind for event in runner.trace.events]
    assert kinds.count("user_message") == 2 and kinds.count("agent_message") == 2
    # submitted without awaiting (a widget's callback): the turns queue in order
    first, second = runner.submit_text("one"), runner.submit_text("what is 2 times 3")
    assert await asyncio.wrap_future(second) == "You are Ada. 2 * 3 = 6."
    assert first.result() == 'You are Ada. You said: "one".'
    users = [e.data["text"] for e in runner.trace.of_kind("user_message")]
    assert users[-2:] == ["one", "what is 2 times 3"]
    assert any("starting worker" in line.message for line in runner.logs.lines)

    runner.stop()
    assert not runner.running
    assert runner.trace.events[-1].kind == "closed"
    runner.stop()  # twice is fine


async def test_bare_entrypoint_and_context_manager(
    emulator: Emulator, no_livekit_env: None
) -> None:
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            llm=openai.realtime.RealtimeModel(
                base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
            )
        )
        await session.start(agent=Agent(instructions="You are Bo."), room=ctx.room)

    with NotebookRunner(entrypoint) as runner:
        await runner.ready()
        assert await runner.send_text("hi") == 'You are Bo. You said: "hi".'
    assert not runner.running


async def test_a_new_runner_stops_the_previous_one_for_the_same_server(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    server = production_server(emulator)
    first = NotebookRunner(server).start()
    runners.append(first)
    await first.ready()
    second = NotebookRunner(server).start()
    runners.append(second)
    assert not first.running
    await second.ready()
    assert (await second.send_text("again")).endswith('"again".')


def test_not_a_server_or_entrypoint_is_a_clear_error() -> None:
    with pytest.raises(RunnerError, match="AgentServer or an async entrypoint"):
        NotebookRunner("agent.py")  # type: ignore[arg-type]
    with pytest.raises(RunnerError, match=r"@server.rtc_session\(\)"):
        NotebookRunner(AgentServer())


async def test_entrypoint_error_surfaces_from_ready_and_stops_the_runner(
    runners: list[NotebookRunner],
) -> None:
    async def entrypoint(ctx: JobContext) -> None:
        raise ValueError("the agent's config is broken")

    runner = NotebookRunner(entrypoint)
    runners.append(runner)
    runner.start()
    with pytest.raises(RunnerError, match="config is broken") as raised:
        await runner.ready()
    assert isinstance(raised.value.__cause__, ValueError)
    assert not runner.running
    with pytest.raises(RunnerError, match="stopped"):
        await runner.send_text("hello")


async def test_entrypoint_without_a_session_is_a_clear_error(
    runners: list[NotebookRunner],
) -> None:
    async def entrypoint(ctx: JobContext) -> None:
        return None

    runner = NotebookRunner(entrypoint)
    runners.append(runner)
    runner.start()
    with pytest.raises(RunnerError, match=r"session.start"):
        await runner.ready()


async def test_a_turn_that_cannot_start_does_not_block_the_next(
    runners: list[NotebookRunner],
) -> None:
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession()  # no model at all: every reply fails
        await session.start(agent=Agent(instructions="You are Cy."), room=ctx.room)

    runner = await started(runners, NotebookRunner(entrypoint))
    for text in ("hello", "hello again"):  # the same clear error each time, never "nested runs"
        with pytest.raises(RuntimeError, match="without an LLM model"):
            await runner.send_text(text)


async def test_send_text_before_start_before_ready_and_after_stop(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    started = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    async def entrypoint(ctx: JobContext) -> None:
        loop.call_soon_threadsafe(started.set)
        await asyncio.to_thread(release.wait)  # hold the job before its session starts
        session: AgentSession[None] = AgentSession(
            llm=openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        )
        await session.start(agent=Agent(instructions="You are Cy."), room=ctx.room)

    runner = NotebookRunner(entrypoint)
    runners.append(runner)
    with pytest.raises(RunnerError, match=r"runner.start\(\)"):
        await runner.send_text("too early")
    runner.start()
    await started.wait()
    with pytest.raises(RunnerError, match=r"await runner.ready\(\)"):
        await runner.send_text("still too early")
    release.set()
    await runner.ready()
    runner.stop()
    with pytest.raises(RunnerError, match="stopped"):
        await runner.send_text("too late")
    with pytest.raises(RunnerError, match="new NotebookRunner"):
        runner.start()


async def test_entrypoint_that_never_returns_still_stops(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            llm=openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        )
        await session.start(agent=Agent(instructions="You are Di."), room=ctx.room)
        await asyncio.Event().wait()  # a common mistake: keep the entrypoint "alive"

    # livekit alone would wait 15 s for such a job; past stop_timeout stop() would raise
    runner = await started(runners, NotebookRunner(entrypoint, stop_timeout=5))
    runner.stop()
    assert not runner.running


class StuckTool(Agent):
    """An agent whose tools never return: one awaits what never comes, one blocks its loop
    until ``unblock`` is set."""

    def __init__(self, unblock: threading.Event | None = None) -> None:
        super().__init__(instructions="You are Sy.")
        self.unblock = unblock or threading.Event()
        self.blocking = threading.Event()

    @function_tool
    async def wait_forever(self, context: RunContext[None]) -> str:
        """Wait for something that never comes."""
        await asyncio.Event().wait()
        return "never"

    @function_tool
    async def block_the_loop(self, context: RunContext[None]) -> str:
        """Block the agent's loop."""
        self.blocking.set()
        self.unblock.wait()  # synchronous: nothing else on the job's loop runs meanwhile
        return "unblocked"


def stuck_tool_server(emulator: Emulator, agent: StuckTool | None = None) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            llm=openai.realtime.RealtimeModel(
                base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
            )
        )
        await session.start(agent=agent or StuckTool(), room=ctx.room)

    return server


AGENT_THREADS = ("notebook-agents-server", "notebook-agents-stop", "job_thread_runner")


def agent_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name in AGENT_THREADS)


async def test_a_tool_that_never_returns_times_out_its_turn_and_stop_ends_it(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(stuck_tool_server(emulator), stop_timeout=5))
    with pytest.raises(RunnerError) as late:
        await runner.send_text("wait forever", timeout=1)
    assert str(late.value).startswith(
        "the agent did not answer within 1 s: its tool wait_forever() had not returned; the "
        "turn is withdrawn"
    )
    # withdrawn: the next turn is answered (it was refused: "nested runs are not supported")
    assert await runner.send_text("hi") == 'You are Sy. You said: "hi".'
    # a stuck tool when the stop comes: livekit's close awaited it for 60 s, past the stop's
    # bound (stop() raised and said stopped while the job and server threads ran on)
    stuck = runner.submit_text("wait forever")
    calls = "[e.data['name'] for e in runner.trace.of_kind('tool_call')]"
    await until(lambda: [e.data["name"] for e in runner.trace.of_kind("tool_call")] == [
        "wait_forever", "wait_forever"
    ], calls)  # fmt: skip
    runner.stop()
    assert runner.state is RunnerState.STOPPED
    assert agent_threads() == []
    assert isinstance(stuck.exception(), RunnerError)  # the turn says the stop cut it


async def test_a_job_that_cannot_be_ended_is_said_so_and_not_called_stopped(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    agent = StuckTool()
    runner = await started(runners, NotebookRunner(stuck_tool_server(emulator, agent)))
    runner.stop_timeout = 1
    blocked = runner.submit_text("block the loop")  # its outcome races the stop
    try:
        await asyncio.to_thread(agent.blocking.wait, 30)
        with pytest.raises(RunnerError, match="did not end within stop_timeout=1 s"):
            runner.stop()
        # not stopped: its threads still run, as the error says
        assert runner.state is RunnerState.STOPPING and not runner.running
        assert "notebook-agents-server" in agent_threads()
    finally:
        agent.unblock.set()

    def stopped() -> bool:  # read anew: the job ends on its own now
        return runner.state is RunnerState.STOPPED

    await until(stopped, "runner.state")
    runner.stop()  # stopped: nothing left to wait for
    await until(lambda: agent_threads() == [], "agent_threads()")
    blocked.cancel()


async def until(condition: Any, what: str, timeout: float = 30.0) -> None:
    """Wait for ``condition()`` to hold, checking every 10 ms."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"{what} never held"
        await asyncio.sleep(0.01)


# -- real-room mode, up to the server boundary ---------------------------------------------


class RoomServiceStub:
    """LiveKit's RoomService on 127.0.0.1: records CreateRoom and answers it."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.tokens: list[str] = []
        self.room_created = asyncio.Event()

    async def create_room(self, request: web.Request) -> web.Response:
        self.tokens.append(request.headers["Authorization"].removeprefix("Bearer "))
        create = api.CreateRoomRequest.FromString(await request.read())
        self.created.append(create.name)
        self.room_created.set()
        room = api.Room(sid="RM_stub", name=create.name)
        return web.Response(body=room.SerializeToString(), content_type="application/protobuf")


@pytest.fixture
async def room_service() -> AsyncIterator[tuple[str, RoomServiceStub]]:
    stub = RoomServiceStub()
    app = web.Application()
    app.router.add_post("/twirp/livekit.RoomService/CreateRoom", stub.create_room)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"ws://127.0.0.1:{port}", stub
    await runner.cleanup()


def test_partial_credentials_name_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVEKIT_URL", "wss://example.livekit.cloud")
    monkeypatch.delenv("LIVEKIT_API_KEY", raising=False)
    monkeypatch.delenv("LIVEKIT_API_SECRET", raising=False)
    with pytest.raises(RunnerError, match="LIVEKIT_API_KEY, LIVEKIT_API_SECRET"):
        NotebookRunner(idle_server())


def idle_server() -> AgentServer:
    """A server whose entrypoint starts nothing: enough to reach the room set-up."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        return None

    return server


async def test_real_mode_creates_the_room_with_short_room_scoped_tokens(
    room_service: tuple[str, RoomServiceStub],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, stub = room_service
    secret = "stub-secret-0123456789abcdef0123456789"
    runner = NotebookRunner(idle_server(), livekit_url=url, api_key="stubkey", api_secret=secret)
    try:
        assert not runner.text_only
        runner.start()
        await asyncio.wait_for(stub.room_created.wait(), 10)
        assert stub.created == [runner.room_name]
        assert runner.real_room is not None
        claims = api.TokenVerifier("stubkey", secret).verify(runner.real_room.user_token)
        assert claims.video is not None and claims.video.room == runner.room_name
        assert claims.video.room_join and not claims.video.room_create
        assert 0 < _token_ttl_s(runner.real_room.user_token) <= 600
    finally:
        runner.stop()
    # the secret is never printed; the join widget shows only the short-lived user token
    assert secret not in capsys.readouterr().out
    assert all(secret not in line.message for line in runner.logs.lines)


def _token_ttl_s(token: str) -> float:
    import jwt

    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return float(claims["exp"] - claims["nbf"])


@pytest.fixture
def unset_livekit_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of what livekit's ``run`` writes is set by the user."""
    for name in livekit_internals.RUN_WRITES_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("first_to_stop", ["with credentials", "offline"])
async def test_credentials_given_to_one_runner_reach_no_other(
    room_service: tuple[str, RoomServiceStub],
    emulator: Emulator,
    unset_livekit_environment: None,
    first_to_stop: str,
) -> None:
    """livekit writes a running server's credentials into ``os.environ``: a runner started
    offline meanwhile stays offline, the credentials leave with the runner they were given
    to, and whichever stops first, the user's environment is back as it was."""
    environment = dict(os.environ)
    url, stub = room_service
    secret = "stub-secret-0123456789abcdef0123456789"
    real = NotebookRunner(idle_server(), livekit_url=url, api_key="stubkey", api_secret=secret)
    offline: NotebookRunner | None = None
    try:
        real.start()
        await asyncio.wait_for(stub.room_created.wait(), 10)
        assert os.environ.get("LIVEKIT_API_SECRET") == secret  # livekit's run wrote it

        offline = NotebookRunner(production_server(emulator))  # another cell, meanwhile
        assert offline.credentials is None and offline.text_only
        offline.start()
        await offline.ready()
        assert await offline.send_text("hi") == 'You are Ada. You said: "hi".'

        if first_to_stop == "with credentials":
            real.stop()
            assert dict(os.environ) == environment  # gone with it, the other still runs
            offline.stop()
        else:
            offline.stop()
            assert os.environ.get("LIVEKIT_API_SECRET") == secret  # its job may need them
            real.stop()
    finally:
        real.stop()
        if offline is not None:
            offline.stop()
    assert dict(os.environ) == environment


async def test_what_the_user_sets_while_a_runner_runs_is_theirs(
    emulator: Emulator, unset_livekit_environment: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user may set credentials while a runner runs (a later cell loads a .env): a runner
    made after resolves them, and stopping the one that ran leaves them set."""
    offline = NotebookRunner(production_server(emulator))
    try:
        offline.start()
        await offline.ready()
        user = {  # never contacted: the runner made with them is not started
            "LIVEKIT_URL": "ws://127.0.0.1:7880",
            "LIVEKIT_API_KEY": "userkey",
            "LIVEKIT_API_SECRET": "user-secret-0123456789abcdef0123456789",
        }
        for name, value in user.items():
            monkeypatch.setenv(name, value)
        later = NotebookRunner(idle_server())
        assert later.credentials is not None
        assert later.credentials.url == user["LIVEKIT_URL"]
    finally:
        offline.stop()
    assert {name: os.environ.get(name) for name in user} == user


async def test_a_stopped_runners_credentials_leave_while_another_runs(
    room_service: tuple[str, RoomServiceStub], unset_livekit_environment: None
) -> None:
    """Two runners with credentials of their own: once one stops, ``os.environ`` holds the
    other's (livekit wrote them for it; its jobs may read them), not the stopped one's."""
    environment = dict(os.environ)
    url, stub = room_service
    secrets = {key: f"{key}-secret-0123456789abcdef0123456789" for key in ("first", "second")}
    first, second = (
        NotebookRunner(idle_server(), livekit_url=url, api_key=key, api_secret=secret)
        for key, secret in secrets.items()
    )
    try:
        first.start()
        await asyncio.wait_for(stub.room_created.wait(), 10)
        stub.room_created.clear()
        second.start()
        await asyncio.wait_for(stub.room_created.wait(), 10)
        assert os.environ.get("LIVEKIT_API_SECRET") == secrets["second"]  # run wrote it last

        second.stop()
        assert os.environ.get("LIVEKIT_API_KEY") == "first"
        assert os.environ.get("LIVEKIT_API_SECRET") == secrets["first"]
    finally:
        first.stop()
        second.stop()
    assert dict(os.environ) == environment


def _dead(*objects: object) -> Callable[[], list[str]]:
    """What of ``objects`` is still alive after a full collection (by type name)."""
    refs = [weakref.ref(o) for o in objects]
    del objects

    def alive() -> list[str]:
        gc.collect()
        return [type(o).__name__ for o in (ref() for ref in refs) if o is not None]

    return alive


async def collected(alive: Callable[[], list[str]], timeout: float = 10.0) -> None:
    """Wait until nothing of ``alive`` is left. What may hold an object a little longer is
    not a leak: this step of the test's task, woken by the turn's future (which holds its
    RunResult until the step ends), and the job's thread handing the future's result to this
    loop (a callback queued here, holding it until it runs): on a loaded machine, later."""
    deadline = asyncio.get_running_loop().time() + timeout
    while left := alive():
        assert asyncio.get_running_loop().time() < deadline, f"still alive: {left}"
        await asyncio.sleep(0.05)


async def test_a_stopped_runner_its_session_and_its_loops_are_collectable(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The user's server outlives its runners (it stays in the notebook's variables): it
    keeps no stopped runner, nor its session and loops, once the turns' results are gone
    (a RunResult holds its session: livekit's). livekit's server keeps the loop it last ran
    on, closed: one, never one a run."""
    server = production_server(emulator)
    made: list[list[object]] = []  # what each run made
    for _ in range(2):
        runner = await started(runners, NotebookRunner(server))
        greeting = await runner.greeting()
        result = await runner.run("hello")
        result.expect.next_event().is_message(role="assistant")
        made.append([runner, runner.session, runner._job_loop, runner._loop, greeting, result])
        runner.stop()
        runners.clear()
        del runner, greeting, result
    server_loop = made[1].pop(3)
    assert isinstance(server_loop, asyncio.AbstractEventLoop) and server_loop.is_closed()
    alive = _dead(*made[0], *made[1])
    del made
    await collected(alive)


async def test_a_stopped_runners_trace_holds_no_session(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(production_server(emulator)))
    await runner.send_text("hello")
    trace = runner.trace
    alive = _dead(runner, runner.session)
    runner.stop()
    runners.clear()
    del runner
    await collected(alive)
    assert [e.data["text"] for e in trace.of_kind("user_message")] == ["hello"]


async def test_a_turn_without_words_is_refused_naming_the_fix(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """An empty typed turn has nothing for the agent to hear: refused at once, in every typed
    door, with what to do instead; the call goes on."""
    runner = await started(runners, NotebookRunner(production_server(emulator)))
    for text in ("", "   \n"):
        with pytest.raises(RunnerError, match=r"the caller's words.*generate_reply"):
            await runner.send_text(text)
        with pytest.raises(RunnerError, match=r"the caller's words"):
            await runner.run(text)
        with pytest.raises(RunnerError, match=r"the caller's words"):
            runner.submit_text(text)
    assert await runner.send_text("Hello") == 'You are Ada. You said: "Hello".'
