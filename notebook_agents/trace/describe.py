"""livekit's objects as the trace's plain data: agents' labels, chat items, errors, usage.

Pure functions; the trace calls them when it makes its events, off the session's thread.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from livekit.agents import Agent, llm, metrics

# camel_to_snake_case has no public export: livekit derives an agent's default id with it
from livekit.agents.utils import misc

from .schema import ChatItemData, ModelUsageData

if TYPE_CHECKING:
    # no public export: the running agent's activity, which handoffs swap
    from livekit.agents.voice.agent_activity import AgentActivity


def agent_label(agent: Agent) -> str:
    """The agent's class name, unless it was given an ``id`` of its own."""
    return _label(type(agent).__name__, agent.id)


def class_path(agent: object) -> str:
    """The agent's class as ``module:qualname`` (a handoff's ``to_class``), whichever
    framework's agent it is."""
    return f"{type(agent).__module__}:{type(agent).__qualname__}"


def label_of(agent_id: str, to_class: str | None) -> str:
    """``agent_label`` of an agent known by its id and class (``module:qualname``), as another
    process reports it; its id when its class is not known."""
    if to_class is None:
        return agent_id
    return _label(to_class.rpartition(":")[2].rpartition(".")[2], agent_id)


def activity_label(activity: AgentActivity | None) -> str | None:
    """The label of an activity's agent (None: no agent was running)."""
    return agent_label(activity.agent) if activity is not None else None


@functools.lru_cache(maxsize=1024)
def _label(name: str, agent_id: str) -> str:
    # uncached, the two regex passes of camel_to_snake_case are most of labelling's cost
    return name if agent_id in (misc.camel_to_snake_case(name), "default_agent") else agent_id


def describe_item(item: llm.ChatItem) -> ChatItemData:
    """A chat item as the trace shows it: id, type, role and text."""
    described: ChatItemData = {"id": item.id, "type": item.type}
    if isinstance(item, llm.ChatMessage):
        described["role"], described["text"] = item.role, message_text(item)
    elif isinstance(item, llm.FunctionCall | llm.FunctionCallOutput):
        described["name"], described["call_id"] = item.name, item.call_id
        described["text"] = item.arguments if isinstance(item, llm.FunctionCall) else item.output
    return described


def message_text(message: llm.ChatMessage) -> str:
    """``message.text_content``: the text without expressive ``<expr/>`` markup."""
    raw = message.raw_text_content or ""
    # text_content imports and runs the markup stripper on each call; without a tag there is
    # nothing to strip
    return (message.text_content or "") if "expr" in raw else raw


def message_metrics(message: llm.ChatMessage) -> dict[str, float]:
    """The numbers of livekit's ``ChatMessage.metrics`` (per-turn latency, speaking times)."""
    return {
        name: float(number)
        for name, number in (message.metrics or {}).items()
        if isinstance(number, int | float)
        and not isinstance(number, bool)
        and math.isfinite(number)
    }


def conversation_items(agent: Agent) -> list[llm.ChatItem]:
    """What an agent brings to a conversation: messages and tool items, not config entries."""
    return [
        item
        for item in agent.chat_ctx.items
        if item.type in ("message", "function_call", "function_call_output")
        and not (isinstance(item, llm.ChatMessage) and item.role in ("system", "developer"))
    ]


def syncs_to_model(item: llm.ChatItem) -> bool:
    """Items a realtime plugin sends to the model: not instructions, handoffs or config."""
    if isinstance(item, llm.ChatMessage):
        return item.role in ("user", "assistant")
    return item.type in ("function_call", "function_call_output")


def sent_to_model(item: llm.ChatItem) -> bool:
    """What a realtime plugin sends of livekit's context: ``syncs_to_model``, but not an
    empty message (livekit keeps one for itself)."""
    return syncs_to_model(item) and not (isinstance(item, llm.ChatMessage) and not item.content)


def error_text(reported: object) -> str:
    """The text of an error livekit reports (its session events wrap the exception in
    ``.error``), with what the service said: ``APIError`` keeps that in its body ("OpenAI
    Realtime API returned an error" alone does not say why)."""
    error = getattr(reported, "error", reported)
    text = str(error)
    body = getattr(error, "body", None)
    said = body.get("message") if isinstance(body, dict) else getattr(body, "message", None)
    return f"{text}: {said}" if isinstance(said, str) and said and said not in text else text


def usage_data(usage: metrics.AgentSessionUsage) -> list[ModelUsageData]:
    """livekit's ``AgentSessionUsage``: per model, its counters that are not zero."""
    described: list[ModelUsageData] = []
    for model in usage.model_usage:
        # the model's fields as pydantic keeps them (model_dump costs ten times as much)
        counts = {
            name: number
            for name, number in vars(model).items()
            if number and type(number) in _NUMBERS and name not in _NAMING
        }
        described.append(
            {"type": model.type, "provider": model.provider, "model": model.model, "counts": counts}
        )
    return described


_NAMING = frozenset({"type", "provider", "model"})
"""a model usage's fields that name it rather than count"""
_NUMBERS = (int, float)
"""the types of a number livekit reports (``type(x) in``: a bool is no number here, and the
check runs for every field of every report)"""
