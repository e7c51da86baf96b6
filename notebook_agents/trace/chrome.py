"""A trace as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev), speedscope and
``chrome://tracing``.

One process; a lane (thread) per agent for our events (its states as slices, everything else
as instants) and lanes for livekit's spans, packed so that every lane's slices nest. Turns
(``user_turn``, ``agent_turn``) overlap one another (the user speaks while the agent replies),
which slices on one lane cannot show: they are async slices, one track each. Times are
microseconds since the trace's t = 0. Format:
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU

A browser test opens a real call's file in speedscope (its npm build, offline), which draws the
slices (``X``: states, livekit's spans), not instants or async slices. Perfetto's UI has no
offline build and Debian's chromium turns chrome://tracing off: neither is opened in a test,
the file follows the format document above (what both read).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .schema import TraceSpan
from .store import TraceEvent

if TYPE_CHECKING:  # the trace calls this module
    from .trace import Trace

CHROME_SUFFIX = ".chrome-trace.json"
"""the file's name ends so: speedscope picks its importer by the name first, and reads a name
ending ``.chrome.json`` as a bare list of Chrome DevTools events ("t.sort is not a function" on
this document); a name it does not know it reads by content, as the Trace Event Format
(``_importProfileGroup`` in src/import/index.ts of jlfwong/speedscope, v1.25.0). Perfetto and
chrome://tracing read by content."""
TURN_SPANS = frozenset({"user_turn", "agent_turn"})
"""livekit's spans drawn as async slices: they overlap each other"""
PID = 1
_SPAN_LANES = 1000
"""the first lane (thread id) of livekit's spans; agents' lanes are numbered from 1"""


def to_chrome_trace(trace: Trace) -> dict[str, Any]:
    """``trace`` as a Chrome trace-event document: ``{"traceEvents": [...], ...}``."""
    out: list[dict[str, Any]] = [_meta("process_name", 0, "notebook-agents")]
    out += _agent_lanes(trace.events)
    spans = sorted(trace.spans, key=lambda s: (s.start, -s.end))
    out += _span_lanes([s for s in spans if s.name not in TURN_SPANS])
    out += _turns([s for s in spans if s.name in TURN_SPANS])
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def to_chrome_json(trace: Trace) -> str:
    """``to_chrome_trace`` as the JSON text Perfetto opens."""
    document = to_chrome_trace(trace)
    try:
        return json.dumps(document, default=str, allow_nan=False)
    except ValueError:  # a NaN or an infinity (a measurement, an attribute): JSON has no word
        return json.dumps(_words_for_non_finite(document), default=str)


def _words_for_non_finite(node: Any) -> Any:
    """``node`` with each NaN or infinity as the word Python's JSON would write bare ("NaN",
    "Infinity"), a string, which a browser's ``JSON.parse`` reads."""
    if isinstance(node, float) and not math.isfinite(node):
        return json.dumps(node)
    if isinstance(node, dict):
        return {k: _words_for_non_finite(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_words_for_non_finite(v) for v in node]
    return node


def _us(t: float) -> int:
    return round(t * 1e6)


def _meta(name: str, tid: int, value: str) -> dict[str, Any]:
    return {"ph": "M", "pid": PID, "tid": tid, "name": name, "args": {"name": value}}


def _agent_lanes(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    lanes: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    state: dict[int, TraceEvent] = {}  # lane -> the agent_state event whose state holds

    def end_state(tid: int, t: float) -> None:
        if (begun := state.pop(tid, None)) is not None:
            start = _us(begun.t)
            name = f"{begun.data['new']}"
            out.append(_slice(name, "agent_state", tid, start, _us(t) - start, begun.data))

    for event in events:
        agent = event.agent or "session"
        if agent not in lanes:
            lanes[agent] = len(lanes) + 1
            out.append(_meta("thread_name", lanes[agent], f"agent: {agent}"))
        tid = lanes[agent]
        if event.kind == "agent_state":
            end_state(tid, event.t)
            state[tid] = event
        else:
            args = {"seq": event.seq, **event.data}
            out.append(
                {
                    "ph": "i",
                    "s": "t",
                    "pid": PID,
                    "tid": tid,
                    "name": event.kind,
                    "cat": "event",
                    "ts": _us(event.t),
                    "args": args,
                }
            )
    last = events[-1].t if events else 0.0
    for tid in list(state):
        end_state(tid, last)
    return out


def _slice(
    name: str, cat: str, tid: int, ts: int, dur: int, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "ph": "X",
        "pid": PID,
        "tid": tid,
        "name": name,
        "cat": cat,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _span_lanes(spans: Sequence[TraceSpan]) -> list[dict[str, Any]]:
    """Each span on the first lane where it nests inside what is open there (or starts
    after it ended); a new lane when none."""
    lanes: list[list[int]] = []  # per lane, the ends of the slices open there, innermost last
    out: list[dict[str, Any]] = []
    for span in spans:
        start, end = _us(span.start), _us(span.end)
        for open_ends in lanes:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if not open_ends or end <= open_ends[-1]:
                break
        else:
            open_ends = []
            lanes.append(open_ends)
            tid = _SPAN_LANES + len(lanes) - 1
            out.append(_meta("thread_name", tid, f"livekit {len(lanes)}"))
        open_ends.append(end)
        tid = _SPAN_LANES + next(i for i, lane in enumerate(lanes) if lane is open_ends)
        out.append(_slice(span.name, span.scope, tid, start, end - start, _span_args(span)))
    return out


def _turns(spans: Sequence[TraceSpan]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for span in spans:
        common = {
            "pid": PID,
            "tid": _SPAN_LANES,
            "cat": "turn",
            "name": span.name,
            "id": span.span_id,
        }
        out.append({**common, "ph": "b", "ts": _us(span.start), "args": _span_args(span)})
        out.append({**common, "ph": "e", "ts": _us(span.end)})
    return out


def _span_args(span: TraceSpan) -> dict[str, Any]:
    return {"span_id": span.span_id, "parent_id": span.parent_id, **span.attributes}
