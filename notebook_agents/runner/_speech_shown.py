"""A speech handle shown in the notebook as what became of it.

``await runner.call(session.say, ...)`` returns livekit's ``SpeechHandle`` once it has played
out, and livekit's default repr (``<...SpeechHandle object at 0x...>``) says nothing of it: in
IPython each handle shows whether it is queued, playing, played or interrupted, and what the
agent said in it.
"""

from __future__ import annotations

import sys
from typing import Any

from livekit.agents import llm
from livekit.agents.voice import SpeechHandle


def show_speech_state() -> None:
    """Show speech handles by their state in this IPython shell, if there is one."""
    ipython = sys.modules.get("IPython")  # never imported here: a script shows nothing
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        shell.display_formatter.formatters["text/plain"].for_type(SpeechHandle, _pretty)


def speech_state(handle: SpeechHandle) -> str:
    """queued, playing, played or interrupted."""
    if not handle.done():
        return "playing" if handle.scheduled else "queued"
    return "interrupted" if handle.interrupted else "played"


def _pretty(handle: SpeechHandle, printer: Any, cycle: bool) -> None:
    said = " ".join(
        item.text_content or ""
        for item in handle.chat_items
        if isinstance(item, llm.ChatMessage) and item.role == "assistant"
    )
    what = f", said {said!r}" if said else ""
    printer.text(f"<SpeechHandle {handle.id}: {speech_state(handle)}{what}>")
