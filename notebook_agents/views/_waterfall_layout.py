"""What the waterfall shows of one wait, computed once in the kernel from its ``Breakdown``: a
row per phase in milliseconds from the wait's start, each with its parts (the network's share
and the client's), livekit's figure beside it, its labels and hover text; a row for the wait
itself (livekit's ``e2e_latency`` beside it), one per livekit total that no phase's figure
already shows, one for what no critical phase explains; the axis and its ticks. The widget and
the matplotlib figure both draw from it and compute nothing again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._figure_style import INK
from ..analysis import Breakdown, Phase, milliseconds
from ..analysis.phases.model import E2E_LATENCY
from ._timeline_layout import mode_color

WATERFALL_COLORS = {
    "wait": INK,
    "critical": "#0e7fc0",
    "parallel": "#8b5cf6",
    "livekit": "#ea580c",
    "unexplained": "#e0453f",
}
"""each kind of bar: the wait, a phase on the critical path, one beside it, livekit's figure,
the unexplained rest; each stands out at >= 3:1 from the light (#fff) and the dark (#111)
theme's page (texts stay in the theme's colours)"""
KEY = {
    "wait": "wait",
    "critical": "critical path",
    "parallel": "in parallel (not added up)",
    "truth": "network (emulator's truth)",
    "livekit": "livekit's figure",
    "unexplained": "unexplained",
}
"""what each kind of bar is, in the legend's order (a wait's legend names what it draws)"""
UNEXPLAINED_SHOWN_S = 0.001
"""an unexplained rest this large or more gets its row: under it, the label rounds to 0 ms"""
TICKS = 6
"""about how many ticks the axis has"""


def wait_layout(breakdown: Breakdown, index: int) -> dict[str, Any]:
    """``breakdown`` (the ``index``-th wait of its trace, in time order) as the views draw it."""
    start = breakdown.start

    def ms(t: float) -> float:
        return round((t - start) * 1000, 3)

    rows = [_wait_row(breakdown)]
    rows += [_total_row(name, value) for name, value in _unmarked_totals(breakdown).items()]
    phases = sorted(breakdown.phases, key=lambda phase: phase.start)  # stable: ties keep order
    rows += [_phase_row(phase, ms) for phase in phases]
    if abs(breakdown.unexplained) >= UNEXPLAINED_SHOWN_S:
        rows.append(_unexplained_row(breakdown, ms))
    edges = [e for row in rows for e in _extent(row)]
    parts = {part["part"] for row in rows for part in row["segments"]}
    drawn = {
        "wait": True,
        "critical": any(row["kind"] == "phase" and row["critical"] for row in rows),
        "parallel": any(not row["critical"] for row in rows),
        "truth": "truth" in parts,
        "livekit": any(row["livekit"] for row in rows),
        "unexplained": "gap" in parts,
    }
    return {
        "id": index,
        "kind": breakdown.kind,
        "label": breakdown.label,
        "title": _title(breakdown),
        "subtitle": _subtitle(breakdown),
        "mode_color": mode_color(breakdown.mode) if breakdown.mode else None,
        "rows": rows,
        "axis": axis(min(edges), max(edges)),
        "key": [{"part": key, "label": label} for key, label in KEY.items() if drawn[key]],
    }


def choice(breakdown: Breakdown, index: int) -> dict[str, Any]:
    """The wait as the picker lists it: its id and one line."""
    return {"id": index, "text": f"{_title(breakdown)} · {milliseconds(breakdown.wait)}"}


def axis(low_ms: float, high_ms: float) -> dict[str, Any]:
    """An axis from ``low_ms`` (0 unless a phase began before the wait) to ``high_ms`` rounded
    up to a tick, with about ``TICKS`` round ticks; the first says the unit (at the end, right
    of the last tick, it ran into the one before: "5000 6000 ms" overlapped on a narrow track)."""
    low, high = min(low_ms, 0.0), max(high_ms, low_ms + 1.0)
    step = _nice_step((high - low) / TICKS)
    first, last = math.ceil(low / step - 1e-9), math.ceil(high / step - 1e-9)
    digits = max(0, -math.floor(math.log10(step)))
    ticks = [
        {"ms": k * step, "label": f"{k * step:.{digits}f}" + (" ms" if k == first else "")}
        for k in range(first, last + 1)
    ]
    return {"min_ms": low, "max_ms": last * step, "ticks": ticks}


def _nice_step(rough: float) -> float:
    """The least of 1, 2, 2.5, 5 times a power of ten that is at least ``rough``."""
    power = 10.0 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= rough * (1 - 1e-9))


def _title(breakdown: Breakdown) -> str:
    label = breakdown.label
    return label if breakdown.agent in label else f"{label} · {breakdown.agent}"


def _subtitle(breakdown: Breakdown) -> str:
    who = "the caller waited" if breakdown.kind == "turn" else "the handoff took"
    parts = [f"{who} {milliseconds(breakdown.wait)}", f"from {breakdown.start:.2f} s"]
    if breakdown.speech_id:
        parts.append(breakdown.speech_id)
    return " · ".join(parts)


def _row(kind: str, name: str, start_ms: float, end_ms: float, **more: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "name": name,
        "critical": True,
        "start_ms": start_ms,
        "end_ms": end_ms,
        "segments": [{"start_ms": start_ms, "end_ms": end_ms, "part": "whole"}],
        "livekit": None,
        "measured": milliseconds(max(end_ms - start_ms, 0) / 1000),
        "livekit_text": "",
        "truth_text": "",
        "note": "",
        "title": "",
        **more,
    }


def _wait_row(breakdown: Breakdown) -> dict[str, Any]:
    end_ms = round(breakdown.wait * 1000, 3)
    title = f"the whole wait, {breakdown.start:.3f} s → {breakdown.end:.3f} s on the trace"
    row = _row("wait", "wait", 0.0, end_ms, title=f"{title}: {milliseconds(breakdown.wait)}")
    if (e2e := breakdown.livekit) is not None:
        row["livekit"] = {"start_ms": 0.0, "end_ms": round(e2e * 1000, 3)}
        row["livekit_text"] = f"livekit {milliseconds(e2e)}"
        row["title"] += f"\nlivekit's figure: {milliseconds(e2e)} ({E2E_LATENCY})"
    return row


def _unmarked_totals(breakdown: Breakdown) -> dict[str, float]:
    """livekit's totals for the wait that no row's mark shows already: not its e2e_latency
    (the wait's), nor a figure a phase carries (``lk.end_of_turn_delay`` on the end of turn)."""
    marked = {(p.livekit_name, p.livekit) for p in breakdown.phases if p.livekit is not None}
    return {
        name: seconds
        for name, seconds in breakdown.attributes.items()
        if name != E2E_LATENCY and (name, seconds) not in marked
    }


def _total_row(name: str, seconds: float) -> dict[str, Any]:
    """One of livekit's own totals for the wait, drawn as livekit's figures are."""
    end_ms = round(seconds * 1000, 3)
    took = milliseconds(seconds)
    label = f"livekit {name}"
    return _row(
        "livekit",
        label,
        0.0,
        end_ms,
        segments=[],
        livekit={"start_ms": 0.0, "end_ms": end_ms},
        measured="",
        livekit_text=f"livekit {took}",
        title=f"{label} · livekit's own figure for this wait, no phase's: {took}",
    )


def _phase_row(phase: Phase, ms: Callable[[float], float]) -> dict[str, Any]:
    start_ms, end_ms = ms(phase.start), ms(phase.end)
    took = milliseconds(phase.seconds)
    row = _row(
        "phase",
        phase.name,
        start_ms,
        end_ms,
        critical=phase.critical,
        measured=took,
        note=phase.note,
    )
    lines = [
        f"{phase.name} · {'critical path' if phase.critical else 'in parallel, not added up'}",
        f"{_at(start_ms)} → {_at(end_ms)}: {took}",
    ]
    if phase.livekit is not None:
        source = f" ({phase.livekit_name})" if phase.livekit_name else ""
        row["livekit"] = {"start_ms": start_ms, "end_ms": round(start_ms + phase.livekit * 1000, 3)}
        row["livekit_text"] = f"livekit {milliseconds(phase.livekit)}"
        lines.append(f"livekit's figure: {milliseconds(phase.livekit)}{source}")
    if phase.truth is not None and phase.client is not None:
        truth_end = round(start_ms + min(max(phase.truth, 0.0), phase.seconds) * 1000, 3)
        row["segments"] = [
            {"start_ms": start_ms, "end_ms": truth_end, "part": "truth"},
            {"start_ms": truth_end, "end_ms": end_ms, "part": "client"},
        ]
        row["truth_text"] = f"net {milliseconds(phase.truth)} · client {signed(phase.client)}"
        lines.append(
            f"network (the emulator's truth): {milliseconds(phase.truth)}; "
            f"the client's own: {signed(phase.client)}"
        )
    if phase.note:
        lines.append(phase.note)
    row["title"] = "\n".join(lines)
    return row


def _unexplained_row(breakdown: Breakdown, ms: Callable[[float], float]) -> dict[str, Any]:
    """The wait no critical phase covers, drawn where it is (the stretches between them);
    more phase than wait (critical phases overlapping) is said, not drawn."""
    rest = breakdown.unexplained
    end_ms = ms(breakdown.end)
    gaps = uncovered([(ms(p.start), ms(p.end)) for p in breakdown.phases if p.critical], end_ms)
    if rest > 0:
        title = (
            f"{milliseconds(rest)} of the {milliseconds(breakdown.wait)} wait is in no critical "
            "phase: nothing the trace holds explains it"
        )
    else:
        title = (
            f"the critical phases add up to {milliseconds(-rest)} more than the "
            f"{milliseconds(breakdown.wait)} wait: some of them overlap"
        )
    return _row(
        "unexplained",
        "unexplained",
        gaps[0][0] if gaps else 0.0,
        gaps[-1][1] if gaps else 0.0,
        segments=[{"start_ms": a, "end_ms": b, "part": "gap"} for a, b in gaps] if rest > 0 else [],
        measured=signed(rest),
        title=title,
    )


def uncovered(spans: list[tuple[float, float]], end_ms: float) -> list[tuple[float, float]]:
    """The stretches of 0..``end_ms`` that none of ``spans`` covers, in order."""
    gaps, covered = [], 0.0
    for start, end in sorted(spans):
        if start > covered:
            gaps.append((covered, min(start, end_ms)))
        covered = max(covered, end)
    if covered < end_ms:
        gaps.append((covered, end_ms))
    return [(a, b) for a, b in gaps if b > a]


def _extent(row: dict[str, Any]) -> tuple[float, ...]:
    """Where ``row`` draws on the axis."""
    livekit = row["livekit"]
    return (row["start_ms"], row["end_ms"], *((livekit["end_ms"],) if livekit else ()))


def _at(ms: float) -> str:
    """A moment of the wait: ``"+812 ms"``, ``"−40 ms"`` before it began, ``"0"`` as it began."""
    return "0" if ms == 0 else ("+" if ms > 0 else "−") + milliseconds(abs(ms) / 1000)


def signed(seconds: float) -> str:
    """``milliseconds``, a minus sign before a negative one."""
    return ("−" if seconds < 0 else "") + milliseconds(abs(seconds))
