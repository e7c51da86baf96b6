"""The kernel runner's typed turns: ``AgentSession.run`` on the job's loop, in the job's
context, one at a time after the greeting; each checked against the trace (its errors, the
model's conversation held against livekit's chat context) and withdrawn when given up.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, overload

from livekit.agents import AgentSession, RunResult
from livekit.agents.voice import SpeechHandle

from .. import _livekit_internals as livekit
from ..trace import TraceEvent, agent_label
from . import _failed_expectation
from ._core import TURN_WITHDRAWN, RunnerState, joined, said_in
from ._job_observer import JobObserver
from ._speech_shown import show_speech_state
from ._spoken_turn import cut_replies
from .errors import TurnError, TurnStopped

T = TypeVar("T")
P = ParamSpec("P")


class TypedTurns(JobObserver):
    """Typed turns, calls and the greeting, from cells (and ``session.run`` from a cell)."""

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        session = self._ready.result()
        assert self._turn_lock is not None
        async with self._turn_lock:  # AgentSession.run cannot nest
            await self._greeting_over()
            started = self.trace.now()
            try:
                result: RunResult[Any] = session.run(
                    user_input=text, output_type=output_type, **options
                )
            except Exception:
                livekit.forget_stale_run(session)
                self._require_turns("the turn")
                raise
            try:
                raised = await _settled(result)
            except asyncio.CancelledError:  # given up from the cell: timed out or interrupted
                if not self._stop_requested.is_set():  # a stop closes the session anyway
                    await cut_replies(session, livekit.run_speeches(result))
                livekit.forget_stale_run(session)
                raise
        return self._checked(session, result, started, raised, spoken=False)

    def _late(self, timeout: float, started: float) -> Callable[[], str]:
        return functools.partial(self._unanswered, timeout, started)

    def _unanswered(self, timeout: float, started: float) -> str:
        """Why a typed turn got no answer in time: the tools it left running, if any."""
        events = [e for e in self.trace.events if e.t >= started]
        returned = {e.data["call_id"] for e in events if e.kind == "tool_output"}
        running = [
            f"{e.data['name']}()"
            for e in events
            if e.kind == "tool_call" and e.data["call_id"] not in returned
        ]
        head = f"the agent did not answer within {timeout:g} s"
        if not running:
            return f"{head}; {TURN_WITHDRAWN}"
        return (
            f"{head}: its tool {', '.join(running)} had not returned; {TURN_WITHDRAWN} "
            "(a tool that can take longer wants a longer timeout)"
        )

    def _carried_run(
        self, *, user_input: str, output_type: type[Any] | None = None, **options: Any
    ) -> Callable[[], Awaitable[RunResult[Any]]]:
        """``session.run`` called from a cell: the turn starts in the job now, as
        ``runner.run``'s does; awaiting it awaits ``run``'s answer."""
        started, timeout = self.trace.now(), _CARRIED_RUN_TIMEOUT_S
        turn = self._submit(user_input, "session.run()", output_type, timeout, **options)
        late = self._late(timeout, started)
        return functools.partial(
            self._from_job, turn, "session.run()", timeout, TURN_WITHDRAWN, late
        )

    @overload
    async def call(
        self, fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    @overload
    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...

    async def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` run on the agent's job loop in the job's context (as livekit
        runs its own tasks), its result awaited there if it is awaitable; returns it. For the
        session's loop-bound methods from a cell:
        ``await runner.call(session.generate_reply, instructions="greet")`` returns the speech
        once it has played out (a ``SpeechHandle``, shown in the notebook as played or
        interrupted, with what was said), ``await runner.call(session.interrupt)``."""
        result = await super().call(fn, *args, **kwargs)
        if isinstance(result, SpeechHandle):
            show_speech_state()
        return result

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]:
        """What the agent said on its own as its session started (its ``on_enter`` speech),
        once said: livekit's ``RunResult`` of the start, as ``session.start(capture_run=True)``
        returns it, for ``expect``. The entrypoint's ``start`` returns what it always did."""
        greeting = self._greeting
        if greeting is None or not greeting.done():
            self._require_turns("greeting()")
            greeting = self._greeting
            assert greeting is not None
            waiting = self._in_job(_finished(greeting), "greeting()")
            return await self._from_job(
                waiting,
                "greeting()",
                timeout,
                "the greeting itself goes on",
                lambda: f"the agent's greeting did not end within {timeout:g} s",
            )
        return greeting

    async def _greeting_over(self) -> None:
        """Until the greeting is over: a turn's events are its own, and livekit runs one run at
        a time (its failure is the greeting's, not the turn's)."""
        if self._greeting is not None and not self._greeting.done():
            await _settled(self._greeting)

    def _checked(
        self,
        session: AgentSession[Any],
        result: RunResult[Any],
        started: float,
        raised: Exception | None,
        *,
        spoken: bool,
    ) -> RunResult[Any]:
        """A finished turn's result, or the ``TurnError`` it went wrong by."""
        said = said_in(result)
        reply = joined(said)
        if self._stop_requested.is_set() and (
            raised is not None or not said or said[-1].interrupted
        ):
            raise TurnStopped(reply) from raised  # the stop cut the turn short
        if self.state is RunnerState.FAILED:  # the session died under the turn
            self._require_turns("the turn")
        errors = self._went_wrong(session, started, spoken=spoken)
        if errors or raised is not None:
            raise TurnError(reply, errors, raised) from raised
        _failed_expectation.remember(result, self.trace)
        return result

    def _went_wrong(
        self, session: AgentSession[Any], started: float, *, spoken: bool
    ) -> list[TraceEvent]:
        """The turn's ``error`` events, and the ``context_diverged`` of its agent while its
        chat context and its model's conversation are apart: even a turn that went through
        smoothly was answered from a conversation other than livekit's."""
        # the turn is over: the model's conversation should now hold what livekit's does
        # (the trace compares when a turn's speech is done: again only if it heard more since)
        self.trace.compare_contexts(if_changed=True)
        return self._turn_errors(started, agent_label(session.current_agent), spoken=spoken)


async def _finished(result: RunResult[Any]) -> RunResult[Any]:
    return await result


async def _settled(result: RunResult[Any]) -> Exception | None:
    """Wait for a run; what it raised if its reply could not be generated."""
    try:
        await result
    except Exception as e:
        return e
    return None


_CARRIED_RUN_TIMEOUT_S = 30.0
"""how long ``await session.run(...)`` from a cell waits, as ``runner.run`` by default"""
