"""Checking of the emulator's latency, fault and hearing parameters, wherever they enter: the
query string, ``LatencyModel`` / ``Faults`` built in Python, ``Emulator(hearing=)``,
``base_url()`` and the command line. Errors name the parameter, the allowed range and an
example."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NotebookAgentsError
from ..speech.hearing import Hearing, HearingError, check_hearing


class ParameterError(NotebookAgentsError, ValueError):
    """A latency or fault parameter that cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class Bound:
    """The largest value a parameter may take, with its unit and an example for messages."""

    maximum: float
    unit: str
    example: str


DELAY = Bound(60_000, " ms", "20")
"""any injected delay: a minute outlasts every client timeout (5-10 s) and still ends"""
ROUND_TRIPS = Bound(10, " round trips", "3")
"""``connect_rtts``: TCP + TLS + upgrade cost 3-4 on a real network"""


def parse_number(name: str, raw: str | float, bound: Bound | None = None) -> float:
    """``raw`` as a number from 0 to ``bound.maximum`` (unbounded: any finite number >= 0)."""
    try:
        value = float(raw)
    except ValueError:
        raise ParameterError(f"{name}={raw!r} is not a number (e.g. {name}=20)") from None
    if bound is not None and not 0 <= value <= bound.maximum:  # NaN fails too
        raise ParameterError(
            f"{name}={_shown(raw)} must be between 0 and {bound.maximum:g}{bound.unit} "
            f"(e.g. {name}={bound.example})"
        )
    if not 0 <= value < float("inf"):
        raise ParameterError(f"{name}={_shown(raw)} must be a finite number >= 0")
    return value


def parse_count(name: str, raw: str | int) -> int:
    value = parse_number(name, raw)
    if not value.is_integer():
        raise ParameterError(f"{name}={_shown(raw)} must be a whole number")
    return int(value)


def parse_flag(name: str, raw: str | bool) -> bool:
    if isinstance(raw, bool):
        return raw
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on", ""):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ParameterError(f"{name}={raw!r} must be true or false (e.g. {name}=1)")


def parse_hearing(raw: str) -> Hearing:
    """``hearing=``: ``grammar`` or ``whisper`` (ParameterError for another; whisper without
    its extra is the ``MissingExtraError`` naming the install)."""
    try:
        return check_hearing(raw)
    except HearingError as e:
        raise ParameterError(str(e)) from None


def _shown(raw: str | float) -> str:
    """A value as the user wrote it: query text as is, a float compactly (``1e+12``)."""
    return f"{raw:g}" if isinstance(raw, float) else str(raw)
