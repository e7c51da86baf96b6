"""A Realtime conversation: the ordered items of one connection, edited as the service does."""

from __future__ import annotations

import copy
import secrets
import string
from typing import Any

from .errors import ServiceError
from .replies import Turn

ROOT = "root"
_ID_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    """An id shaped like OpenAI's: ``item_`` + 21 random characters (every protocol's items,
    sessions and events take the same shape)."""
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(21))


class Conversation:
    """Items in order; the client inserts after ``previous_item_id`` (``"root"`` = first)."""

    def __init__(self) -> None:
        self._items: list[dict[str, Any]] = []
        # kept as the items change (on the server's thread), for readers on other threads
        self._chat_ids: list[str] = []

    def __len__(self) -> int:
        return len(self._items)

    def last_id(self) -> str | None:
        """The id of the last item, None when empty (without copying the conversation)."""
        return self._items[-1]["id"] if self._items else None

    def get(self, item_id: str) -> dict[str, Any] | None:
        return next((item for item in self._items if item["id"] == item_id), None)

    def predecessor(self, item_id: str) -> str | None:
        index = self._index(item_id)
        return self._items[index - 1]["id"] if index > 0 else None

    def insert(
        self,
        item: dict[str, Any],
        previous_item_id: str | None = None,
        *,
        event_id: str | None = None,
    ) -> dict[str, Any]:
        """Add ``item`` (an id is assigned if missing) and return the stored copy.

        ``previous_item_id`` None appends; ``"root"`` puts it first.
        """
        stored = copy.deepcopy(item)
        stored.setdefault("id", new_id("item_"))
        stored.setdefault("object", "realtime.item")
        stored.setdefault("status", "completed")
        if self.get(stored["id"]) is not None:
            raise ServiceError(
                f"Item with id '{stored['id']}' already exists.",
                code="item_create_duplicate_item_id",
                param="item.id",
                event_id=event_id,
            )
        if previous_item_id is None or previous_item_id == self.last_id():
            self._items.append(stored)
            if _in_chat(stored):
                self._chat_ids.append(stored["id"])
            return stored
        if previous_item_id == ROOT:
            self._items.insert(0, stored)
        else:
            if self.get(previous_item_id) is None:
                raise ServiceError(
                    f"Previous item with id '{previous_item_id}' not found.",
                    code="item_create_invalid_previous_item_id",
                    param="previous_item_id",
                    event_id=event_id,
                )
            self._items.insert(self._index(previous_item_id) + 1, stored)
        self._chat_ids = [item["id"] for item in self._items if _in_chat(item)]
        return stored

    def delete(self, item_id: str, *, event_id: str | None = None) -> None:
        if self.get(item_id) is None:
            raise ServiceError(
                f"Item with item_id '{item_id}' not found.",
                code="item_delete_invalid_item_id",
                param="item_id",
                event_id=event_id,
            )
        del self._items[self._index(item_id)]
        self._chat_ids = [item["id"] for item in self._items if _in_chat(item)]

    def truncate(
        self, item_id: str, content_index: int, audio_end_ms: int, *, event_id: str | None = None
    ) -> None:
        """Cut an assistant audio part at ``audio_end_ms``; its transcript is cut to match."""
        item = self.get(item_id)
        if item is None or item.get("role") != "assistant":
            raise ServiceError(
                f"Assistant item with id '{item_id}' not found.",
                code="item_truncate_invalid_item_id",
                param="item_id",
                event_id=event_id,
            )
        parts = item.get("content") or []
        if (
            not 0 <= content_index < len(parts)
            or parts[content_index].get("type") != "output_audio"
        ):
            raise ServiceError(
                f"Content index {content_index} of item '{item_id}' is not audio.",
                code="invalid_value",
                param="content_index",
                event_id=event_id,
            )
        part = parts[content_index]
        duration_ms = int(part.get("_audio_ms", 0))
        if audio_end_ms > duration_ms:
            raise ServiceError(
                f"audio_end_ms {audio_end_ms} is longer than the audio ({duration_ms} ms).",
                code="invalid_value",
                param="audio_end_ms",
                event_id=event_id,
            )
        words = (part.get("transcript") or "").split()
        kept = round(len(words) * audio_end_ms / duration_ms) if duration_ms else 0
        part["transcript"] = " ".join(words[:kept])
        part["_audio_ms"] = audio_end_ms
        part["_truncated"] = True  # a reply still streaming stops here

    def described(self) -> list[dict[str, Any]]:
        """The items in order as the trace describes chat items (id, type, role, name, text),
        so the model's side of a conversation shows beside livekit's."""
        names = {
            item.get("call_id"): item.get("name")
            for item in self._items
            if item.get("type") == "function_call"
        }
        return [describe(item, names) for item in self._items]

    def chat_item_ids(self) -> list[str]:
        """The ids of the items a livekit chat context holds too (the caller's and the model's
        messages, tool calls and their outputs), in order. Safe from any thread without the
        server's loop: kept as the items change, and copied in one step."""
        return list(self._chat_ids)

    def turns(self) -> list[Turn]:
        """The conversation as the reply rules see it."""
        return [turn for item in self._items if (turn := to_turn(item)) is not None]

    def _index(self, item_id: str) -> int:
        return next(i for i, item in enumerate(self._items) if item["id"] == item_id)


def to_turn(item: dict[str, Any]) -> Turn | None:
    kind = item.get("type")
    if kind == "function_call":
        return Turn("tool_call", item.get("arguments") or "", name=item.get("name"))
    if kind == "function_call_output":
        return Turn("tool_output", str(item.get("output") or ""))
    if kind != "message":
        return None
    role = item.get("role")
    if role not in ("system", "user", "assistant"):
        return None
    return Turn(role, content_text(item))


def describe(item: dict[str, Any], names: dict[Any, Any]) -> dict[str, Any]:
    """One item as ``trace.describe_item`` gives a livekit one; a tool output is named after
    its call (``names``: call id -> tool name), if the conversation still holds that call."""
    kind = item.get("type")
    described: dict[str, Any] = {"id": item["id"], "type": kind}
    if kind == "message":
        described.update(role=item.get("role"), text=content_text(item))
    elif kind == "function_call":
        described.update(
            name=item.get("name"), call_id=item.get("call_id"), text=item.get("arguments") or ""
        )
    elif kind == "function_call_output":
        described.update(
            name=names.get(item.get("call_id")) or "",
            call_id=item.get("call_id"),
            text=str(item.get("output") or ""),
        )
    return described


def content_text(item: dict[str, Any]) -> str:
    """The text of a message: its text parts, or the transcripts of its audio parts (what
    the model heard of a caller's audio, if nobody asked for its transcript)."""
    texts = []
    for part in item.get("content") or []:
        # a plain loop, not next() over a generator: the runner asks after every turn
        for key in _TEXT_KEYS:
            text = part.get(key)
            if text is not None:
                if text:
                    texts.append(str(text))
                break
    return " ".join(texts)


def _in_chat(item: dict[str, Any]) -> bool:
    return item.get("role") in _CHAT_ROLES or item.get("type") in _TOOL_TYPES


_CHAT_ROLES = ("user", "assistant")
_TOOL_TYPES = ("function_call", "function_call_output")

_TEXT_KEYS = ("text", "transcript", "_heard")
"""where a part's text is, in the order looked at"""


def public(item: dict[str, Any]) -> dict[str, Any]:
    """An item as sent to the client: without the emulator's private bookkeeping keys."""
    result = {k: v for k, v in item.items() if not k.startswith("_")}
    if "content" in result:
        result["content"] = [
            {k: v for k, v in part.items() if not k.startswith("_")} for part in result["content"]
        ]
    return result
