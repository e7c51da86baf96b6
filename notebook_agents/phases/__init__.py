"""Where each wait of a trace goes: its turns (``turn_phases``) split into phases
(``Breakdown``, ``Phase``)."""

from __future__ import annotations

from ..trace import Trace
from .model import Breakdown, Phase, WaitKind
from .turns import turn_phases


def breakdowns(trace: Trace) -> list[Breakdown]:
    """Every wait of ``trace`` split into phases, in time order."""
    return sorted(turn_phases(trace), key=lambda wait: wait.start)


__all__ = ["Breakdown", "Phase", "WaitKind", "breakdowns", "turn_phases"]
