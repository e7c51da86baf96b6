"""An ``AgentProcess``'s typed turns: ``RemoteSession.run`` on the connection's loop, one at a
time after the greeting; its ``RunResult`` built from the items the agent reports.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from livekit.agents import RunResult, llm
from livekit.protocol.agent_pb import agent_session as agent_pb

from .. import _livekit_internals as livekit
from ..trace.remote_items import chat_items
from ._core import reply_text
from ._remote_connection import RemoteConnection
from .errors import RunnerError, TurnError


class RemoteTurns(RemoteConnection):
    """Typed turns, the greeting and the history, as the agent reports them."""

    async def run(
        self, user_input: str, *, output_type: type[Any] | None = None, timeout: float = 30.0
    ) -> RunResult[Any]:
        """One typed user turn: livekit's ``RunResult`` of it, built from the events the agent
        reports (``result.expect`` checks them as in a livekit eval). Raises ``TurnError``
        when the turn went wrong, ``RunnerError`` when the agent cannot take turns."""
        if output_type is not None:
            raise RunnerError(
                "run(output_type=...) needs the agent in the kernel (NotebookRunner): the "
                "protocol reports a turn's items, not its typed output"
            )
        return await super().run(user_input, timeout=timeout)

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        started = self.trace.now()
        try:
            reply = await self._turn(text, timeout)
        except RunnerError:
            raise
        except RuntimeError as e:  # what the agent reported (its session's run raised)
            self._require_turns("the turn")
            raise TurnError("", self._turn_errors(started, None, spoken=False), e) from e
        result = livekit.reported_run_result(text, chat_items(reply.items), self._agent)
        if errors := self._turn_errors(started, None, spoken=False):
            raise TurnError(reply_text(result), errors)
        return result

    def _late(self, timeout: float, started: float) -> Callable[[], str]:
        def why() -> str:
            if self._greeting is None:
                return self._not_greeted(timeout)
            return f"the agent did not answer within {timeout:.0f} s"

        return why

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]:
        """What the agent said on its own as its session started (its ``on_enter`` reply),
        once said: livekit's ``RunResult`` built from what it reported, as ``run``'s are (the
        first agent's handoff, then its reply), for ``expect``. Raises ``TurnError`` when it
        went wrong as a turn does (an ``on_enter`` that raised, a model's error: the trace's
        ``error`` events until it was over), ``RunnerError`` when the call ended instead."""
        if self._greeting is None:
            said = self._in_job(self._greeting_over(), "greeting()")
            late = functools.partial(self._not_greeted, timeout)
            await self._from_job(said, "greeting()", timeout, "the greeting itself goes on", late)
            self._require_turns("greeting()")  # the connection ended instead
        greeting = self._greeting
        assert greeting is not None
        errors = self._turn_errors(0.0, None, spoken=False)
        if went_wrong := [e for e in errors if e.t <= self._greeting_ended_at]:
            raise TurnError(reply_text(greeting), went_wrong, during="the greeting")
        return greeting

    async def history(self) -> list[llm.ChatItem]:
        """The agent's own ``session.history``, as it reports it (``get_chat_history``)."""
        session = self.session
        self._require_turns("history()")
        assert session is not None
        asked = self._in_job(session.get_chat_history(), "history()")
        return chat_items((await asyncio.wrap_future(asked)).items)

    async def _turn(self, text: str, timeout: float) -> agent_pb.SessionResponse.RunInputResponse:
        assert self._turn_lock is not None and self.session is not None
        async with self._turn_lock:  # the agent's AgentSession.run cannot nest
            try:
                await asyncio.wait_for(self._greeting_over(), timeout)
            except asyncio.TimeoutError:
                raise RunnerError(self._not_greeted(timeout)) from None
            try:
                return await self.session.run(text, timeout=timeout)
            except RuntimeError:  # the transport closed: the caller says why, once known
                if self._hanging_up is not None:
                    await self._hanging_up
                raise

    def _not_greeted(self, timeout: float) -> str:
        """Why the greeting a turn waits for is not over, as the reports and spans tell."""
        return (
            f"the agent's greeting was not over within {timeout:g} s, and turns wait for it: "
            f"{self._greeting_watch.why_not_over()}"
        )
