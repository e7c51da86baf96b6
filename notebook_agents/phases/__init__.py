"""Where a wait goes: turns and handoffs split into phases (``model``), by their splitters."""

from .handoffs import handoff_phases
from .model import Breakdown, Phase
from .names import HANDOFF_PHASES

__all__ = ["HANDOFF_PHASES", "Breakdown", "Phase", "handoff_phases"]
