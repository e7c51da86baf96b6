"""Handoff modes: the one vocabulary the trace, the benchmark and the views share.

A handoff leaves the realtime session ``reused`` (the next agent shares the model instance) or
``fresh`` (its own), or ``none`` when no realtime model is involved (a cascaded pipeline); and the
context ``copied`` (the next agent starts from the previous one's items), ``empty``, or, in a
trace only, ``own`` (an agent returning to the context it already had).
"""

from __future__ import annotations

from typing import Literal

SessionMode = Literal["reused", "fresh", "none"]
ContextMode = Literal["copied", "empty", "own"]

REALTIME_MODES: tuple[tuple[SessionMode, ContextMode], ...] = (
    ("reused", "copied"),
    ("reused", "empty"),
    ("fresh", "copied"),
    ("fresh", "empty"),
)
"""the four realtime modes, in the order tables, plots and legends show them"""

MODE_COLORS: dict[str, str] = {
    # reused in blues, fresh in oranges, copied the darker shade (Okabe-Ito, colorblind-safe)
    "reused+copied": "#0072B2",
    "reused+empty": "#56B4E9",
    "fresh+copied": "#D55E00",
    "fresh+empty": "#E69F00",
    # the cascaded baseline (no realtime session) in grays
    "cascaded+copied": "#444444",
    "cascaded+empty": "#999999",
    # an agent back to its own context (a trace's handoffs only): Okabe-Ito's remaining hues
    "reused+own": "#009E73",
    "fresh+own": "#CC79A7",
    "cascaded+own": "#777777",
}
"""one colour per mode, for the bench's plots and the views' handoff marks alike"""


UNKNOWN_MODE = "unknown"
"""a handoff whose trace does not say how it left the session and the context (an agent in
another process: livekit's ``lk.agent.session`` protocol reports neither); drawn in the
views' colour for other modes"""


def mode_label(session: str | None, context: str) -> str:
    """``"reused+copied"``; without a realtime session (``"none"``) ``"cascaded+copied"``."""
    return f"{'cascaded' if session in (None, 'none') else session}+{context}"
