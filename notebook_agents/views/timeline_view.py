"""TimelineView: a lane per agent with state spans, message and tool marks, handoff arrows
and each new agent's bring-up (from the arrow to its first words)."""

from __future__ import annotations

from typing import Any

import traitlets
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..trace import Trace, TraceEvent
from ._assets import asset
from ._stream import TraceStreamView

SKIPPED_KINDS = ("metrics", "user_state")
"""plentiful and not drawn on the timeline (StateView shows the user's state)"""
MAX_TEXT = 400
"""longer texts are cut before they cross to the browser: hover details, not transcripts"""

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
}
"""matplotlib marker and colour per event kind; the browser uses the same colours"""
BRING_UP = "#6366f1"


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
    """each agent's chat context at ``scrub_t``"""

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(trace, **kwargs)
        self.observe(self._on_scrub, names="scrub_t")

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        return None if event.kind in SKIPPED_KINDS else browser_record(event)

    def _on_scrub(self, change: dict[str, Any]) -> None:
        t = change["new"]
        self.scrub_contexts = {} if t is None else self.contexts_at(t)

    def contexts_at(self, t: float) -> dict[str, list[dict[str, Any]]]:
        """Each agent's chat context at trace time ``t``, texts cut to ``MAX_TEXT``."""
        return {
            agent: [{**item, "text": cut(item.get("text") or "")} for item in items]
            for agent, items in self.trace.contexts_at(t).items()
        }

    def to_figure(self) -> Figure:
        """Lanes, state spans, marks and handoff arrows as a static picture."""
        return timeline_figure(self.trace.events)


def browser_record(event: TraceEvent) -> dict[str, Any]:
    """What the browser needs of an event: long texts cut, a handoff's context as a count."""
    data = {
        key: cut(value) if isinstance(value, str) else value
        for key, value in event.data.items()
        if key not in ("context_items", "added", "removed")
    }
    for key in ("added", "removed"):
        if key in event.data:
            data[key] = len(event.data[key])
    return {"seq": event.seq, "t": event.t, "kind": event.kind, "agent": event.agent, "data": data}


def cut(text: str) -> str:
    """``text``, at most ``MAX_TEXT`` characters."""
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


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
    for kind, (marker, color) in MARKS.items():
        marks = [(e.t, row[e.agent]) for e in events if e.kind == kind and e.agent in row]
        if marks:
            ax.scatter(
                [t for t, _ in marks],
                [lane + 0.2 for _, lane in marks],
                marker=marker,
                color=color,
                s=36,
                label=kind.replace("_", " "),
                zorder=3,
            )
    _draw_handoffs(ax, events, row)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlabel("trace time (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_title("agent timeline", fontsize=10)
    return figure


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
