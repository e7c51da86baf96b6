"""NotebookRunner and run_app: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel.

The server runs unregistered on a thread and loop of its own (``_server_thread``), so
``start()`` returns at once, the kernel's loop and signal handlers are never touched, and a
blocking cell does not stall the agent. Offline the job is simulated on a mock room and talks
text (``_typed_turns``) or, with ``audio=True``, speaks (``_voice``); with LiveKit credentials
it joins a real room. The runner follows its job's first session (``_job_observer``); the
lifecycle it shares with every runner is ``_core``'s.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, ClassVar

from livekit.agents import Agent, AgentServer, AgentSession
from typing_extensions import Self

from .. import _livekit_internals as livekit
from .._deprecated import warn_renamed
from ..trace import ModelServer, Trace
from . import _failed_expectation
from ._core import RunnerState, reply_text
from ._kernel_loops import close_retired, wait_awake
from ._model_server import InProcessEmulators
from ._real_room import LiveKitCredentials
from ._server_thread import Entrypoint, _wait_lock_free
from ._voice import Voice
from .errors import EntrypointError, RunnerError

__all__ = ["Entrypoint", "NotebookRunner", "RunnerState", "reply_text", "run_app"]


class NotebookRunner(Voice):
    """Run a LiveKit ``AgentServer`` (or a bare entrypoint) in the kernel, non-blocking.

        runner = NotebookRunner(server).start()
        await runner.ready()
        reply = await runner.send_text("hi")
        runner.stop()

    Offline the session is text-only; ``audio=True`` gives it a speaker that plays in real
    time, so an agent with a TTS speaks its replies, kept in ``runner.recording``.

    After each turn the agent's chat context is held against its realtime model's
    conversation: the plugin's view, and the model's own where it can be read
    (``model_server``; by default any ``Emulator`` running in this process that serves the
    session). A turn answered while they disagree raises ``TurnError``.
    """

    agent_base: ClassVar[type[Any]] = Agent
    """its agents are livekit's"""
    _failed_as = "the agent's entrypoint failed"

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
        audio: bool = False,
        model_server: ModelServer | None = None,
        model_truth: ModelServer | None = None,
    ) -> None:
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        credentials = LiveKitCredentials.resolve(livekit_url, api_key, api_secret)
        room_name = room or f"notebook-{uuid.uuid4().hex[:8]}"
        self._init_server_thread(_as_server(server), room_name, credentials)
        self._init_job_observer()
        self._init_voice(audio)
        # after each turn, livekit's chat context is held against the model's conversation
        # where it can be read (by default: an emulator in this process that serves it)
        if model_truth is not None:
            warn_renamed("NotebookRunner(model_truth=...)", "NotebookRunner(model_server=...)")
            model_server = model_server or model_truth
        self.trace = Trace(model_server=model_server or InProcessEmulators())

    def start(self) -> Self:
        """Start the server and its job in the background; returns at once.

        An interrupt landing inside ``start()`` undoes what it did; ``stop()`` finishes the
        job if one lands after.
        """
        # a runner of the same server stops (it runs only once), as does what an earlier run
        # of this cell started: re-running a cell never leaves two agents behind. Registered
        # before the server is touched: from here on stop() undoes everything
        if not self._admit_start(
            lambda old: isinstance(old, NotebookRunner) and old.server is self.server
        ):
            return self
        _failed_expectation.install()
        self._started_at = started = time.perf_counter()
        self._start_server()
        self.timings["start"] = time.perf_counter() - started
        return self

    def _refuse_start(self) -> None:
        if livekit.server_running(self.server):
            raise RunnerError(
                "this AgentServer is already running outside notebook-agents; stop it first"
            )

    async def ready(self, timeout: float | None = None) -> AgentSession[Any]:
        """Wait until the entrypoint's ``AgentSession`` has started; raise the job's error.

        If the entrypoint fails, the runner is stopped and its error is raised from here.
        """
        if self.state is RunnerState.NEW:
            raise RunnerError("ready() needs a started runner: call runner.start() first")
        wait = timeout or self.start_timeout
        try:
            started = await wait_awake(self._ready, wait)
        except asyncio.CancelledError:
            raise asyncio.CancelledError(
                "ready() was interrupted; the agent goes on starting: `await runner.ready()` "
                "again, or runner.stop()"
            ) from None
        if not started:
            self.stop()
            raise RunnerError(
                f"the agent did not start a session within {wait:.0f} s: "
                "does the entrypoint call `await session.start(...)`?"
            )
        try:
            return self._ready.result()
        except RunnerError:
            self.stop()
            raise

    def __repr__(self) -> str:
        mode = "offline" if self.text_only else "livekit"
        why = f": {self.failure}" if self.failure is not None else ""
        return f"<NotebookRunner {self.state.value} {mode} room={self.room_name!r}{why}>"


def run_app(server: AgentServer | Entrypoint, **options: Any) -> NotebookRunner:
    """Blocking drop-in for ``livekit.agents.jupyter.run_app``: runs until interrupted.

    The first kernel interrupt stops the agent cleanly (no drain); further interrupts during
    that stop are absorbed, so the kernel survives.
    """
    runner = NotebookRunner(server, **options)
    try:
        runner.start()
        print(_running_until_interrupted(runner), flush=True)
        _wait_lock_free(runner._served, longest_pause=0.05)  # until interrupted: no hurry
    except KeyboardInterrupt:
        pass
    finally:
        _stop_through_interrupts(runner)
    return runner


def _running_until_interrupted(runner: NotebookRunner) -> str:
    """What ``run_app`` says as it starts blocking: it runs, how to stop it, how to talk to it."""
    stop = "interrupt the kernel (the stop button) to stop it"
    if runner.real_room is not None:
        return (
            f"run_app: the agent runs in the LiveKit room {runner.room_name!r}: join it from "
            f"the widget above to talk to it; {stop}"
        )
    return (
        f"run_app: the agent runs offline in this kernel; {stop}. While this cell blocks no "
        "cell can talk to it: to talk to it, start it without blocking instead, "
        "runner = NotebookRunner(server).start(), then await runner.send_text('hello')"
    )


def _stop_through_interrupts(runner: NotebookRunner) -> None:
    if runner.state is RunnerState.NEW:
        return
    # already stopping: another interrupt must not abandon the stop midway. Interrupts sent
    # back to back can land while the inner handler runs, hence the outer one
    while not runner._stop_done.is_set():
        try:
            while not runner._stop_done.is_set():
                try:
                    runner._begin_stop()  # again if an interrupt cut the first one short
                    _wait_lock_free(runner._stop_done, longest_pause=0.001)
                except KeyboardInterrupt:
                    pass
        except KeyboardInterrupt:
            pass
    close_retired()


def _as_server(server: AgentServer | Entrypoint) -> AgentServer:
    if isinstance(server, AgentServer):
        if livekit.entrypoint_of(server) is None:
            raise RunnerError(
                "this AgentServer has no entrypoint: decorate an async function with "
                "@server.rtc_session()"
            )
        return server
    if asyncio.iscoroutinefunction(server):
        built = AgentServer()
        built.rtc_session()(server)
        return built
    raise EntrypointError(
        f"NotebookRunner needs a livekit AgentServer or an async entrypoint(ctx), "
        f"not {type(server).__name__}"
    )
