"""Where each wait of a trace goes: its turns and handoffs split into phases (``model``)."""

from __future__ import annotations

from ..trace import Trace
from .model import Breakdown, Phase, WaitKind


def breakdowns(trace: Trace) -> list[Breakdown]:
    """Every wait of ``trace`` (turns and handoffs), split into phases, in time order."""
    return []  # the splitters (phases/turns.py, phases/handoffs.py) fill this in


__all__ = ["Breakdown", "Phase", "WaitKind", "breakdowns"]
