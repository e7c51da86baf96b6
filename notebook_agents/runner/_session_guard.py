"""The runner's ``AgentSession`` used from a notebook cell: carried into the job, or refused.

livekit makes a call's futures, events and speech handles on the loop it is called from. From
a cell (the kernel's loop, not the job's) they are bound to the wrong loop: the reply fails
with "bound to a different event loop", the speech never finishes, and closing the session
waits for it for good (``stop()`` then timed out). So on the session itself (every reference
to it, ``runner.session``, ``ready()``'s, ``agent.session``), called off the job's loop:
``run`` is carried into the job as ``runner.run`` is, and each other loop-bound method raises
at once, naming ``runner.call``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from livekit.agents import AgentSession, RunResult

from .errors import RunnerError

LOOP_BOUND = (
    "aclose",
    "clear_user_turn",
    "commit_user_turn",
    "drain",
    "generate_reply",
    "interrupt",
    "reset_away_timer",
    "say",
    "shutdown",
    "start",
    "update_agent",
    "update_options",
    "wait_for_idle",
)
"""``AgentSession`` methods that make or touch objects of the session's loop"""

CarryRun = Callable[..., Callable[[], Awaitable[RunResult[Any]]]]
"""``session.run``'s arguments -> the turn started in the job as ``runner.run`` starts one,
and how to await its result"""


class RunInJob(Awaitable[RunResult[Any]]):
    """``session.run(...)`` called from a cell: the turn runs in the agent's job (it has
    started); ``await`` it for livekit's done ``RunResult``, as in a livekit eval."""

    def __init__(self, answer: Callable[[], Awaitable[RunResult[Any]]]) -> None:
        self._answer = answer

    def __await__(self) -> Generator[Any, None, RunResult[Any]]:
        return self._answer().__await__()

    @property
    def expect(self) -> Any:
        raise _not_awaited()

    @property
    def events(self) -> Any:
        raise _not_awaited()

    @property
    def final_output(self) -> Any:
        raise _not_awaited()


def _not_awaited() -> RunnerError:
    return RunnerError(
        "session.run() from a notebook cell runs in the agent's job: await it for the "
        "result, `result = await session.run(user_input=...)` (or `await runner.run(...)`)"
    )


def guard(
    session: AgentSession[Any], carry_run: CarryRun, before_own_run: Callable[[], None]
) -> None:
    """Guard ``session`` (from its job's loop, where this is called) for calls from cells;
    ``before_own_run`` is called before each ``run`` the job's own code makes."""
    loop = asyncio.get_running_loop()
    for name in LOOP_BOUND:
        setattr(session, name, _refused_elsewhere(getattr(session, name), name, loop))
    carried = _carried_elsewhere(session.run, carry_run, before_own_run, loop)
    session.run = carried  # type: ignore[method-assign]


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # a thread with no loop running
        return False


def _refused_elsewhere(
    method: Callable[..., Any], name: str, loop: asyncio.AbstractEventLoop
) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if not _on(loop):
            raise RunnerError(
                f"session.{name}() must run on the agent's job loop, not the notebook's "
                f"(livekit binds what it makes to the calling loop; from here it would break "
                f"the call): run it there with `await runner.call(session.{name}, ...)`, or "
                "take a turn with `await runner.run(...)`"
            )
        return method(*args, **kwargs)

    return guarded


def _carried_elsewhere(
    run: Callable[..., RunResult[Any]],
    carry_run: CarryRun,
    before_own_run: Callable[[], None],
    loop: asyncio.AbstractEventLoop,
) -> Callable[..., Any]:
    @functools.wraps(run)
    def guarded(**kwargs: Any) -> RunResult[Any] | RunInJob:
        if _on(loop):
            before_own_run()
            return run(**kwargs)
        return RunInJob(carry_run(**kwargs))

    return guarded
