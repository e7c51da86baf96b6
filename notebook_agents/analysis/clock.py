"""livekit's wall-clock times (Unix seconds) on a trace's clock (seconds since it started):
where the caller's wait for a turn begins, as the analysis and the phases both read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def on_trace_clock(unix: Any, started_at: float | None) -> float | None:
    """A livekit wall-clock time (Unix seconds) on the trace's clock, if both are known."""
    if started_at is None or not is_number(unix):
        return None
    return float(unix) - started_at


def speech_ended_at(metrics: Mapping[str, Any], started_at: float | None) -> float | None:
    """Where the caller's wait for a spoken turn begins: livekit's ``stopped_speaking_at`` of
    the user's message (its VAD's end of speech less the silence the VAD waited for, where
    ``lk.e2e_latency`` counts from), on the trace's clock; None if unknown (a realtime model
    hears on its server: there the end of speech is its ``speech_stopped``, the user's state)."""
    return on_trace_clock(metrics.get("stopped_speaking_at"), started_at)


def text_sent_at(data: Mapping[str, Any], started_at: float | None) -> float | None:
    """Where the caller's wait for a typed turn begins: when the text reached the session
    (the user message's ``created_at``), on the trace's clock; None if unknown."""
    return on_trace_clock(data.get("created_at"), started_at)
