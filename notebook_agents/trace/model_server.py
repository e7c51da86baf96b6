"""The model's server: where a realtime session's conversation is read as the model holds it.

A realtime plugin keeps a record of the model's conversation built from the server's acks;
an ack that comes late (or never) leaves that record and the model apart, and the two can then
agree with livekit while the model answers from another conversation. Where the server can be
asked, that question is settled: ``Emulator`` answers it for the sessions it serves.
"""

from __future__ import annotations

from typing import Any, Protocol


class ModelServer(Protocol):
    """Where a realtime session's conversation can be read as the model holds it: its server
    (an ``Emulator`` is one for the sessions it serves)."""

    def conversation(self, session_id: str) -> list[dict[str, Any]] | None:
        """The items the model holds in session ``session_id`` (its ``session.created`` id),
        in order, described as the trace describes chat items; None if it is not known here."""
        ...

    def item_ids(self, session_id: str) -> list[str] | None:
        """The ids of the items of ``conversation(session_id)`` that a chat context holds too
        (the caller's and the model's messages, tool calls and their outputs), in order; None
        if it is not known here. Read after every turn: only ids, so it can be cheap; the
        described conversation is read only when the two sides part."""
        ...
