"""A handoff's phases as the timeline draws them (``handoff_phases``): a thin strip in the new
agent's lane from the wait's start to its end, a segment per critical phase in its colour (the
bench's, ``PHASE_COLORS``), the unexplained rest in its own; the phases in the handoff's hover
text, each with its truth and the client's rest where the view was given the network.
"""

from __future__ import annotations

from typing import Any

from ..analysis import Breakdown, Handoff, Phase, milliseconds
from ..analysis.phases.names import PHASE_COLORS
from ._timeline_layout import TimelineLayout, ink, mode_color, mode_text
from ._waterfall_layout import UNEXPLAINED_SHOWN_S, WATERFALL_COLORS, signed, uncovered

OTHER_PHASE = "#777777"
"""a phase the bench has no colour for"""
UNEXPLAINED = WATERFALL_COLORS["unexplained"]
MATCH_S = 0.05
"""a handoff's event is recorded as the new agent starts, inside its wait: this much either
side of the wait still matches (the events' clock and the spans' differ by a hair)"""


def phase_color(name: str) -> str:
    return PHASE_COLORS.get(name, OTHER_PHASE)


def handoff_strips(breakdowns: list[Breakdown], layout: TimelineLayout) -> list[dict[str, Any]]:
    """Each handoff's strip, of the ``breakdowns`` that split a handoff ``layout`` shows."""
    handoffs = layout.analysis.handoffs
    strips = []
    for breakdown in breakdowns:
        handoff = _handoff_of(breakdown, handoffs) if breakdown.kind == "handoff" else None
        if handoff is not None:
            lane = layout.analysis.lane(handoff.target)
            strips.append(handoff_strip(breakdown, handoff, lane))
    return strips


def _handoff_of(breakdown: Breakdown, handoffs: list[Handoff]) -> Handoff | None:
    """The timeline's handoff ``breakdown`` splits: to its agent, its event inside the wait."""
    found = [
        h
        for h in handoffs
        if h.source is not None
        and h.target == breakdown.agent
        and breakdown.start - MATCH_S <= h.t <= breakdown.end + MATCH_S
    ]
    return min(found, key=lambda h: abs(h.t - (breakdown.start + breakdown.end) / 2), default=None)


def handoff_strip(breakdown: Breakdown, handoff: Handoff, lane: int) -> dict[str, Any]:
    """``breakdown`` as the widget and the figure draw it at ``handoff`` (in ``lane``, the
    new agent's): its segments in trace seconds, the mode that happened, the hover text."""
    start = breakdown.start
    critical = [p for p in breakdown.phases if p.critical]
    segments = [
        {"name": p.name, "start": p.start, "end": p.end, "color": phase_color(p.name)}
        for p in critical
    ]
    if breakdown.unexplained >= UNEXPLAINED_SHOWN_S:
        covered = [(p.start - start, p.end - start) for p in critical]
        segments += [
            {"name": "unexplained", "start": start + a, "end": start + b, "color": UNEXPLAINED}
            for a, b in uncovered(covered, breakdown.wait)
        ]
    mode = breakdown.mode or handoff.mode
    color = mode_color(mode)
    return {
        "seq": handoff.seq,
        "lane": lane,
        "start": start,
        "end": breakdown.end,
        "mode": mode,
        "label": mode_text(mode),
        "color": color,
        "ink": ink(color),
        "segments": sorted(segments, key=lambda s: s["start"]),
        "detail": _detail(breakdown),
        "name": f"{breakdown.label}: {milliseconds(breakdown.wait)} in {len(critical)} phases",
    }


def _detail(breakdown: Breakdown) -> str:
    """The phases in the handoff's hover text: the critical path in order, then those beside
    it, then what no phase explains."""
    lines = [
        f"phases · {breakdown.label}",
        f"{milliseconds(breakdown.wait)} from {breakdown.start:.3f} s to "
        f"{breakdown.agent} speaking",
    ]
    ordered = sorted(breakdown.phases, key=lambda p: (not p.critical, p.start))
    lines += [_line(p) for p in ordered]
    if abs(breakdown.unexplained) >= UNEXPLAINED_SHOWN_S:
        lines.append(f"unexplained: {signed(breakdown.unexplained)}")
    return "\n".join(lines)


def _line(phase: Phase) -> str:
    line = f"{phase.name}: {milliseconds(phase.seconds)}"
    if phase.truth is not None and phase.client is not None:
        line += f" · net {milliseconds(phase.truth)} · client {signed(phase.client)}"
    return line if phase.critical else f"{line} (in parallel, not added up)"
