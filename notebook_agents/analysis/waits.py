"""Every wait of a trace split into phases, by one route: the trace's ``TraceAnalysis`` for
its turns, the handoff phases for its handoffs."""

from __future__ import annotations

from ..emulator.latency import LatencyModel
from ..trace import Trace
from .phases import Breakdown, handoff_phases
from .trace_analysis import TraceAnalysis


def turn_phases(trace: Trace) -> list[Breakdown]:
    """Every turn of ``trace`` (live or loaded) that the agent answered, typed or spoken, its
    wait split into phases; in the order the answers began (``TraceAnalysis(trace).turns()``)."""
    return TraceAnalysis(trace).turns()


def breakdowns(trace: Trace, latency: LatencyModel | None = None) -> list[Breakdown]:
    """Every wait of ``trace`` split into phases, in time order; ``latency`` as
    ``handoff_phases`` takes it (the emulator's network, for each phase's truth)."""
    waits = [*turn_phases(trace), *handoff_phases(trace, latency)]
    return sorted(waits, key=lambda wait: wait.start)
