"""The model's side a runner holds livekit's chat context against: the emulators in this process.

A session's realtime model pointed at an ``Emulator`` running in this kernel has its
conversation there, by the server session's id; a model elsewhere (OpenAI, an emulator in
another process) is not found, and the plugin's view of it stands in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..emulator import Emulator

T = TypeVar("T")


class InProcessEmulators:
    """A ``ModelServer``: any ``Emulator`` running in this process that served the session."""

    def conversation(self, session_id: str) -> list[dict[str, Any]] | None:
        return _first_found(lambda emulator: emulator.conversation(session_id))

    def item_ids(self, session_id: str) -> list[str] | None:
        return _first_found(lambda emulator: emulator.item_ids(session_id))


def _first_found(read: Callable[[Emulator], T | None]) -> T | None:
    """What the first running emulator that served the session answers."""
    for emulator in Emulator.in_this_process():
        try:
            found = read(emulator)
        except (RuntimeError, TimeoutError):  # stopped while asked: it serves no one now
            continue
        if found is not None:
            return found
    return None
