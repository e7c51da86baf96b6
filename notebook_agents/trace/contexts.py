"""Each agent's chat context at a moment of a trace, rebuilt from its events.

A handoff event carries the new agent's starting context (``context_items``); from there the
agent's messages and tool items are appended as they happen and ``context_changed`` edits
applied. That is enough to replay a saved trace without the session that made it. The
model's side is known where it parted from livekit's: ``context_diverged`` carries both.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import TraceEvent

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


def divergences(events: Iterable[TraceEvent], at: float | None = None) -> dict[str, TraceEvent]:
    """Each agent whose chat context and model's conversation were apart at ``at``: its
    ``context_diverged`` event (both sides as they were when they parted)."""
    parted: dict[str, TraceEvent] = {}
    for event in events:
        if at is not None and event.t > at:
            break
        if event.kind == "context_diverged":
            parted[event.data["agent"]] = event
        elif event.kind == "context_converged":
            parted.pop(event.data["agent"], None)
    return parted


MARKS = {
    "missing": "missing from the other side",
    "extra": "only on this side",
    "moved": "out of order",
}
"""how an item of one side stands against the other's, as ``compared`` marks it"""


def compared(columns: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[Item]]:
    """The columns, each item marked (``"mark"``, a key of ``MARKS``) against the first: in
    another column, ``extra`` if the first lacks it, ``moved`` if outside the longest runs
    both hold in the same order; in the first, ``missing`` if another column lacks it."""
    titles = list(columns)
    if not titles:
        return {}
    first = [dict(item) for item in columns[titles[0]]]
    first_keys = [item_key(item) for item in first]
    lacking: set[tuple[str, str]] = set()
    result = {titles[0]: first}
    for title in titles[1:]:
        items = [dict(item) for item in columns[title]]
        keys = [item_key(item) for item in items]
        lacking |= set(first_keys) - set(keys)
        for item, mark in zip(items, _marks(first_keys, keys), strict=True):
            if mark:
                item["mark"] = mark
        result[title] = items
    for item, key in zip(first, first_keys, strict=True):
        if key in lacking:
            item["mark"] = "missing"
    return result


def _marks(reference: list[tuple[str, str]], keys: list[tuple[str, str]]) -> list[str | None]:
    """For each of ``keys``: ``extra``, ``moved`` or None against the ``reference`` order."""
    known, present = set(reference), set(keys)
    shared = [key for key in keys if key in known]
    in_order: set[tuple[str, str]] = set()
    ordered = [key for key in reference if key in present]
    matcher = difflib.SequenceMatcher(None, ordered, shared, autojunk=False)
    for block in matcher.get_matching_blocks():
        in_order.update(shared[block.b : block.b + block.size])
    return ["extra" if key not in known else None if key in in_order else "moved" for key in keys]


class _Context:
    """Items in order, each once: tool items known by call id (tool events carry no item
    id), messages by item id."""

    def __init__(self, items: Iterable[Item] = ()) -> None:
        self.items: list[Item] = []
        self._keys: set[tuple[str, str]] = set()
        for item in items:
            self.append(dict(item))

    def append(self, item: Item) -> None:
        key = item_key(item)
        if key not in self._keys:
            self._keys.add(key)
            self.items.append(item)

    def edit(self, data: dict[str, Any]) -> None:
        removed = {item_key(item) for item in data.get("removed", [])}
        self.items = [item for item in self.items if item_key(item) not in removed]
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


def item_key(item: Mapping[str, Any]) -> tuple[str, str]:
    """Which item this is across sources: a tool item by its call, a message by its id."""
    if item.get("call_id"):
        return (item["type"], item["call_id"])
    return ("id", str(item.get("id")))
