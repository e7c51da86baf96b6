"""livekit's ``RunResult`` of a VideoSDK turn, so ``result.expect`` (and a suite) checks it.

A turn's trace events after the user's message are the items livekit's run would have
recorded (the agents' messages, tool calls and outputs, handoffs), in the order they
happened; the handoff's agents are VideoSDK's own, so ``is_agent_handoff(new_agent_type=Billing)``
names the VideoSDK class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from livekit.agents import RunResult, llm

from .. import _livekit_internals as livekit
from ..trace import TraceEvent


def turn_items(events: Iterable[TraceEvent], started_at: float) -> list[llm.ChatItem]:
    """The livekit chat items of a turn's events (``started_at``: the trace's ``started_at``,
    so each item has its Unix time)."""
    items: list[llm.ChatItem] = []
    for event in events:
        data, at = event.data, started_at + event.t
        if event.kind == "agent_message":
            items.append(
                llm.ChatMessage(
                    id=data["item_id"],
                    role="assistant",
                    content=[data["text"]],
                    interrupted=bool(data.get("interrupted", False)),
                    created_at=at,
                )
            )
        elif event.kind == "tool_call":
            items.append(
                llm.FunctionCall(
                    id=f"{data['call_id']}/call",
                    call_id=data["call_id"],
                    name=data["name"],
                    arguments=data["arguments"],
                    created_at=at,
                )
            )
        elif event.kind == "tool_output":
            items.append(
                llm.FunctionCallOutput(
                    id=f"{data['call_id']}/output",
                    call_id=data["call_id"],
                    name=data["name"],
                    output=data["output"],
                    is_error=data["is_error"],
                    created_at=at,
                )
            )
        elif event.kind == "handoff" and data.get("to"):
            items.append(
                llm.AgentHandoff(old_agent_id=data["from"], new_agent_id=data["to"], created_at=at)
            )
    return items


def turn_result(
    user_input: str | None,
    events: Iterable[TraceEvent],
    started_at: float,
    agent: Callable[[str], Any],
) -> RunResult[None]:
    """The turn's ``RunResult``, done (``user_input`` None: what the agent said on its own);
    ``agent(label)`` gives the VideoSDK agent a handoff names."""
    return livekit.reported_run_result(user_input, turn_items(events, started_at), agent)
