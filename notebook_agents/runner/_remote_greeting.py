"""Whether an agent in another process greets, and when its greeting is over, found out from
what it reports (``lk.agent.session``) and the marks its spans carry, as the kernel's runner
knows it from livekit's run of the session's start.

The protocol reports the greeting's words, but nothing while a realtime model generates a
reply (no ``thinking``). ``_livekit_console`` marks, among the spans, every speech the session
creates and its end (with how many messages it added), and the moments after which the
session's start and its first ``on_enter`` can have started no more speech. So the greeting is
over once both are over, every speech created since is done, its words have been reported, and
the agent listens: at once for an agent that says nothing until spoken to. An ``on_enter`` that
raised ends it at once (its error is the trace's). An agent that sends no spans (started by
hand, or a script with a tracer provider of its own) is taken to say nothing once it has
listened in silence for ``GREETING_SETTLE_S``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from livekit.agents import llm

from ..trace import TraceSpan
from ._livekit_console import MARKS_SCOPE, ON_ENTER_OVER, SPEECH_CREATED, SPEECH_DONE, START_OVER

GREETING_SETTLE_S = 2.0
"""how long an agent that sends no spans may listen in silence before it is taken not to greet
(against the emulator a realtime greeting's first words come about 0.5 s after the agent
listens; Gemini Live's, connecting, later)"""


class GreetingWatch:
    """On the connection's loop: told the agent's reports and spans, calls ``over`` once its
    greeting is over. ``greets``: True waits for words, False for nothing (the caller ends
    it), None finds out."""

    def __init__(self, greets: bool | None, over: Callable[[], None]) -> None:
        self.greets = greets
        self._over = over
        self.done = False
        self.items: list[llm.ChatItem] = []
        """what the agent reported of its greeting (its first handoff, its words)"""
        self.state = "initializing"
        """the agent's state as livekit names it"""
        self._marked = False
        """marks come: the agent's process is ours (``_livekit_console``)"""
        self._starting = {START_OVER, ON_ENTER_OVER}
        """what may still start a speech of the greeting"""
        self._speaking: set[str] = set()
        """its speeches not done yet"""
        self._messages = 0
        """how many messages its done speeches added"""
        self._settling: asyncio.TimerHandle | None = None

    def item_added(self, item: llm.ChatItem) -> None:
        if not self.done:
            self.items.append(item)
            self._maybe_over()

    def state_changed(self, state: str) -> None:
        self.state = state
        self._maybe_over()

    def span_ended(self, span: TraceSpan) -> None:
        """A span of the agent's process, a mark among them."""
        if self.done:
            return
        if span.scope == MARKS_SCOPE:
            self._marked = True
            self._read_mark(span.name, span.attributes)
        elif span.name == "on_enter" and span.status == "error" and self.greets is not False:
            self.end()  # it raised: whatever it meant to say, it will not
            return
        self._maybe_over()

    def end(self) -> None:
        if self._settling is not None:
            self._settling.cancel()
        if not self.done:
            self.done = True
            self._over()

    def why_not_over(self) -> str:
        """What the greeting is still waiting for, as far as the agent told."""
        if self.greets:
            return (
                "greets=True waits for its greeting (its on_enter reply); leave greets= out to "
                "have AgentProcess find out whether it greets"
            )
        if ON_ENTER_OVER in self._starting and self._marked:
            return "its on_enter had not returned: does it await something that does not end?"
        if self._speaking:
            return f"a speech of its greeting was not done (the agent is {self.state})"
        return f"the agent is {self.state}"

    def _read_mark(self, name: str, attributes: dict[str, object]) -> None:
        if name == SPEECH_CREATED:
            self._speaking.add(str(attributes["speech_id"]))
        elif name == SPEECH_DONE:
            speech = str(attributes["speech_id"])
            if speech in self._speaking:  # not one done before the watch heard of it
                self._speaking.discard(speech)
                self._messages += int(str(attributes["messages"]))
        else:
            self._starting.discard(name)

    @property
    def _said(self) -> int:
        """How many of its greeting's messages the agent has reported."""
        return sum(isinstance(i, llm.ChatMessage) and i.role == "assistant" for i in self.items)

    def _maybe_over(self) -> None:
        if self.done or self.greets is False:
            return
        if self._settling is not None:
            self._settling.cancel()  # the agent said or did something since
            self._settling = None
        if self.state != "listening":
            return
        if self._marked:
            over = not self._starting and not self._speaking and self._said >= self._messages
            if over and (self._said or self.greets is None):
                self.end()
        elif self._said:  # the reports alone: words, and listening after them
            self.end()
        elif self.greets is None:
            self._settling = asyncio.get_running_loop().call_later(GREETING_SETTLE_S, self.end)
