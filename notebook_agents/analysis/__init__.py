"""What a trace says, read once for the views, the suites, the bench and you: its agents,
states, handoffs and bring-ups, idle stretches and speech (``TraceAnalysis``), and where each
wait went, phase by phase (``turn_phases``, ``handoff_phases``, ``breakdowns``; the pieces in
``analysis.phases``). ``TraceAnalysis(trace).turns()`` is the turns' one route: ``turn_phases``
and ``breakdowns`` go through it."""

from .clock import on_trace_clock, speech_ended_at, text_sent_at
from .network_truth import LatencyArgumentError
from .phases import (
    HANDOFF_PHASES,
    Breakdown,
    Phase,
    PhaseRow,
    WaitKind,
    handoff_phases,
    phase_rows,
    phase_table,
)
from .trace_analysis import (
    IDLE_AFTER,
    SPOKEN_METRICS,
    WAITING_STATES,
    BringUp,
    Gap,
    Handoff,
    Opened,
    Prompt,
    Span,
    Speech,
    TraceAnalysis,
    bring_ups,
    handoff_label,
    milliseconds,
)
from .waits import breakdowns, turn_phases

__all__ = [
    "HANDOFF_PHASES",
    "IDLE_AFTER",
    "SPOKEN_METRICS",
    "WAITING_STATES",
    "Breakdown",
    "BringUp",
    "Gap",
    "Handoff",
    "LatencyArgumentError",
    "Opened",
    "Phase",
    "PhaseRow",
    "Prompt",
    "Span",
    "Speech",
    "TraceAnalysis",
    "WaitKind",
    "breakdowns",
    "bring_ups",
    "handoff_label",
    "handoff_phases",
    "milliseconds",
    "on_trace_clock",
    "phase_rows",
    "phase_table",
    "speech_ended_at",
    "text_sent_at",
    "turn_phases",
]
