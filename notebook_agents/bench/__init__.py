"""The handoff-latency benchmark: realtime session reuse vs fresh, context copied vs empty."""

from .results import BenchmarkConfig, BenchmarkResult, PhaseTiming, ResultsFileError, Trial

__all__ = ["BenchmarkConfig", "BenchmarkResult", "PhaseTiming", "ResultsFileError", "Trial"]
