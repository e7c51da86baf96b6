"""How the emulator (or anyone calling ``transcribe``) hears a caller: ``grammar``, the nearest
phrase of the session's grammar (pocketsphinx, the default: deterministic, what a rule-based
emulator can answer, rather nothing than a wrong phrase), or ``whisper``, free English speech
(Whisper tiny.en, the ``whisper`` extra), the session's words as its prompt."""

from __future__ import annotations

from typing import Literal

from ..errors import NotebookAgentsError
from .whisper import require_whisper

Hearing = Literal["grammar", "whisper"]
HEARINGS: tuple[Hearing, ...] = ("grammar", "whisper")
DEFAULT_HEARING: Hearing = "grammar"


class HearingError(NotebookAgentsError, ValueError):
    """A hearing that is not one of ``HEARINGS``; the message names them."""


def check_hearing(hearing: str) -> Hearing:
    """``hearing`` if it can hear here; a ``HearingError`` if it is none of ``HEARINGS``, a
    ``MissingExtraError`` naming the install if it is ``whisper`` without its extra."""
    if hearing not in HEARINGS:
        raise HearingError(
            f"hearing={hearing!r} is not one of {', '.join(HEARINGS)} (e.g. hearing='whisper' "
            "for free speech, 'grammar' for the session's phrases)"
        )
    if hearing == "whisper":
        require_whisper()
    return hearing
