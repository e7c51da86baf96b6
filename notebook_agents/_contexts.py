"""Each agent's chat context at a moment of a trace, rebuilt from its events.

A handoff event carries the new agent's starting context (``context_items``); from there the
agent's messages and tool items are appended as they happen and ``context_changed`` edits
applied. That is enough to replay a saved trace without the session that made it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace import TraceEvent

Item = dict[str, Any]


def agent_contexts(events: Iterable[TraceEvent], at: float | None = None) -> dict[str, list[Item]]:
    """Each agent's conversation items (in order) after every event at or before ``at``."""
    contexts: dict[str, _Context] = {}
    for event in events:
        if at is not None and event.t > at:
            break
        data = event.data
        if event.kind == "handoff" and data.get("to"):
            start = data.get("context_items")
            if start is not None or data["to"] not in contexts:
                # without a recorded start (an older trace) a returning agent keeps what it had
                contexts[data["to"]] = _Context(start or [])
        elif event.kind == "context_changed":
            contexts.setdefault(data.get("agent") or "", _Context()).edit(data)
        elif event.agent is not None and (item := _item_of(event.kind, data)) is not None:
            contexts.setdefault(event.agent, _Context()).append(item)
    return {agent: context.items for agent, context in contexts.items()}


class _Context:
    """Items in order, each once: tool items known by call id (tool events carry no item
    id), messages by item id."""

    def __init__(self, items: Iterable[Item] = ()) -> None:
        self.items: list[Item] = []
        self._keys: set[tuple[str, str]] = set()
        for item in items:
            self.append(dict(item))

    def append(self, item: Item) -> None:
        key = _key(item)
        if key not in self._keys:
            self._keys.add(key)
            self.items.append(item)

    def edit(self, data: dict[str, Any]) -> None:
        removed = {_key(item) for item in data.get("removed", [])}
        self.items = [item for item in self.items if _key(item) not in removed]
        self._keys -= removed
        for item in data.get("added", []):
            self.append(dict(item))


def _item_of(kind: str, data: dict[str, Any]) -> Item | None:
    if kind in ("user_message", "agent_message"):
        role = "user" if kind == "user_message" else "assistant"
        return {"id": data.get("item_id"), "type": "message", "role": role, "text": data["text"]}
    if kind in ("tool_call", "tool_output"):
        item_type = "function_call" if kind == "tool_call" else "function_call_output"
        text = data.get("arguments" if kind == "tool_call" else "output", "")
        return {"type": item_type, "name": data["name"], "call_id": data["call_id"], "text": text}
    return None


def _key(item: Item) -> tuple[str, str]:
    if item.get("call_id"):
        return (item["type"], item["call_id"])
    return ("id", str(item.get("id")))
