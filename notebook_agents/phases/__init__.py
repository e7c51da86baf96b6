"""Deprecated (issue 31; removed in the next release): the phases are part of the one analysis
layer, ``notebook_agents.analysis``. ``from notebook_agents.analysis import turn_phases,
handoff_phases, breakdowns, Breakdown, Phase, phase_table``; the modules are
``notebook_agents.analysis.phases.handoffs`` (``model``, ``names``, ``table``, ``truth``,
``turns``). This module and its old submodule paths still work, with a DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from ..analysis import (
    HANDOFF_PHASES,
    Breakdown,
    Phase,
    WaitKind,
    breakdowns,
    handoff_phases,
    phase_table,
    turn_phases,
)
from ..analysis.phases import handoffs, model, names, table, truth, turns

warnings.warn(
    "notebook_agents.phases is deprecated: import from notebook_agents.analysis "
    "(turn_phases, handoff_phases, breakdowns, Breakdown, Phase, phase_table) or its modules "
    "from notebook_agents.analysis.phases",
    DeprecationWarning,
    stacklevel=2,  # the importing line: warnings skips importlib's frames
)

for _module in (handoffs, model, names, table, truth, turns):  # the old submodule paths
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[-1]}"] = _module

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
