"""Where each wait of a trace goes, phase by phase: a turn's (``turns``) and a handoff's
(``handoffs``) split into phases (``Breakdown``, ``Phase``), each phase's truth on the
emulator (``truth``), their names and colours (``names``), and their rows and tables
(``table``). ``notebook_agents.analysis`` gives them from a trace: ``turn_phases``,
``handoff_phases``, ``breakdowns``."""

from __future__ import annotations

from .handoffs import handoff_phases
from .model import Breakdown, Phase, WaitKind
from .names import HANDOFF_PHASES
from .table import PhaseRow, phase_rows, phase_table

__all__ = [
    "HANDOFF_PHASES",
    "Breakdown",
    "Phase",
    "PhaseRow",
    "WaitKind",
    "handoff_phases",
    "phase_rows",
    "phase_table",
]
