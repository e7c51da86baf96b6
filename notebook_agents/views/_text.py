"""Texts cut before they cross to the browser: a widget shows a line or a hover detail, not a
transcript, and its state stays small."""

from __future__ import annotations

MAX_TEXT = 400
"""the longest text the views send, unless they ask for shorter"""


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, at most ``limit`` characters: a longer one ends in "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
