"""Where a wait goes: a turn's (``turn_phases``) split into phases (``Breakdown``, ``Phase``)."""

from .model import Breakdown, Phase, WaitKind
from .turns import turn_phases

__all__ = ["Breakdown", "Phase", "WaitKind", "turn_phases"]
