"""The kernel runner's view of its job: the entrypoint it runs (observed, held weakly), the
session it started (traced, guarded, its greeting captured) and how that session ends.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from livekit.agents import AgentSession, JobContext, RunResult

from .. import _livekit_internals as livekit
from ..trace import error_text
from . import _failed_expectation, _session_guard, _session_hook
from ._closing import PendingWords
from ._core import RunnerState
from ._server_thread import Entrypoint, ServerThread
from .errors import RunnerError


class JobObserver(ServerThread):
    """The job's entrypoint and its first session, as ``_session_hook.SessionObserver``."""

    def _init_job_observer(self) -> None:
        self.session: AgentSession[Any] | None = None
        self._ctx: JobContext | None = None
        self._entry_task: asyncio.Task[None] | None = None
        self._greeting: RunResult[Any] | None = None
        self._guard: _session_guard.JobGuard | None = None
        self._pending_words: PendingWords | None = None

    def _carried_run(
        self, *, user_input: str, output_type: type[Any] | None = None, **options: Any
    ) -> Callable[[], Awaitable[RunResult[Any]]]:
        """``session.run`` called from a cell (the typed turns')."""
        raise NotImplementedError

    def _attach_voice(self, session: AgentSession[Any]) -> None:
        """The session's audio in and out, as it starts (the voice's)."""
        raise NotImplementedError

    def _observed(self, entrypoint: Entrypoint) -> Entrypoint:
        # held weakly: the user's server keeps its last run's job pool, and with it this
        # entrypoint, after the runner has stopped; a stopped runner must be collectable
        runner_ref = weakref.ref(self)

        @functools.wraps(entrypoint)
        async def observed_entrypoint(ctx: JobContext) -> None:
            runner = runner_ref()
            if runner is None:  # its runner is gone: no job of the server's is ours to run
                return
            runner._ctx = ctx
            runner._job_thread = threading.current_thread()
            runner.logs.claim_thread()
            # the entrypoint's context variables (livekit's job context and HTTP session among
            # them): turns sent from cells run in it, as turns from the room do
            runner._job_began()
            runner._entry_task = asyncio.current_task()
            _session_hook.observe_job(ctx, runner)
            try:
                await entrypoint(ctx)
            except asyncio.CancelledError:
                raise
            except BaseException as e:
                if runner._ready.done():
                    runner._end(
                        RunnerState.FAILED, f"the entrypoint raised {e!r} after the session started"
                    )
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
    def session_starting(self, session: AgentSession[Any]) -> bool:
        if self.session is not None:
            return False  # another session of the job, or a start again
        self.session = session
        self._attach_voice(session)
        self._pending_words = PendingWords(session)
        self.trace.attach(session)
        self._guard = _session_guard.JobGuard(self._carry)
        self._guard.session(session, self._carried_run, self._before_own_run)
        session.on("error", self._on_session_error)
        session.on("close", self._on_session_close)
        return True

    def session_started(self, session: AgentSession[Any], greeting: RunResult[Any]) -> None:
        self._greeting = greeting
        _failed_expectation.remember(greeting, self.trace)
        if not self._ready.done():
            self.timings["ready"] = time.perf_counter() - self._started_at
            self._became_ready(session)

    def _before_own_run(self) -> None:
        """The job's own code runs a turn (``session.run`` on its loop): the greeting, if it is
        still going, stops gathering new speech (livekit would refuse a run beside it)."""
        if self._greeting is not None and self.session is not None:
            livekit.release_run(self.session, self._greeting)

    def _on_session_error(self, event: Any) -> None:
        if event.error.recoverable:
            return
        message = error_text(event.error)
        # livekit decides whether this error closes the session right after emitting it
        asyncio.get_running_loop().call_soon(self._on_unrecoverable, message)

    def _on_unrecoverable(self, message: str) -> None:
        assert self.session is not None
        closing = livekit.closing_task(self.session)
        if closing is None:
            return  # livekit tolerates a few in a row before it gives up
        self._end(RunnerState.FAILED, f"the session closed after an unrecoverable error: {message}")
        # livekit emits no close event when its close raises: record it once it is over
        closing.add_done_callback(lambda _: self.trace.record_closed("error", message))

    def _on_session_close(self, event: Any) -> None:
        reason = getattr(event.reason, "value", event.reason)
        if event.error:
            why = f"the session closed ({reason}): {error_text(event.error)}"
            self._end(RunnerState.FAILED, why)
        else:
            self._end(RunnerState.ENDED, f"the session has ended ({reason})")

    def _give_up_in_job(self) -> None:
        """On the job's loop as the stop begins: what livekit's close would wait for is given
        up, as a stop does not drain. No wait for a transcript unless words are on their way;
        the tools still running are cancelled (livekit awaits each one not marked
        cancellable, for up to 60 s: a tool that never returns held the stop that long); an
        entrypoint still awaiting is cancelled (else held for livekit's 15 s)."""
        if self._pending_words is not None:
            self._pending_words.close_without_waiting()
        if self.session is not None:
            for task in livekit.tool_tasks(self.session):
                task.cancel()
        if self._entry_task is not None:
            self._entry_task.cancel()

    def _release_job(self) -> None:
        self.trace.detach()
        if self._guard is not None:  # after the trace's: either may have wrapped last
            self._guard.release()
        if self._ctx is not None:
            _session_hook.forget_job(self._ctx)
