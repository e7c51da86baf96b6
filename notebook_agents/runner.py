"""NotebookRunner and run_app: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel.

The server runs unregistered on a thread and loop of its own (THREAD job executor, HTTP on
127.0.0.1 port 0, no idle processes), so ``start()`` returns at once, the kernel's loop and
signal handlers are never touched, and a blocking cell does not stall the agent. Offline the
job is simulated on a mock room and talks text; with LiveKit credentials it joins a real room.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from livekit.agents import AgentServer, AgentSession, JobContext
from livekit.agents.job import JobExecutorType
from livekit.agents.voice.run_result import ChatMessageEvent, RunResult
from typing_extensions import Self

from . import _session_hook
from ._lifecycle import StartStop
from ._livekit_room import LiveKitCredentials, RealRoom
from ._worker_logs import WorkerLogs
from .errors import RunnerError
from .trace import Trace

Entrypoint = Callable[[JobContext], Awaitable[None]]


# Runners started and not yet stopped: a new runner for the same server or entrypoint stops
# the old one, so re-running a notebook cell never leaves two agents behind.
_running: set[NotebookRunner] = set()
# Loops of runners stopped off the main thread, closed by the next main-thread stop.
_loops_to_close: list[asyncio.AbstractEventLoop] = []


class NotebookRunner(StartStop):
    """Run a LiveKit ``AgentServer`` (or a bare entrypoint) in the kernel, non-blocking.

    ::

        runner = NotebookRunner(server).start()
        await runner.ready()
        reply = await runner.send_text("hi")
        runner.stop()
    """

    def __init__(
        self,
        server: AgentServer | Entrypoint,
        *,
        room: str | None = None,
        livekit_url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.server = _as_server(server)
        self.room_name = room or f"notebook-{uuid.uuid4().hex[:8]}"
        self.credentials = LiveKitCredentials.resolve(livekit_url, api_key, api_secret)
        self.text_only = self.credentials is None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.trace = Trace()
        self.logs = WorkerLogs()
        self.real_room: RealRoom | None = None
        self.session: AgentSession[Any] | None = None
        self.timings: dict[str, float] = {}
        self._key = _entrypoint_key(self.server)
        self._saved_options: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # set when the server thread is done. Waited on instead of Thread.join/is_alive: on
        # Python < 3.12 a KeyboardInterrupt inside join() marks a live thread as dead
        # (cpython#90882), and run_app is interrupted exactly there.
        self._served = threading.Event()
        self._ready: concurrent.futures.Future[AgentSession[Any]] = concurrent.futures.Future()
        self._ctx: JobContext | None = None
        self._job_loop: asyncio.AbstractEventLoop | None = None
        self._entry_task: asyncio.Task[None] | None = None
        self._turn_lock: asyncio.Lock | None = None
        self._stopped = False

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopped

    def start(self) -> Self:
        """Start the server and its job in the background; returns at once."""
        if self._stopped:
            raise RunnerError("this runner was stopped: make a new NotebookRunner to start again")
        if self._thread is not None:
            return self
        for old in list(_running):
            if old.server is self.server or old._key == self._key:
                old.stop()
        if not self.server._closed:
            raise RunnerError(
                "this AgentServer is already running outside notebook-agents; stop it first"
            )
        started = time.perf_counter()
        if self.credentials is not None:
            self.real_room = RealRoom(self.credentials, self.room_name)
            self.real_room.display()
        self._configure_server()
        self.logs.install()
        self._loop = asyncio.new_event_loop()
        # set before the thread starts: the server thread reads it once the worker is up
        self._started_at = started
        self._thread = threading.Thread(
            target=self._serve, name="notebook-agents-server", daemon=True
        )
        self._thread.start()
        _running.add(self)
        self.timings["start"] = time.perf_counter() - started
        return self

    async def ready(self, timeout: float | None = None) -> AgentSession[Any]:
        """Wait until the entrypoint's ``AgentSession`` has started; raise the job's error.

        If the entrypoint fails, the runner is stopped and its error is raised from here.
        """
        self._require_started("ready()")
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(self._ready), timeout or self.start_timeout
            )
        except asyncio.TimeoutError:
            self.stop()
            raise RunnerError(
                f"the agent did not start a session within {timeout or self.start_timeout:.0f} s: "
                "does the entrypoint call `await session.start(...)`?"
            ) from None
        except RunnerError:
            self.stop()
            raise

    async def send_text(self, text: str, timeout: float = 30.0) -> str:
        """One user turn: ``text`` goes to the agent; returns the text it replied (all agents)."""
        turn = self._submit(text, "send_text()")
        try:
            return await asyncio.wait_for(asyncio.wrap_future(turn), timeout)
        except asyncio.TimeoutError:
            raise RunnerError(f"the agent did not answer within {timeout:.0f} s") from None

    def submit_text(self, text: str) -> concurrent.futures.Future[str]:
        """``send_text`` without awaiting: the turn's future, for callbacks such as a widget's.

        Turns queue: each starts when the previous one has finished.
        """
        return self._submit(text, "submit_text()")

    def _submit(self, text: str, what: str) -> concurrent.futures.Future[str]:
        self._require_started(what)
        if not self._ready.done():
            raise RunnerError("the agent is not ready yet: `await runner.ready()` first")
        session = self._ready.result()
        assert self._job_loop is not None and self._turn_lock is not None
        return asyncio.run_coroutine_threadsafe(self._turn(session, text), self._job_loop)

    def stop(self) -> None:
        """Stop without draining, within ``stop_timeout``; safe to call twice."""
        if self._thread is None or self._stopped:
            return
        self._shut_down()
        self._close_loops()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._stopped else "new"
        mode = "offline" if self.text_only else "livekit"
        return f"<NotebookRunner {state} {mode} room={self.room_name!r}>"

    # -- the server thread -----------------------------------------------------------------

    def _configure_server(self) -> None:
        server = self.server
        names = ("_job_executor_type", "_num_idle_processes", "_host", "_port", "_load_fnc")
        self._saved_options = {name: getattr(server, name) for name in names}
        self._saved_options["_entrypoint_fnc"] = server._entrypoint_fnc
        server.update_options(job_executor_type=JobExecutorType.THREAD, num_idle_processes=0)
        # host and port have no public setter after construction
        server._host, server._port = "127.0.0.1", 0
        if server._load_fnc is None:
            server._load_fnc = _no_load  # the default starts a process-wide CPU monitor thread
        if self.credentials is not None:
            self._saved_options.update(
                _ws_url=server._ws_url, _api_key=server._api_key, _api_secret=server._api_secret
            )
            creds = self.credentials
            server.update_options(
                ws_url=creds.url, api_key=creds.api_key, api_secret=creds.api_secret
            )
        server._entrypoint_fnc = self._observed(self._saved_options["_entrypoint_fnc"])

    def _serve(self) -> None:
        loop = self._loop
        assert loop is not None
        try:
            loop.run_until_complete(self._run_server())
        except BaseException as e:
            self._fail(e)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                self._fail(RunnerError("the agent server stopped before a session started"))
            finally:
                self._served.set()

    async def _run_server(self) -> None:
        server = self.server
        server._lock = asyncio.Lock()  # a lock from an earlier run may be bound to its loop
        started = asyncio.Event()
        server.once("worker_started", started.set)
        run = asyncio.create_task(server.run(devmode=True, unregistered=True))
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if run.done():
            waiter.cancel()
            await run
            return
        self.timings["worker_started"] = time.perf_counter() - self._started_at
        if self.real_room is not None:
            await server.simulate_job(self.room_name, **await self.real_room.create())
        else:
            await server.simulate_job(self.room_name, fake_job=True)
        await run

    def _observed(self, entrypoint: Entrypoint) -> Entrypoint:
        runner = self

        @functools.wraps(entrypoint)
        async def observed_entrypoint(ctx: JobContext) -> None:
            runner._ctx = ctx
            runner._job_loop = asyncio.get_running_loop()
            runner._turn_lock = asyncio.Lock()
            runner._entry_task = asyncio.current_task()
            _session_hook.observe_job(ctx, runner)
            try:
                await entrypoint(ctx)
            except asyncio.CancelledError:
                raise
            except BaseException as e:
                runner._fail(e)
                raise
            if runner.session is None:
                runner._fail(
                    RunnerError(
                        "the entrypoint returned without starting an AgentSession: call "
                        "`await session.start(agent=..., room=ctx.room)` in it"
                    )
                )

        return observed_entrypoint

    # _session_hook.SessionObserver
    def session_starting(self, session: AgentSession[Any]) -> None:
        if self.session is None:
            self.session = session
            self.trace.attach(session)

    def session_started(self, session: AgentSession[Any]) -> None:
        if session is self.session and not self._ready.done():
            self.timings["ready"] = time.perf_counter() - self._started_at
            self._ready.set_result(session)

    def _fail(self, error: BaseException) -> None:
        if self._ready.done():
            return
        if not isinstance(error, RunnerError):
            wrapped = RunnerError(f"the agent's entrypoint failed: {error!r}")
            wrapped.__cause__ = error
            error = wrapped
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self._ready.set_exception(error)

    async def _turn(self, session: AgentSession[Any], text: str) -> str:
        assert self._turn_lock is not None
        async with self._turn_lock:  # AgentSession.run cannot nest
            try:
                result: RunResult[Any] = session.run(user_input=text)
            except Exception:
                # run() registers the run before generating the reply; when generating raises
                # (an agent without an LLM, say) the run stays open and livekit refuses every
                # later turn as "nested": forget it, so the next turn reports its own error
                stale = session._global_run_state
                if stale is not None and not stale.done():
                    session._global_run_state = None
                raise
            await result
        return "\n".join(
            event.item.text_content or ""
            for event in result.events
            if isinstance(event, ChatMessageEvent) and event.item.role == "assistant"
        )

    # -- stopping --------------------------------------------------------------------------

    def _shut_down(self) -> None:
        """Everything but closing our loop; safe off the main thread and across interrupts."""
        self._stopped = True
        loop, thread = self._loop, self._thread
        assert loop is not None and thread is not None
        started = time.perf_counter()
        if self._entry_task is not None and self._job_loop is not None:
            # an entrypoint still awaiting would hold the job open for livekit's 15 s timeout
            with contextlib.suppress(RuntimeError):
                self._job_loop.call_soon_threadsafe(self._entry_task.cancel)
        if not loop.is_closed() and not self._served.is_set():
            closing = asyncio.run_coroutine_threadsafe(self.server.aclose(), loop)
            with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                closing.result(self.stop_timeout)
        if self._served.wait(self.stop_timeout):
            thread.join()  # only returning is left to it
        self._fail(RunnerError("the runner was stopped"))
        self._restore_server()
        self.trace.detach()
        self.logs.uninstall()
        if self._ctx is not None:
            _session_hook.forget_job(self._ctx)
        _running.discard(self)
        if not _running:
            _release_mock_room()
        self.timings["stop"] = time.perf_counter() - started
        _loops_to_close.append(loop)
        if not self._served.is_set():
            raise RunnerError(
                f"the agent server did not stop within {self.stop_timeout:.0f} s; its thread "
                "is a daemon and ends with the kernel"
            )

    def _close_loops(self) -> None:
        # asyncio loops may only be closed from the main thread here; a loop still running
        # (a server that would not stop) is left to end with the kernel.
        if threading.current_thread() is not threading.main_thread():
            return
        for loop in list(_loops_to_close):
            if not loop.is_running():
                loop.close()
                _loops_to_close.remove(loop)

    def _restore_server(self) -> None:
        for name, value in self._saved_options.items():
            setattr(self.server, name, value)

    def _require_started(self, what: str) -> None:
        if self._thread is None:
            raise RunnerError(f"{what} needs a started runner: call runner.start() first")
        if self._stopped and what != "ready()":
            raise RunnerError(f"{what}: the runner is stopped; make a new NotebookRunner")


def run_app(server: AgentServer | Entrypoint, **options: Any) -> NotebookRunner:
    """Blocking drop-in for ``livekit.agents.jupyter.run_app``: runs until interrupted.

    The first kernel interrupt stops the agent cleanly (no drain); further interrupts during
    that stop are absorbed, so the kernel survives.
    """
    runner = NotebookRunner(server, **options).start()
    try:
        while not runner._served.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        _stop_through_interrupts(runner)
    return runner


def _stop_through_interrupts(runner: NotebookRunner) -> None:
    if runner._stopped:
        return
    stopped = threading.Event()  # not Thread.join: see NotebookRunner._served

    def stop() -> None:
        try:
            runner._shut_down()
        finally:
            stopped.set()

    stopper = threading.Thread(target=stop, name="notebook-agents-stop")
    stopper.start()
    # already stopping: another interrupt must not abandon the stop midway. Interrupts sent
    # back to back can land while the inner handler runs, hence the outer one
    while not stopped.is_set():
        try:
            while not stopped.is_set():
                try:  # noqa: SIM105 (suppress() runs Python code an interrupt can land in)
                    stopped.wait(0.2)
                except KeyboardInterrupt:
                    pass
        except KeyboardInterrupt:
            pass
    runner._close_loops()


def _as_server(server: AgentServer | Entrypoint) -> AgentServer:
    if isinstance(server, AgentServer):
        if server._entrypoint_fnc is None:
            raise RunnerError(
                "this AgentServer has no entrypoint: decorate an async function with "
                "@server.rtc_session()"
            )
        return server
    if asyncio.iscoroutinefunction(server):
        built = AgentServer()
        built.rtc_session()(server)
        return built
    raise RunnerError(
        f"NotebookRunner needs a livekit AgentServer or an async entrypoint(ctx), "
        f"not {type(server).__name__}"
    )


def _entrypoint_key(server: AgentServer) -> tuple[str, str]:
    entrypoint = server._entrypoint_fnc
    return (getattr(entrypoint, "__module__", ""), getattr(entrypoint, "__qualname__", ""))


def _no_load(*_: Any) -> float:
    return 0.0


def _release_mock_room() -> None:
    """livekit caches one mock room per process; its call records pin every finished job."""
    from livekit.agents.ipc.mock_room import create_mock_room

    create_mock_room().reset_mock()
