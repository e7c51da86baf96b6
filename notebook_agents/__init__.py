"""notebook-agents: build, measure and teach LiveKit voice agents inside Jupyter."""

from .agent_graph import HandoffGraph, handoff_targets
from .analysis import TraceAnalysis, bring_ups
from .emulator import Emulator, Faults, LatencyModel, ReplyRules
from .runner import NotebookRunner, RunnerError, RunnerState, TurnError, run_app
from .trace import Trace, TraceEvent

__all__ = [
    "Emulator",
    "Faults",
    "HandoffGraph",
    "LatencyModel",
    "NotebookRunner",
    "ReplyRules",
    "RunnerError",
    "RunnerState",
    "Trace",
    "TraceAnalysis",
    "TraceEvent",
    "TurnError",
    "bring_ups",
    "handoff_targets",
    "run_app",
]
__version__ = "0.1.0"
