"""The model's side a runner holds livekit's chat context against: the emulators in this process.

A session's realtime model pointed at an ``Emulator`` running in this kernel has its
conversation there, by the server session's id; a model elsewhere (OpenAI, an emulator in
another process) is not found, and the plugin's view of it stands in.
"""

from __future__ import annotations

from typing import Any

from ..emulator import Emulator


class InProcessEmulators:
    """A ``ModelTruth``: any ``Emulator`` running in this process that served the session."""

    def conversation(self, session_id: str) -> list[dict[str, Any]] | None:
        for emulator in Emulator.in_this_process():
            try:
                found = emulator.conversation(session_id)
            except (RuntimeError, TimeoutError):  # stopped while asked: it serves no one now
                continue
            if found is not None:
                return found
        return None
