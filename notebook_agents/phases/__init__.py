"""Where each wait of a trace goes: its turns (``turn_phases``) and handoffs
(``handoff_phases``) split into phases (``Breakdown``, ``Phase``)."""

from __future__ import annotations

from ..emulator.latency import LatencyModel
from ..trace import Trace
from .handoffs import handoff_phases
from .model import Breakdown, Phase, WaitKind
from .names import HANDOFF_PHASES
from .table import phase_table
from .turns import turn_phases


def breakdowns(trace: Trace, latency: LatencyModel | None = None) -> list[Breakdown]:
    """Every wait of ``trace`` split into phases, in time order; ``latency`` as
    ``handoff_phases`` takes it (the emulator's network, for each phase's truth)."""
    waits = [*turn_phases(trace), *handoff_phases(trace, latency)]
    return sorted(waits, key=lambda wait: wait.start)


__all__ = [
    "HANDOFF_PHASES",
    "Breakdown",
    "Phase",
    "WaitKind",
    "breakdowns",
    "handoff_phases",
    "phase_table",
    "turn_phases",
]
