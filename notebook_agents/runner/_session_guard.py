"""The runner's job used from a notebook cell: carried into the job, or refused.

livekit makes a call's futures, events and speech handles on the loop it is called from. From
a cell (the kernel's loop, not the job's) they are bound to the wrong loop: the reply fails
with "bound to a different event loop", the speech never finishes, and closing the session
waits for it for good (``stop()`` then timed out). So, called off the job's loop, on the
session itself (every reference to it, ``runner.session``, ``ready()``'s, ``agent.session``):
``run`` is carried into the job as ``runner.run`` is, and each other loop-bound method raises
at once, naming ``runner.call``; on each agent as it becomes active, its updates raise the
same way; and the LLMs the session runs on have their ``chat`` carried into the job (a judge
with the agent's own model). Each object is guarded on the instance, until ``release()``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from livekit.agents import Agent, AgentSession, ConversationItemAddedEvent, RunResult, llm
from livekit.agents.utils import is_given

from ..trace.tap import listen
from ._carried_llm import Carry, carried_chat
from .errors import RunnerError

logger = logging.getLogger(__name__)

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

AGENT_LOOP_BOUND = ("update_chat_ctx", "update_instructions", "update_tools")
"""``Agent`` methods that touch its activity and realtime session on the session's loop"""

CarryRun = Callable[..., Callable[[], Awaitable[RunResult[Any]]]]
"""``session.run``'s arguments -> the turn started in the job as ``runner.run`` starts one,
and how to await its result"""


class RunInJob(Awaitable[RunResult[Any]]):
    """``session.run(...)`` called from a cell: the turn runs in the agent's job (it has
    started); ``await`` it for livekit's done ``RunResult``, as in a livekit eval. Once
    awaited, it is that result (``expect``, ``events``, ``final_output``, ``done()``), as
    livekit's ``RunResult`` stays usable after awaiting."""

    def __init__(self, answer: Callable[[], Awaitable[RunResult[Any]]]) -> None:
        self._answer = answer
        self._result: RunResult[Any] | None = None

    def __await__(self) -> Generator[Any, None, RunResult[Any]]:
        return self._finished().__await__()

    async def _finished(self) -> RunResult[Any]:
        if self._result is None:
            self._result = await self._answer()
        return self._result

    def done(self) -> bool:
        """Awaited and finished (the turn may have finished in the job before)."""
        return self._result is not None and self._result.done()

    @property
    def expect(self) -> Any:
        return self._awaited().expect

    @property
    def events(self) -> Any:
        return self._awaited().events

    @property
    def final_output(self) -> Any:
        return self._awaited().final_output

    def _awaited(self) -> RunResult[Any]:
        if self._result is None:
            raise _not_awaited()
        return self._result


def _not_awaited() -> RunnerError:
    return RunnerError(
        "session.run() from a notebook cell runs in the agent's job: await it for the "
        "result, `result = await session.run(user_input=...)` (or `await runner.run(...)`)"
    )


class JobGuard:
    """The job's session, agents and models guarded against calls from other loops (made on
    the job's loop), until ``release()``."""

    def __init__(self, carry: Carry) -> None:
        self._loop = asyncio.get_running_loop()
        self._carry = carry
        # (object, attribute, its own value before, the guard)
        self._guarded: list[tuple[object, str, object, object]] = []
        self._stop_listening: Callable[[], None] = _nothing

    def session(
        self, session: AgentSession[Any], carry_run: CarryRun, before_own_run: Callable[[], None]
    ) -> None:
        """Guard ``session``, its LLM, and each agent as it becomes active (and its LLM);
        ``before_own_run`` is called before each ``run`` the job's own code makes."""
        for name in LOOP_BOUND:
            self._set(session, name, self._refused(getattr(session, name), f"session.{name}"))
        self._set(
            session, "run", _carried_elsewhere(session.run, carry_run, before_own_run, self._loop)
        )
        self._model(session.llm)

        def on_item(event: ConversationItemAddedEvent) -> None:
            # added as the new agent becomes the session's, before its activity starts
            if isinstance(event.item, llm.AgentHandoff):
                self._agent(session.current_agent)

        # after the trace's own listener, which wraps the agent: the guard on top refuses a
        # call as it is made
        self._stop_listening = listen(session, {"conversation_item_added": on_item}, _failed)

    def _agent(self, agent: Agent) -> None:
        for name in AGENT_LOOP_BOUND:
            # named as a cell reaches the running agent
            label = f"session.current_agent.{name}"
            self._set(agent, name, self._refused(getattr(agent, name), label))
        if is_given(agent.llm):
            self._model(agent.llm)

    def _model(self, model: object) -> None:
        if isinstance(model, llm.LLM):  # a realtime model has no chat: its session is the job's
            self._set(model, "chat", carried_chat(model.chat, self._loop, self._carry))

    def _set(self, target: object, name: str, guarded: object) -> None:
        if any(t is target and n == name for t, n, _, _ in self._guarded):
            return  # guarded already (an agent active again)
        self._guarded.append((target, name, vars(target).get(name, _ABSENT), guarded))
        setattr(target, name, guarded)

    def _refused(self, method: Callable[..., Any], label: str) -> Callable[..., Any]:
        loop = self._loop

        @functools.wraps(method)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if not _on(loop):
                raise RunnerError(
                    f"{label}() must run on the agent's job loop, not the notebook's "
                    f"(livekit binds what it makes to the calling loop; from here it would "
                    f"break the call): run it there with `await runner.call({label}, ...)`, "
                    "or take a turn with `await runner.run(...)`"
                )
            return method(*args, **kwargs)

        return guarded

    def release(self) -> None:
        """Every guarded object as it was (the runner has stopped; a model or an agent made
        in a cell may serve the next one). After the trace's own restore: whichever of us
        wrapped last, nothing of either is left."""
        for target, name, previous, guarded in reversed(self._guarded):
            if vars(target).get(name) is not guarded:
                continue  # already put back under us
            if previous is _ABSENT:
                delattr(target, name)
            else:
                setattr(target, name, previous)
        self._guarded.clear()
        self._stop_listening()


def _failed(error: Exception) -> None:
    logger.error("the runner could not guard the new agent", exc_info=error)


_ABSENT = object()


def _nothing() -> None:
    pass


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # a thread with no loop running
        return False


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
