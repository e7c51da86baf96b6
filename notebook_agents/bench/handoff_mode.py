"""The bench's mode, applied to your agents at the handoff, and why livekit may not run it.

Your A constructs B itself, so the mode is applied where livekit makes B active:
``AgentSession.update_agent``, which livekit calls with the agent A's tool returned. There
B is given A's model instance (reused) or its own (fresh), and A's context as A's tool saw it
(copied) or none of it (empty). B's tools, instructions and ``on_enter`` stay as written.

What ran is read at livekit's ``AgentHandoff`` item, as the trace reads it (``read_handoff``):
the trial is labelled by it, with or without a ``Trace`` attached.

Whether livekit then reuses the realtime session is livekit's decision
(``AgentActivity._detach_reusable_resources`` in livekit-agents 1.8.9): the same model
instance, and the model able to take B's context, instructions and tools on a live session
(its ``capabilities``) or B's being the same. ``reuse_blockers`` mirrors those conditions to
name the reason when a trial asked "reused" ran fresh.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from typing import TYPE_CHECKING, Any

from livekit.agents import (
    Agent,
    AgentSession,
    ConversationItemAddedEvent,
    FunctionToolsExecutedEvent,
    llm,
)
from livekit.agents.utils import is_given

from .. import _livekit_internals as livekit
from ..modes import ContextMode, SessionMode
from ..trace.reading import read_handoff
from ..trace.schema import HandoffData
from .clock import Clock
from .probe import RealtimeProbe

if TYPE_CHECKING:
    # no public export: the running agent's activity, which the handoff swaps
    from livekit.agents.voice.agent_activity import AgentActivity


def reuse_blockers(
    model: Any, a: Agent, b: Agent, session_ctx: llm.ChatContext | None
) -> list[str]:
    """Why livekit 1.8.9 would open B a fresh session although B is to run on ``model``,
    A's realtime model (its conditions, in its order); empty: it reuses A's session."""
    if not isinstance(model, llm.RealtimeModel):
        return ["A's model is not a realtime model: there is no session to reuse"]
    found = []
    if is_given(b.llm) and b.llm is not model:
        found.append(
            f"B pins its own llm ({type(b.llm).__name__}): it cannot run on A's model instance"
        )
    caps = model.capabilities
    if not caps.mutable_chat_context and session_ctx is not None:
        same = session_ctx.copy(
            exclude_instructions=True, exclude_handoff=True, exclude_config_update=True
        ).is_equivalent(
            b.chat_ctx.copy(
                exclude_instructions=True, exclude_handoff=True, exclude_config_update=True
            )
        )
        if not same:
            found.append(
                "the model cannot change a live session's context "
                "(capabilities.mutable_chat_context is False) and B's context differs from it"
            )
    if not caps.mutable_instructions and a.instructions != b.instructions:
        found.append(
            "the model cannot change a live session's instructions "
            "(capabilities.mutable_instructions is False) and B's instructions differ from A's"
        )
    if not caps.mutable_tools and llm.ToolContext(a.tools) != llm.ToolContext(b.tools):
        found.append(
            "the model cannot change a live session's tools (capabilities.mutable_tools is "
            "False) and B's tools are not A's tool objects"
        )
    return found


class HandoffWatch:
    """Applies the asked mode to the first agent A hands off to, just before livekit starts
    it, and marks t0 (A's tool returned B) and B's ``on_enter`` on the trial's clock. Runs on
    the session's loop."""

    def __init__(
        self,
        session: AgentSession[Any],
        mode: tuple[SessionMode, ContextMode],
        fresh_model: llm.RealtimeModel | None,
        clock: Clock,
        probe: RealtimeProbe,
    ) -> None:
        self.session = session
        self.asked_session, self.asked_context = mode
        self.fresh_model = fresh_model
        self.clock = clock
        self.probe = probe
        self.a: Agent | None = None
        self.b: Agent | None = None
        self.own_model: llm.RealtimeModel | None = None
        """a realtime model B's code pinned (the trial closes it, as the session does not)"""
        self.blockers: list[str] = []
        """why livekit would not reuse A's session for B, as the handoff began"""
        self.handoff: HandoffData | None = None
        """what ran: the trace's reading of the handoff to B, read as livekit made it"""
        self.tool_reply: str | None = None
        """what A said answering its tool's output before B started (livekit asks A for it
        when the output wants a reply and the model makes none of its own); None: nothing"""
        self._from: AgentActivity | None = None
        self._pending_calls: set[str] = set()
        self._update_agent = session.update_agent

    def install(self) -> None:
        """Watch the session (call on its loop, after it started)."""
        self.session.on("function_tools_executed", self._on_tools_executed)
        self.session.on("conversation_item_added", self._on_item_added)
        self.session.update_agent = self._on_update_agent  # type: ignore[method-assign]
        activity = livekit.current_activity(self.session)
        if activity is not None:
            if isinstance(activity.llm, llm.RealtimeModel):
                self.probe.watch_model(activity.llm)  # a session it opens for B, run fresh
            if activity.realtime_llm_session is not None:
                self.probe.watch_session(activity.realtime_llm_session)

    def _on_tools_executed(self, ev: FunctionToolsExecutedEvent) -> None:
        # the call that hands off and its output: not in A's context when A's tool ran
        self._pending_calls = {call.call_id for call in ev.function_calls}

    def _on_item_added(self, ev: ConversationItemAddedEvent) -> None:
        if self.b is None or self.handoff is not None:
            return
        item = ev.item
        if isinstance(item, llm.ChatMessage) and item.role == "assistant":
            # between A's tool returning B and B's start, only A speaks: its tool reply
            self.tool_reply = (self.tool_reply or "") + (item.text_content or "")
        # added once the new activity is the session's, before it starts: A's session, if
        # reused, is detached from A's activity and not yet B's (the trace reads it there)
        if not isinstance(item, llm.AgentHandoff):
            return
        new = livekit.current_activity(self.session)
        if self._from is not None and new is not None and new.agent is self.b:
            self.handoff = read_handoff(self._from, new)

    def _on_update_agent(self, agent: Agent) -> None:
        if self.b is None and agent is not self.session.current_agent:
            self.clock.t0 = time.perf_counter()
            self.a, self.b = self.session.current_agent, agent
            self._from = livekit.current_activity(self.session)
            self._apply(self.a, agent)
        self._update_agent(agent)

    def _apply(self, a: Agent, b: Agent) -> None:
        activity = self._from
        a_model = activity.llm if activity is not None else None
        if not is_given(b.llm):
            if self.asked_session == "reused" and a_model is not None:
                b.update_options(llm=a_model)
            elif self.asked_session == "fresh" and self.fresh_model is not None:
                self.probe.watch_model(self.fresh_model)
                b.update_options(llm=self.fresh_model)
        elif isinstance(b.llm, llm.RealtimeModel) and b.llm is not a_model:
            self.own_model = b.llm
            self.probe.watch_model(b.llm)  # B's own, as its code pins it
        seen = a.chat_ctx.copy()
        seen.items[:] = [item for item in seen.items if _call_id(item) not in self._pending_calls]
        a_ids = {item.id for item in seen.items}
        own = [item for item in b.chat_ctx.items if item.id not in a_ids]
        ctx = seen if self.asked_context == "copied" else llm.ChatContext()
        ctx.items.extend(own)
        livekit.set_context_before_start(b, ctx)
        rt = activity.realtime_llm_session if activity is not None else None
        self.blockers = reuse_blockers(a_model, a, b, rt.chat_ctx if rt is not None else None)
        original = b.on_enter
        clock = self.clock

        async def on_enter() -> None:
            clock.mark("on_enter")
            await original()

        b.on_enter = on_enter  # type: ignore[method-assign]
        if a_model is not None and not isinstance(a_model, llm.RealtimeModel):
            # a cascaded B's reply streams through its llm_node: its first chunk is the reply
            b.llm_node = _first_chunk_marked(b.llm_node, clock)  # type: ignore[method-assign]


def _first_chunk_marked(
    llm_node: Callable[..., Any], clock: Clock
) -> Callable[..., AsyncIterable[Any]]:
    """``llm_node`` (one that streams, as livekit's default does), marking ``first_text`` on
    the trial's clock at its first chunk once B's ``on_enter`` began."""

    async def marked(*args: Any, **kwargs: Any) -> AsyncIterable[Any]:
        async for chunk in llm_node(*args, **kwargs):
            clock.mark_reply("first_text")
            yield chunk

    return marked


def _call_id(item: llm.ChatItem) -> str | None:
    return item.call_id if isinstance(item, llm.FunctionCall | llm.FunctionCallOutput) else None
