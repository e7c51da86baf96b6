"""A runner's lifecycle, written once: every runner (the kernel's, another process's, a
VideoSDK job's) is an adapter of this core for where its session lives and how turns reach it.

The core holds the states and the one guard that refuses a call the runner cannot take (in
one wording, naming the fix), the start's admission (a re-run cell replaces what it started,
``_cells``), readiness and failure, the greeting every turn waits for, and the plumbing of a
turn: onto the loop the session lives on (in its context), and back to the cell, where a
kernel interrupt or a timeout cancels it there, and a turn cancelled in the job settles the
cell's future too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import enum
import functools
import inspect
import types
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, Generic, TypeVar

from livekit.agents import ChatMessage, ChatMessageEvent, RunResult

from .. import _cells
from .. import _livekit_internals as livekit
from .._lifecycle import StartStop
from ..trace import Trace, TraceEvent
from ._kernel_loops import wait_awake
from .errors import RunnerError, TurnStopped

T = TypeVar("T")
SessionT = TypeVar("SessionT")

SUBMITTED_TURN_TIMEOUT_S = 30.0
"""how long a turn nobody awaits (``submit_text``) may take where the agent is told a limit"""


class RunnerState(str, enum.Enum):
    """Where a runner is in its life; ``runner.state``."""

    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    ENDED = "ended"
    """the session closed on its own (the agent hung up); the server still runs"""
    FAILED = "failed"
    """the job or its session failed; ``runner.failure`` says why"""
    STOPPING = "stopping"
    STOPPED = "stopped"


class RunnerCore(StartStop, Generic[SessionT]):
    """What every runner shares; an adapter says where its session lives (``_job_began`` on
    the loop turns run on) and how a typed turn reaches it (``_typed_turn``)."""

    agent_base: ClassVar[type[Any]]
    """the class its framework's agents subclass (livekit's or VideoSDK's ``Agent``)"""
    _noun: ClassVar[str] = "runner"
    """what the runner's messages call it"""
    _handle: ClassVar[str] = "runner"
    """the variable its messages' examples call it by"""
    _failed_as: ClassVar[str] = "the agent's job failed"
    """what a failure that is not the runner's own error is said to be"""
    _mocks_elsewhere: ClassVar[str] = (
        "livekit's mocks reach only livekit agents run in this kernel (NotebookRunner), not "
        "this runner's: mock the tool in the agent's own code"
    )
    """why livekit's ``mock_tools`` set in a cell cannot reach this runner's agents, naming
    the form that works; "" for a runner whose turns carry them into its job"""

    trace: Trace

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give each runner its own copy of every public coroutine method it inherits, named
        for it. CPython names a coroutine after its function's ``__qualname__`` (genobject.c's
        ``make_gen``), so a forgotten ``await runner.send_text(...)`` then warns "coroutine
        'NotebookRunner.send_text' was never awaited": what the user called, not the core's
        class or a mixin's, which the user never met."""
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            method = inspect.getattr_static(cls, name)
            qualname = f"{cls.__qualname__}.{name}"
            if (
                not name.startswith("_")
                and inspect.iscoroutinefunction(method)
                and method.__qualname__ != qualname
            ):
                setattr(cls, name, _named(method, qualname))

    def __init__(self, *, start_timeout: float, stop_timeout: float) -> None:
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.state = RunnerState.NEW
        self.failure: RunnerError | None = None
        """why the runner cannot take turns any more (state ``failed`` or ``ended``)"""
        self._ready: concurrent.futures.Future[SessionT] = concurrent.futures.Future()
        # on the loop the session lives on, from ``_job_began``
        self._job_loop: asyncio.AbstractEventLoop | None = None
        self._job_context: contextvars.Context | None = None
        self._turn_lock: asyncio.Lock | None = None
        self._greeted: asyncio.Event | None = None

    # -- states ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Started and able to take turns (or about to be)."""
        return self.state in (RunnerState.STARTING, RunnerState.RUNNING)

    @property
    def _start_again(self) -> str:
        """The fix for a runner that can take no more turns."""
        return f"make a new {type(self).__name__}(...).start() to talk to the agent again"

    def _require_turns(self, what: str) -> None:
        """Raise the reason this runner cannot take ``what`` now, naming the fix."""
        state, failure = self.state, self.failure
        if state is RunnerState.NEW:
            raise RunnerError(
                f"{what} needs a started {self._noun}: call {self._handle}.start() first"
            )
        if state in (RunnerState.STOPPING, RunnerState.STOPPED):
            raise RunnerError(f"{what}: {self._stopped_message()}")
        if failure is not None:
            raise RunnerError(f"{what}: {failure}") from failure.__cause__
        if not self._ready.done():
            raise RunnerError(
                f"{what}: the agent is not ready yet: `await {self._handle}.ready()` first"
            )

    def _stopped_message(self) -> str:
        return f"the {self._noun} is stopped; {self._start_again}"

    # -- start, ready, failure -------------------------------------------------------------

    def _admit_start(self, conflicts: Callable[[Any], bool] = _cells.no_conflict) -> bool:
        """Whether ``start()`` has anything to do (not if started already); raise why it
        cannot start. Stops what an earlier run of the calling cell started, and what
        ``conflicts`` names, then registers this runner as started (``stop()`` undoes it)."""
        if self.running:
            return False
        if self.failure is not None:
            raise RunnerError(f"this {self._noun} cannot start again: {self.failure}")
        if self.state is not RunnerState.NEW:
            raise RunnerError(f"this {self._noun} was stopped: {self._start_again}")
        cell = _cells.replace_earlier(conflicts)
        self._refuse_start()
        self.state = RunnerState.STARTING
        livekit.start_ffi()  # its disposal at exit, after this runner's stop (registered next)
        _cells.register(self, cell)
        return True

    def _unregister(self) -> None:
        """Stopped: no cell's re-run has it to replace any more."""
        _cells.unregister(self)

    def _refuse_start(self) -> None:
        """Raise why this runner cannot start beside what runs now (an adapter's checks)."""

    def _job_began(self) -> None:
        """On the loop the session lives on, as the job (or the connection) begins: turns are
        carried there, in this context, one at a time."""
        self._job_loop = asyncio.get_running_loop()
        self._job_context = contextvars.copy_context()
        self._turn_lock = asyncio.Lock()
        self._greeted = asyncio.Event()

    def _became_ready(self, session: SessionT) -> None:
        """The session has started: ``ready()`` returns it, turns are taken."""
        if self._ready.done():
            return
        if self.state is RunnerState.STARTING:
            self.state = RunnerState.RUNNING
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self._ready.set_result(session)

    def _fail(self, error: BaseException) -> None:
        """The session cannot become ready: ``ready()`` raises ``error`` (as a ``RunnerError``)."""
        if self._ready.done():
            return
        if not isinstance(error, RunnerError):
            wrapped = RunnerError(f"{self._failed_as}: {error!r}")
            wrapped.__cause__ = error
            error = wrapped
        if self.state is RunnerState.STARTING:  # first: the waiter may look at once
            self.failure, self.state = error, RunnerState.FAILED
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self._ready.set_exception(error)

    def _end(self, state: RunnerState, why: str, detail: str = "") -> bool:
        """The session can take no more turns (on its loop): say why, in the state and the
        trace; a turn waiting for the greeting fails at once. Whether it was the first cause
        (a stopping runner, or one already ended, keeps its own)."""
        if self.state not in (RunnerState.STARTING, RunnerState.RUNNING):
            return False
        self.failure = RunnerError(
            f"{why}; {self._start_again}" + (f"\n{detail}" if detail else "")
        )
        self.state = state
        if state is RunnerState.FAILED:
            self.trace.record_failure(why)
        if self._greeted is not None:
            self._greeted.set()
        return True

    # -- the greeting ----------------------------------------------------------------------

    def _greeting_said(self) -> None:
        """On the job's loop: the agent's greeting is over, turns may go in."""
        assert self._greeted is not None
        self._greeted.set()

    async def _greeting_over(self) -> None:
        """Until the agent has said its greeting (or can take no more turns): a turn's events
        are its own, and a turn sent while a greeting is generated may go unanswered."""
        assert self._greeted is not None
        await self._greeted.wait()

    # -- turns -----------------------------------------------------------------------------

    async def send_text(self, text: str, timeout: float = 30.0) -> str:
        """One typed user turn: ``text`` goes to the agent; returns the text it replied (what
        every agent said in the turn, one message a line).

        Raises ``TurnError`` when the turn went wrong (a model's failure, a tool's that ended
        it without a reply), ``RunnerError`` when the agent cannot take turns or did not
        answer within ``timeout`` seconds (the turn is then withdrawn).
        """
        return reply_text(await self._typed(text, None, timeout, "send_text()"))

    async def run(
        self, user_input: str, *, output_type: type[Any] | None = None, timeout: float = 30.0
    ) -> RunResult[Any]:
        """One typed user turn, as livekit's ``AgentSession.run``: returns its ``RunResult``
        (every event of the turn; ``result.expect`` checks them as in a livekit eval); the
        same errors as ``send_text``. Inside ``with mock_tools(...)`` the block's mocks run
        instead of the tools, as in a livekit eval (a runner whose agents they cannot reach
        refuses the turn, ``RunnerError``)."""
        return await self._typed(user_input, output_type, timeout, "run()")

    def submit_text(self, text: str) -> concurrent.futures.Future[str]:
        """``send_text`` without awaiting: the turn's future, for callbacks such as a widget's.

        Turns queue: each starts when the previous one has finished. A turn cancelled in the
        job (a stop) cancels the future.
        """
        reply: concurrent.futures.Future[str] = concurrent.futures.Future()

        def settle(done: concurrent.futures.Future[RunResult[Any]]) -> None:
            if done.cancelled():
                reply.cancel()
            elif (error := done.exception()) is not None:
                reply.set_exception(error)
            else:
                reply.set_result(reply_text(done.result()))

        self._submit(text, "submit_text()").add_done_callback(settle)
        return reply

    async def _typed(
        self, text: str, output_type: type[Any] | None, timeout: float, what: str
    ) -> RunResult[Any]:
        """A typed turn, awaited from a cell (an adapter may check ``output_type`` first)."""
        started = self.trace.now()
        turn = self._submit(text, what, output_type, timeout)
        return await self._from_job(
            turn, what, timeout, TURN_WITHDRAWN, self._late(timeout, started)
        )

    def _submit(
        self,
        text: str,
        what: str,
        output_type: type[Any] | None = None,
        timeout: float = SUBMITTED_TURN_TIMEOUT_S,
        **options: Any,
    ) -> concurrent.futures.Future[RunResult[Any]]:
        """A typed turn, started in the job now (``options``: ``AgentSession.run``'s others)."""
        if not text.strip():
            raise RunnerError(
                f"{what} needs the caller's words: {text!r} gives the agent nothing to hear. "
                "To have the agent speak first, call `session.generate_reply()` in the "
                "entrypoint (or `runner.call(runner.session.generate_reply)` from a cell)"
            )
        return self._in_job(self._stoppable_turn(text, output_type, timeout, options), what)

    async def _stoppable_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, options: dict[str, Any]
    ) -> RunResult[Any]:
        """The adapter's turn, whose failure as a stop closes the session under it is
        ``TurnStopped``."""
        try:
            return await self._typed_turn(text, output_type, timeout, **options)
        except RunnerError:
            raise
        except Exception as e:
            if self.state in (RunnerState.STOPPING, RunnerState.STOPPED):
                raise TurnStopped("") from e
            raise

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        """On the job's loop: one typed turn to the session, its result (the adapter's). The
        cell awaiting it gives it up past ``timeout``; an agent elsewhere is told it too."""
        raise NotImplementedError

    def _late(self, timeout: float, started: float) -> Callable[[], str]:
        """Why a typed turn got no answer in time (an adapter may say more)."""
        return lambda: f"the agent did not answer within {timeout:g} s; {TURN_WITHDRAWN}"

    def _carry(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the job's loop in the job's context, as the job runs its own tasks;
        ``RuntimeError`` if that loop has closed."""
        loop, context = self._job_loop, self._job_context
        if loop is None or context is None:
            raise RuntimeError("the job has not begun")  # _in_job raises the RunnerError
        # a task copies the context it is created in: the job's, not the cell's; but the cell's
        # `with mock_tools(...)` goes along, as livekit scopes those mocks to what runs inside
        carried = context.copy()
        if mocks := livekit.scoped_tool_mocks():
            livekit.enter_tool_mocks(carried, mocks)
        return carried.run(asyncio.run_coroutine_threadsafe, coro, loop)

    def _in_job(self, coro: Coroutine[Any, Any, T], what: str) -> concurrent.futures.Future[T]:
        """``coro`` carried into the job, or the reason it cannot take it."""
        try:
            self._require_turns(what)
            self._refuse_unreachable_mocks(what)
            return self._carry(coro)
        except RuntimeError as e:
            coro.close()
            if isinstance(e, RunnerError):
                raise
            self._require_turns(what)  # the job's loop has closed under us
            raise RunnerError(f"{what}: the agent's job has ended; {self._start_again}") from None
        except BaseException:
            coro.close()
            raise

    def _refuse_unreachable_mocks(self, what: str) -> None:
        """Raise when the cell has set mocks this runner's agents would never see (the real
        tool would run, silently), naming the form that works."""
        if self._mocks_elsewhere and (mocked := self._mocks_set()):
            raise RunnerError(f"{what} with {mocked}: {self._mocks_elsewhere}")

    def _mocks_set(self) -> str:
        """How the cell has set livekit's mocks for what it runs now, or "" (an adapter may
        know more ways)."""
        mocked = any(livekit.scoped_tool_mocks().values())  # `{}` mocks nothing
        return "`with mock_tools(...)` around it" if mocked else ""

    async def _from_job(
        self,
        work: concurrent.futures.Future[T],
        what: str,
        timeout: float | None,
        interrupted: str,
        late: Callable[[], str] | None = None,
    ) -> T:
        """``work`` (running in the job) awaited from a cell, as every turn and call is: a
        kernel interrupt lands at once (``wait_awake``) and cancels it in the job (a turn is
        withdrawn there), raising ``CancelledError`` that says so (``interrupted``); past
        ``timeout`` it is cancelled the same way and ``RunnerError`` says why (``late()``)."""
        try:
            done = await wait_awake(work, timeout)
        except asyncio.CancelledError:
            if work.cancel():
                raise asyncio.CancelledError(f"{what} was interrupted: {interrupted}") from None
            raise asyncio.CancelledError(
                f"{what} was interrupted as it ended (its outcome is in {self._handle}.trace)"
            ) from None
        if not done:
            # said before the cancel: cancelling ends the turn's tools in the job meanwhile
            why = late() if late else f"{what} did not end within {timeout:g} s"
            if work.cancel():
                raise RunnerError(why)
        if work.cancelled():  # not by this cell: by the job's loop ending, or a stop
            if self.state in (RunnerState.STOPPING, RunnerState.STOPPED):
                raise TurnStopped("")
            self._require_turns(what)
            raise RunnerError(f"{what}: the agent's job cancelled it")
        return work.result()

    async def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` run on the agent's job loop in the job's context (as the job
        runs its own tasks), its result awaited there if it is awaitable; returns it."""
        work = self._in_job(called(fn, args, kwargs), "call()")
        return await self._from_job(work, "call()", None, _CALL_CANCELLED)

    def _turn_errors(self, started: float, agent: str | None, *, spoken: bool) -> list[TraceEvent]:
        """The trace's problems since ``started`` that fail a turn (``fails_turn``)."""
        problems = self.trace.problems_since(started, agent)
        return [e for e in problems if e.kind != "error" or fails_turn(e, spoken=spoken)]


def _named(function: types.FunctionType, qualname: str) -> types.FunctionType:
    """``function`` itself (its code, defaults, closure and docs) under another name."""
    named = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    functools.update_wrapper(named, function)
    named.__kwdefaults__ = function.__kwdefaults__
    named.__qualname__ = qualname
    return named


def said_in(result: RunResult[Any]) -> list[ChatMessage]:
    """What the agents said in a turn, in order."""
    return [
        event.item
        for event in result.events
        if isinstance(event, ChatMessageEvent) and event.item.role == "assistant"
    ]


def joined(said: list[ChatMessage]) -> str:
    """Messages' text, one a line."""
    return "\n".join(message.text_content or "" for message in said)


def reply_text(result: RunResult[Any]) -> str:
    """A turn's reply text: what every agent said in it, one message a line."""
    return joined(said_in(result))


async def called(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn``'s result, awaited if it is awaitable (a speech handle: until it is played)."""
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


def fails_turn(error: TraceEvent, *, spoken: bool) -> bool:
    """An error during a turn fails it, but a tool's (as in livekit, the model is told the
    tool failed and answers: the turn goes on) and, for a typed turn, speech recognition's
    (a typed turn never goes through it; an STT that cannot connect offline is traced, not
    raised)."""
    source = error.data.get("source")
    return source != "tool" and (spoken or source != "stt")


TURN_WITHDRAWN = (
    "the turn is withdrawn (any reply cut, the tools it started cancelled) and the runner is "
    "ready for the next turn"
)
_CALL_CANCELLED = (
    "it is cancelled in the job (a speech it started plays on: "
    "`await runner.call(session.interrupt)` cuts it)"
)
