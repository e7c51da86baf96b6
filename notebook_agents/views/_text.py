"""Texts cut before they cross to the browser: a widget shows a line or a hover detail, not a
transcript, and its state stays small."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TEXT = 400
"""the longest text the views send, unless they ask for shorter"""


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, at most ``limit`` characters: a longer one ends in "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_over(closed: Mapping[str, Any]) -> str:
    """What a view that talks to the agent says once its call is over (the trace's ``closed``
    event's data): that it is, why, and what works now. A stopped runner does not start again:
    a new one does."""
    why = f"failed: {closed['error']}" if closed.get("error") else "has ended"
    return f"This call {why}. Start a new call (a new runner) to talk to the agent again."
