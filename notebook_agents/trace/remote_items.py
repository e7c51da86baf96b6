"""livekit's ``lk.agent.session`` chat items (protobuf) as livekit's own ``llm`` chat items.

livekit encodes a session's items for the protocol (``encode_chat_item``: same-named fields,
Unix times as ``Timestamp``) and ships no decoder; this is its inverse, so an agent in another
process gives the same ``ChatMessage``, ``FunctionCall``, ... as one in the kernel.
"""

from __future__ import annotations

from typing import Any, cast

from google.protobuf.message import Message
from livekit.agents import llm
from livekit.protocol.agent_pb import agent_session as agent_pb

ROLES: dict[int, llm.ChatRole] = {
    agent_pb.DEVELOPER: "developer",
    agent_pb.SYSTEM: "system",
    agent_pb.USER: "user",
    agent_pb.ASSISTANT: "assistant",
}
"""the protocol's ``ChatRole`` -> livekit's"""


def chat_item(item: agent_pb.ChatContext.ChatItem) -> llm.ChatItem | None:
    """The livekit item ``item`` encodes; None for an empty one (nothing livekit encodes)."""
    kind = item.WhichOneof("item")
    if kind == "message":
        m = item.message
        return llm.ChatMessage(
            id=m.id,
            role=ROLES.get(m.role, "assistant"),
            content=[c.text for c in m.content],
            interrupted=m.interrupted,
            metrics=_fields(m.metrics),
            created_at=_time(m),
        )
    if kind == "function_call":
        c = item.function_call
        return llm.FunctionCall(
            id=c.id, call_id=c.call_id, name=c.name, arguments=c.arguments, created_at=_time(c)
        )
    if kind == "function_call_output":
        o = item.function_call_output
        return llm.FunctionCallOutput(
            id=o.id,
            call_id=o.call_id,
            name=o.name,
            output=o.output,
            is_error=o.is_error,
            created_at=_time(o),
        )
    if kind == "agent_handoff":
        h = item.agent_handoff
        return llm.AgentHandoff(
            id=h.id,
            old_agent_id=h.old_agent_id or None,
            new_agent_id=h.new_agent_id,
            created_at=_time(h),
        )
    if kind == "agent_config_update":
        u = item.agent_config_update
        return llm.AgentConfigUpdate(
            id=u.id,
            instructions=u.instructions or None,
            tools_added=list(u.tools_added) or None,
            tools_removed=list(u.tools_removed) or None,
            created_at=_time(u),
        )
    return None


def chat_items(items: Any) -> list[llm.ChatItem]:
    """Every item of a protocol list (a history, a run's items), decoded, in order."""
    return [decoded for item in items if (decoded := chat_item(item)) is not None]


def _time(message: Any) -> float:
    """``created_at`` as livekit keeps it: Unix seconds."""
    return _seconds(message.created_at)


def _fields(message: Message) -> llm.MetricsReport:
    """The metrics set on ``message``: numbers as they are, timestamps as Unix seconds."""
    values: dict[str, float] = {}
    for field, value in message.ListFields():
        if field.message_type is not None:  # a Timestamp
            values[field.name] = _seconds(value)
        else:
            values[field.name] = float(value)
    return cast(llm.MetricsReport, values)


def _seconds(timestamp: Any) -> float:
    # seconds and nanos added: ToNanoseconds() / 1e9 loses the last digits of a Unix time
    return float(timestamp.seconds) + float(timestamp.nanos) / 1e9
