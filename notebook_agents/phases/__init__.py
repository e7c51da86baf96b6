"""Deprecated (issue 31; removed in the next release): the phases are part of the one analysis
layer, ``notebook_agents.analysis``. ``from notebook_agents.analysis import turn_phases,
handoff_phases, breakdowns, Breakdown, Phase, phase_table``; the modules are
``notebook_agents.analysis.phases.handoffs`` (``model``, ``names``, ``table``, ``turns``;
``truth`` is ``notebook_agents.analysis.network_truth``). This module and its old submodule
paths still work, with a DeprecationWarning."""

from __future__ import annotations

import sys

from .._deprecated import warn_renamed
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
from ..analysis import network_truth as truth
from ..analysis.phases import handoffs, model, names, table, turns

warn_renamed(
    "notebook_agents.phases",
    "notebook_agents.analysis (turn_phases, handoff_phases, breakdowns, Breakdown, Phase, "
    "phase_table) or its modules in notebook_agents.analysis.phases",
    stacklevel=3,  # the importing line: warnings skips importlib's frames
)

for _name, _module in {  # the old submodule paths
    "handoffs": handoffs,
    "model": model,
    "names": names,
    "table": table,
    "truth": truth,
    "turns": turns,
}.items():
    sys.modules[f"{__name__}.{_name}"] = _module

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
