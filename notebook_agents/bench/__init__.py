"""The handoff-latency benchmark: realtime session reuse vs fresh, context copied vs empty, for
the bench's own pair or your agents."""

from .results import (
    BenchmarkConfig,
    BenchmarkConfigError,
    BenchmarkResult,
    PhaseTiming,
    ResultsFileError,
    Trial,
)
from .your_agents import UserAgents, UserServer, YourAgents, YourAgentsError, YourServer

__all__ = [
    "BenchmarkConfig",
    "BenchmarkConfigError",
    "BenchmarkResult",
    "PhaseTiming",
    "ResultsFileError",
    "Trial",
    "UserAgents",
    "UserServer",
    "YourAgents",
    "YourAgentsError",
    "YourServer",
]
