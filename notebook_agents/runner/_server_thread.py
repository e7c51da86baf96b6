"""The kernel runner's server: the user's ``AgentServer`` run unregistered on a thread and loop
of its own (THREAD job executor, HTTP on 127.0.0.1 port 0, no idle processes), so ``start()``
returns at once, the kernel's loop and signal handlers are never touched, and a blocking cell
does not stall the agent; and its stop, on a thread of its own, without draining.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from livekit.agents import AgentServer, AgentSession, JobContext, JobExecutorType

from .. import _livekit_internals as livekit
from ..trace.livekit_spans import capture_spans
from . import _environment
from ._core import RunnerCore, RunnerState
from ._kernel_loops import close_retired, retire
from ._real_room import LiveKitCredentials, RealRoom
from ._worker_logs import WorkerLogs
from .errors import RunnerError

Entrypoint = Callable[[JobContext], Awaitable[None]]


class ServerThread(RunnerCore[AgentSession[Any]]):
    """The server's thread and loop, its one job's start, and the stop (the job observer
    says what the job's entrypoint is, and what a stop releases of the job)."""

    _mocks_elsewhere = ""  # its agents run in the kernel: a cell's mocks go into the job

    def _init_server_thread(
        self, server: AgentServer, room_name: str, credentials: LiveKitCredentials | None
    ) -> None:
        self.server = server
        self.room_name = room_name
        self.credentials = credentials
        self.text_only = credentials is None
        self.logs = WorkerLogs()
        self.real_room: RealRoom | None = None
        self.timings: dict[str, float] = {}
        self._saved_options: dict[str, Any] = {}
        self._environment_held: object | None = None
        self._started_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._job_thread: threading.Thread | None = None  # livekit's, the job's entrypoint's
        # set when the server thread is done. Waited on instead of Thread.join/is_alive: on
        # Python < 3.12 a KeyboardInterrupt inside join() marks a live thread as dead
        # (cpython#90882), and run_app is interrupted exactly there.
        self._served = threading.Event()
        self._release_spans: Callable[[], None] = _nothing_to_release
        # the stop runs on a thread of its own, so an interrupted stop() finishes anyway
        self._stopper: threading.Thread | None = None
        self._stop_done = threading.Event()
        self._stop_ran = False
        self._shut_down_lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._stop_signal: asyncio.Event | None = None  # the same, on the server's loop
        self._serve_began = threading.Event()

    def _start_server(self) -> None:
        """The room (with credentials), the server set up, its thread started; stopped again
        if anything (an interrupt) goes wrong on the way."""
        try:
            if self.credentials is not None:
                self.real_room = RealRoom(self.credentials, self.room_name)
                self.real_room.display()
            self._configure_server()
            self._loop = asyncio.new_event_loop()
            self._stop_signal = asyncio.Event()
            self._thread = threading.Thread(
                target=self._serve, name="notebook-agents-server", daemon=True
            )
            self._thread.start()
        except BaseException:
            self.stop()
            raise

    def _observed(self, entrypoint: Entrypoint) -> Entrypoint:
        """``entrypoint`` as the runner runs it (the job observer's)."""
        raise NotImplementedError

    def _give_up_in_job(self) -> None:
        """On the job's loop as the stop begins (the job observer's)."""
        raise NotImplementedError

    def _release_job(self) -> None:
        """What the job held, released as the stop ends (the job observer's)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop without draining, within ``stop_timeout``; safe to call again at any time.

        Tools still running are cancelled, as a turn still going is. The stop runs on a
        thread of its own: interrupted, it still completes, and a second ``stop()`` waits for
        it to finish. A job that does not end in time (code blocking its loop) is a
        ``RunnerError`` saying so, and the runner stays ``stopping`` until it ends.
        """
        if self.state in (RunnerState.NEW, RunnerState.STOPPED):
            return
        again = self._stop_done.is_set()
        self._begin_stop()
        _wait_lock_free(self._stop_done, longest_pause=0.001)  # milliseconds away
        if again:  # for a job that would not end the first time: waited for once more
            _wait_lock_free(self._served, longest_pause=0.05, timeout=self.stop_timeout)
        self._settle_stopped()
        close_retired()
        if not self._served.is_set():
            raise RunnerError(
                f"the agent's job did not end within stop_timeout={self.stop_timeout:g} s: "
                "code in it blocks its loop or ignores being cancelled (a tool, the "
                "entrypoint, a callback). The runner is stopping, not stopped: its threads "
                "end when that code returns (runner.state becomes 'stopped'), else with the "
                "kernel; runner.stop() again waits once more"
            )

    def _settle_stopped(self) -> None:
        """Stopped once the stop has run and the server thread has ended: called by each as
        it is done, so the last one sees both (one that never ends leaves it stopping)."""
        if self._stop_ran and self._served.is_set():
            self.state = RunnerState.STOPPED

    def _begin_stop(self) -> None:
        """Start the stopping thread unless one was started: no lock here (an interrupt could
        land while one is held); two at once are harmless, ``_shut_down`` runs once."""
        if self._stopper is not None:
            return
        self.state = RunnerState.STOPPING
        stopper = threading.Thread(target=self._shut_down, name="notebook-agents-stop", daemon=True)
        stopper.start()
        self._stopper = stopper  # only once started: an interrupt in start() tries again

    def _configure_server(self) -> None:
        server = self.server
        # saved before anything changes: an interrupt in between leaves nothing to guess
        self._saved_options = livekit.server_options(server)
        server.update_options(job_executor_type=JobExecutorType.THREAD, num_idle_processes=0)
        livekit.serve_on_loopback(server)
        # the job's loop monitor samples the kernel's threads: safe only so on CPython 3.11
        livekit.collect_no_garbage_while_sampling_stacks()
        if server.load_fnc is None:
            server.load_fnc = _no_load  # the default starts a process-wide CPU monitor thread
        # offline, none: what the server took from os.environ when it was made may be what
        # livekit wrote there for another runner, and run() would write it again
        creds = self.credentials or LiveKitCredentials("", "", "")
        server.update_options(ws_url=creds.url, api_key=creds.api_key, api_secret=creds.api_secret)
        self._environment_held = _environment.hold(livekit.environment_run_writes(server))
        livekit.set_entrypoint(server, self._observed(self._saved_options["_entrypoint_fnc"]))

    def _serve(self) -> None:
        self.logs.claim_thread()
        self._serve_began.set()
        loop = self._loop
        assert loop is not None and self._stop_signal is not None
        try:
            if not self._stop_requested.is_set():  # stopped before this thread even ran
                # here, not on the kernel's main thread: Logger.setLevel holds logging's module
                # lock with no try/finally, and an interrupt there would leave it held for good
                # (every other thread's next log call then waits forever)
                self.logs.install()
                loop.run_until_complete(self._run_server(self._stop_signal))
        except BaseException as e:
            self._fail(e)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                self._fail(RunnerError("the agent server stopped before a session started"))
            finally:
                if self._job_thread is not None:
                    # livekit's executor is closed once its thread has said it is done, just
                    # before that thread returns: served means the job's thread is gone too
                    self._job_thread.join()
                self._served.set()
                self._settle_stopped()

    async def _run_server(self, stop: asyncio.Event) -> None:
        """Run the server and its one job until ``stop`` is set, then close it (no drain)."""
        server = self.server
        livekit.renew_server_lock(server)
        # before the job: livekit's first span (``job_entrypoint``) starts ahead of our code
        self._release_spans = capture_spans(self.trace, self.room_name)
        started = asyncio.Event()
        server.once("worker_started", started.set)
        run = asyncio.create_task(server.run(devmode=True, unregistered=True))
        up = asyncio.create_task(started.wait())
        stopped = asyncio.create_task(stop.wait())
        try:
            # until the worker is up, closing it would be a no-op that run() then overrides
            await asyncio.wait({run, up}, return_when=asyncio.FIRST_COMPLETED)
            if up.done() and not stop.is_set():
                self.timings["worker_started"] = time.perf_counter() - self._started_at
                try:
                    # not cancelled by a stop: a half-launched job would hold aclose() up
                    await self._start_job()
                except Exception as e:
                    self._fail(e)
                else:
                    await asyncio.wait({run, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            up.cancel()
            stopped.cancel()
            try:
                if not run.done():
                    # the job never started or the runner stops: its HTTP listener goes too
                    await server.aclose()
                await run
            finally:
                self._release_spans()  # after the job: its closing spans are the trace's too

    async def _start_job(self) -> None:
        if self.real_room is not None:
            await self.server.simulate_job(self.room_name, **await self.real_room.create())
        else:
            # here, on the server's thread: livekit makes its offline room on the job's loop
            # otherwise, where the first one in a kernel (~60 ms of mocks, cached after) is
            # reported as a blocked event loop
            livekit.name_mock_room_by_job()
            livekit.quiet_mock_room()
            await self.server.simulate_job(self.room_name, fake_job=True)

    def _shut_down(self) -> None:
        """Everything but closing our loop: on the stopping thread, whatever was started."""
        # only stopping threads take this lock, and no interrupt lands on them
        with self._shut_down_lock:
            if not self._stop_done.is_set():
                self._shut_down_once()

    def _shut_down_once(self) -> None:
        started = time.perf_counter()
        try:
            self._stop_server()
        finally:
            self._fail(RunnerError(self._stopped_message()))
            livekit.restore_server_options(self.server, self._saved_options)
            _environment.release(self._environment_held)
            self._release_job()
            self.logs.uninstall()
            self._unregister()
            livekit.release_mock_room()
            if self._loop is not None:
                retire(self._loop)
            self.timings["stop"] = time.perf_counter() - started
            self._stop_ran = True
            self._settle_stopped()
            self._stop_done.set()

    def _stop_server(self) -> None:
        self._stop_requested.set()
        loop, thread, signal = self._loop, self._thread, self._stop_signal
        if loop is None or thread is None or signal is None:
            self._served.set()  # interrupted before the server thread was made
            return
        if not self._serve_began.wait(_THREAD_START_S):
            self._served.set()  # interrupted inside Thread.start(), before it started
            return
        if self._job_loop is not None:
            with contextlib.suppress(RuntimeError):  # first, before the session closes
                self._job_loop.call_soon_threadsafe(self._give_up_in_job)
        with contextlib.suppress(RuntimeError):  # the server's loop is already done
            loop.call_soon_threadsafe(signal.set)
        if self._served.wait(self.stop_timeout):
            thread.join()  # only returning is left to it


_THREAD_START_S = 1.0
"""a started thread runs within this; a stop waits no longer to learn it never started"""


def _wait_lock_free(
    event: threading.Event, longest_pause: float, timeout: float | None = None
) -> None:
    """``event.wait(timeout)`` for the kernel's main thread, without taking the event's lock.

    A kernel interrupt lands in whatever the main thread runs; inside ``Event.wait`` it can
    leave the event's lock held for good, and the thread that then sets the event hangs
    (a stop that never ends). Polling the flag takes no lock.
    """
    pause = 0.0001
    deadline = None if timeout is None else time.monotonic() + timeout
    while not event.is_set() and (deadline is None or time.monotonic() < deadline):
        time.sleep(pause)
        pause = min(pause * 2, longest_pause)


def _nothing_to_release() -> None:
    """No job started yet, so no spans are being captured."""


def _no_load(*_: Any) -> float:
    return 0.0
