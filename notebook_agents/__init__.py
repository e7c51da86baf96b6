"""notebook-agents: build, measure and teach LiveKit voice agents inside Jupyter."""

from .emulator import Emulator, Faults, LatencyModel, ReplyRules

__all__ = ["Emulator", "Faults", "LatencyModel", "ReplyRules"]
__version__ = "0.1.0"
