"""How a reply's text splits into the tokens a model streams it as: what the emulator sends
delta by delta and what the phases count a reply's tokens by, so both count alike."""

from __future__ import annotations

import re


def tokens(text: str) -> list[str]:
    """Split a reply into the deltas it streams as: words with their trailing space."""
    return re.findall(r"\S+\s*", text) or [text]
