"""TimelineView: a lane per agent with state spans, message and tool marks, handoff arrows,
each new agent's bring-up (from the arrow to its first words), and where an agent's chat
context and its model's conversation parted."""

from __future__ import annotations

from typing import Any

import traitlets
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

from ..trace import Trace, TraceEvent
from ..trace.contexts import compared, item_key
from ._assets import asset
from ._stream import TraceStreamView
from ._text import cut
from .context_table import item_line

SKIPPED_KINDS = ("metrics", "user_state")
"""plentiful and not drawn on the timeline (StateView shows the user's state)"""

STATE_COLORS = {
    "initializing": "#cbd5e1",
    "idle": "#94a3b8",
    "listening": "#7dd3fc",
    "thinking": "#fcd34d",
    "speaking": "#86efac",
}
MARKS: dict[str, tuple[str, str]] = {
    "user_message": ("o", "#0284c7"),
    "agent_message": ("o", "#16a34a"),
    "tool_call": ("s", "#d97706"),
    "tool_output": ("s", "#b45309"),
    "context_changed": ("^", "#7c3aed"),
    "error": ("X", "#dc2626"),
    "context_diverged": ("D", "#be185d"),
    "context_converged": ("d", "#15803d"),
}
"""matplotlib marker and colour per event kind; the browser uses the same colours"""
FAILED = "#dc2626"
"""a failed tool output's outline, as the browser's ``na-failed``"""
BRING_UP = "#6366f1"
MARK_PT = 6.0
"""a mark's width in points (scatter sizes are its square)"""
MARK_GAP_PT = 9.0
"""centres of marks closer in time than this are stacked this far apart: a width and a hair"""
MARK_Y = 0.2
"""where a lane's marks sit, below its centre; close ones stack upwards from here"""


class TimelineView(TraceStreamView):
    """Live from a ``Trace``, or a replay of a loaded one.

    Events cross to the browser as they arrive, in batches at most 30 times a second; the
    history is sent once per rendering, never again. Scrubbing asks the kernel for each
    agent's chat context at that moment (``Trace.contexts_at``).
    """

    _esm = asset("timeline_view.js")
    _css = asset("views.css")

    scrub_t = traitlets.Float(None, allow_none=True).tag(sync=True)
    """set by the browser's scrubber: the trace time to show the chat contexts of"""
    scrub_contexts = traitlets.Dict().tag(sync=True)
    """each agent's chat context at ``scrub_t``; an item its model lacked is marked"""
    scrub_models = traitlets.Dict().tag(sync=True)
    """the model's side of each agent apart from it at ``scrub_t``: ``title``, ``items``"""

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(trace, **kwargs)
        self.observe(self._on_scrub, names="scrub_t")

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        return None if event.kind in SKIPPED_KINDS else browser_record(event)

    def _on_scrub(self, change: dict[str, Any]) -> None:
        t = change["new"]
        self.scrub_models = {} if t is None else self.models_at(t)
        self.scrub_contexts = {} if t is None else self.contexts_at(t)

    def contexts_at(self, t: float) -> dict[str, list[dict[str, Any]]]:
        """Each agent's chat context at trace time ``t``, texts cut to ``MAX_TEXT``; an item
        its model lacked when they last parted is marked ``missing``."""
        parted = self.trace.divergences_at(t)
        contexts = {}
        for agent, items in self.trace.contexts_at(t).items():
            record = parted.get(agent)
            lacked = {item_key(i) for i in record.data["missing"]} if record else set()
            contexts[agent] = [
                {**_cut(item), **({"mark": "missing"} if item_key(item) in lacked else {})}
                for item in items
            ]
        return contexts

    def models_at(self, t: float) -> dict[str, dict[str, Any]]:
        """The model's side of each agent apart from it at trace time ``t``, as the trace saw
        it when they parted, each item marked against livekit's side then."""
        models = {}
        for agent, record in self.trace.divergences_at(t).items():
            sides = compared({"livekit": record.data["livekit"], "model": record.data["model"]})
            models[agent] = {
                "title": f"{agent} · model (at {record.t:.2f} s)",
                "items": [_cut(item) for item in sides["model"]],
            }
        return models

    def to_figure(self) -> Figure:
        """Lanes, state spans, marks and handoff arrows as a static picture."""
        return timeline_figure(self.trace.events)


def browser_record(event: TraceEvent) -> dict[str, Any]:
    """What the browser needs of an event: long texts cut, a handoff's context as a count, a
    parting's lone items as lines (both sides stay in the kernel, for the scrubber)."""
    data = {
        key: cut(value) if isinstance(value, str) else value
        for key, value in event.data.items()
        if key not in ("context_items", "added", "removed", "livekit", "model")
    }
    for key in ("added", "removed"):
        if key in event.data:
            data[key] = len(event.data[key])
    if event.kind == "context_diverged":
        for key in ("missing", "extra"):
            data[key] = [cut(item_line(item)) for item in event.data[key]]
    return {"seq": event.seq, "t": event.t, "kind": event.kind, "agent": event.agent, "data": data}


def _cut(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "text": cut(item.get("text") or "")}


def lanes_of(events: list[TraceEvent]) -> list[str]:
    """Agents in order of first appearance."""
    lanes: dict[str, None] = {}
    for event in events:
        for name in (event.agent, event.data.get("to") if event.kind == "handoff" else None):
            if name:
                lanes.setdefault(name)
    return list(lanes)


def state_spans(events: list[TraceEvent]) -> list[tuple[str, float, float, str]]:
    """(agent, start, end, state): the agent state is the session's, so a handoff ends the
    old agent's span and starts the new agent's in the same state."""
    spans: list[tuple[str, float, float, str]] = []
    open_span: tuple[str, float, str] | None = None
    state = "initializing"
    end = events[-1].t if events else 0.0
    for event in events:
        agent = open_span[0] if open_span else event.agent
        if event.kind == "agent_state":
            state, agent = event.data["new"], event.agent
        elif event.kind == "handoff" and event.data.get("to"):
            agent = event.data["to"]
        else:
            continue
        if open_span is not None:
            spans.append((open_span[0], open_span[1], event.t, open_span[2]))
        open_span = (agent, event.t, state) if agent else None
    if open_span is not None:
        spans.append((open_span[0], open_span[1], end, open_span[2]))
    return [span for span in spans if span[2] > span[1]]


def bring_ups(events: list[TraceEvent]) -> list[tuple[str, float, float]]:
    """(agent, handoff, first words): how long each agent handed to took to start speaking.

    First words are the agent's state turning ``speaking``, or its first message if that
    comes first. A handoff after which its agent never spoke (another handoff or the end came
    first) has none; the session's first agent is not handed to, so it has none either.
    """
    found: list[tuple[str, float, float]] = []
    arriving: TraceEvent | None = None
    for event in events:
        if arriving and event.agent == arriving.data["to"] and _first_words(event):
            found.append((arriving.data["to"], arriving.t, event.t))
            arriving = None
        if event.kind == "handoff" and event.data.get("to"):
            arriving = event if event.data.get("from") else None
        elif event.kind == "closed":
            arriving = None
    return found


def _first_words(event: TraceEvent) -> bool:
    speaking = event.kind == "agent_state" and event.data.get("new") == "speaking"
    return speaking or event.kind == "agent_message"


def milliseconds(seconds: float) -> str:
    """ "231 ms", or "4.2 ms" under ten: the bring-up's label, as the browser writes it."""
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"


def timeline_figure(events: list[TraceEvent]) -> Figure:
    events = [e for e in events if e.kind not in SKIPPED_KINDS]
    lanes = lanes_of(events)
    figure = Figure(figsize=(9.0, 1.0 + 0.8 * max(len(lanes), 1)), layout="constrained")
    ax = figure.add_subplot()
    if not lanes:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no events yet", ha="center", va="center", transform=ax.transAxes)
        return figure
    row = {name: i for i, name in enumerate(lanes)}
    for agent, start, end in bring_ups(events):
        ax.broken_barh([(start, end - start)], (row[agent] - 0.45, 0.9), color=BRING_UP, alpha=0.15)
        ax.text(
            start, row[agent] + 0.05, " " + milliseconds(end - start), fontsize=7, color=BRING_UP
        )
    for agent, start, end, state in state_spans(events):
        color = STATE_COLORS.get(state, "#e2e8f0")
        ax.broken_barh([(start, end - start)], (row[agent] - 0.35, 0.3), color=color)
    drawn = _draw_marks(ax, events, row)
    _draw_handoffs(ax, events, row)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlabel("trace time (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_title("agent timeline", fontsize=10)
    # how far apart marks must sit depends on the laid-out page: lay it out, then stack
    figure.draw_without_rendering()
    _stack_close_marks(ax, drawn)
    return figure


Scatters = list[tuple[PathCollection, list[tuple[float, int]]]]
"""each scatter of marks with its marks' (time, lane), in drawing order"""


def _draw_marks(ax: Axes, events: list[TraceEvent], row: dict[str, int]) -> Scatters:
    """A scatter per kind of mark (a failed tool output its own, outlined in red as in the
    browser), every mark at its time; returns each scatter with its marks' (time, lane)."""
    drawn: Scatters = []
    for kind, (marker, color) in MARKS.items():
        for failed in (False, True):
            marks = [
                (e.t, row[e.agent])
                for e in events
                if e.kind == kind
                and _failed(e) == failed
                and e.agent is not None
                and e.agent in row
            ]
            if not marks:
                continue
            # tool outputs are hollow, as in the browser: a failure changes only the outline
            scatter = ax.scatter(
                [t for t, _ in marks],
                [lane + MARK_Y for _, lane in marks],
                marker=marker,
                s=MARK_PT**2,
                facecolors="white" if kind == "tool_output" else color,
                edgecolors=FAILED if failed else color,
                linewidths=1.5,
                label=kind.replace("_", " ") + (" (failed)" if failed else ""),
                zorder=3,
            )
            drawn.append((scatter, marks))
    return drawn


def _failed(event: TraceEvent) -> bool:
    return event.kind == "tool_output" and bool(event.data.get("is_error"))


def _stack_close_marks(ax: Axes, drawn: Scatters) -> None:
    """Stack a lane's marks that are closer in time than a mark's width upwards, so a user
    message is not hidden under the reply drawn milliseconds later."""
    origin, unit = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
    gap_px = MARK_GAP_PT * ax.figure.dpi / 72
    min_dt = gap_px / abs(unit[0] - origin[0])  # seconds a mark covers on the page
    step = gap_px / abs(unit[1] - origin[1])  # lane units between stacked marks
    slots = 1 + int((MARK_Y + 0.4) / step)  # as many as fit above, inside the lane
    by_lane: dict[int, list[tuple[float, int, int]]] = {}
    for group, (_, marks) in enumerate(drawn):
        for index, (t, lane) in enumerate(marks):
            by_lane.setdefault(lane, []).append((t, group, index))
    heights = [[lane + MARK_Y for _, lane in marks] for _, marks in drawn]
    for lane, close in by_lane.items():
        close.sort()
        chosen = _stack_slots([t for t, _, _ in close], min_dt, slots)
        for (_, group, index), slot in zip(close, chosen, strict=True):
            heights[group][index] = lane + MARK_Y - slot * step
    for (scatter, marks), ys in zip(drawn, heights, strict=True):
        scatter.set_offsets([(t, y) for (t, _), y in zip(marks, ys, strict=True)])


def _stack_slots(times: list[float], min_dt: float, slots: int) -> list[int]:
    """For sorted ``times``, the slot of each: the lowest whose last mark is ``min_dt`` or more
    earlier. Past ``slots`` marks at once, the one freed longest ago is shared."""
    last: list[float] = []
    chosen: list[int] = []
    for t in times:
        free = next((k for k, before in enumerate(last) if t - before >= min_dt), None)
        if free is None and len(last) < slots:
            free = len(last)
            last.append(t)
        elif free is None:
            free = min(range(slots), key=last.__getitem__)
        last[free] = t
        chosen.append(free)
    return chosen


def _draw_handoffs(ax: Axes, events: list[TraceEvent], row: dict[str, int]) -> None:
    for event in events:
        source, target = event.data.get("from"), event.data.get("to")
        if event.kind != "handoff" or source not in row or target not in row:
            continue
        ax.annotate(
            "",
            xy=(event.t, row[target]),
            xytext=(event.t, row[source]),
            arrowprops={"arrowstyle": "->", "color": "#0f172a", "lw": 1.2},
        )
        ax.text(
            event.t,
            (row[source] + row[target]) / 2,
            " " + handoff_label(event.data),
            fontsize=8,
            va="center",
        )


def handoff_label(data: dict[str, Any]) -> str:
    """ "reused · copied": how the realtime session and the chat context moved."""
    return " · ".join(str(data[key]) for key in ("session", "context") if data.get(key))
