"""Where a wait goes: turns and handoffs split into phases (``model``), by their splitters."""

from .handoffs import HANDOFF_PHASES, handoff_phases
from .model import Breakdown, Phase

__all__ = ["HANDOFF_PHASES", "Breakdown", "Phase", "handoff_phases"]
