"""StateView: the current agent, its state and the user's, as live badges with time in state."""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets
from matplotlib.figure import Figure

from ..trace import Trace, TraceEvent
from ._assets import asset
from ._throttle import Throttle


class StateView(anywidget.AnyWidget):
    """Live from a ``Trace`` (or the final state of a loaded one).

    Only the three states and when they began cross to the browser, at most 30 times a
    second; the browser counts the time in state itself.
    """

    _esm = asset("state_view.js")
    _css = asset("views.css")

    agent = traitlets.Unicode("").tag(sync=True)
    agent_state = traitlets.Unicode("initializing").tag(sync=True)
    user_state = traitlets.Unicode("listening").tag(sync=True)
    agent_state_since = traitlets.Float(0.0).tag(sync=True)
    """trace seconds when the agent entered its state"""
    user_state_since = traitlets.Float(0.0).tag(sync=True)
    started_at = traitlets.Float(0.0).tag(sync=True)
    """wall-clock seconds of trace time 0"""
    closed = traitlets.Bool(False).tag(sync=True)
    failure = traitlets.Unicode("").tag(sync=True)
    """why the session failed, when it closed on an error"""

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(started_at=trace.started_at, **kwargs)
        self.trace = trace
        self._state: dict[str, Any] = {}
        self._throttle = Throttle(self._flush)
        for event in trace.events:
            self._apply(event)
        self._flush()
        self._unsubscribe = trace.subscribe(self._on_event)

    def _on_event(self, event: TraceEvent) -> None:
        self._apply(event)
        self._throttle.request()

    def _apply(self, event: TraceEvent) -> None:
        state = self._state
        if event.agent and event.kind != "closed":
            state["agent"] = event.agent
        if event.kind == "agent_state":
            state.update(agent_state=event.data["new"], agent_state_since=event.t)
        elif event.kind == "user_state":
            state.update(user_state=event.data["new"], user_state_since=event.t)
        elif event.kind == "handoff" and event.data.get("to"):
            state["agent"] = event.data["to"]
        elif event.kind == "closed":
            state["closed"] = True
            if event.data.get("error"):
                state["failure"] = str(event.data["error"])

    def _flush(self) -> None:
        with self.hold_sync():  # one comm message per flush, not one per trait
            for name, value in self._state.items():
                setattr(self, name, value)

    def close(self) -> None:
        self._unsubscribe()
        self._throttle.cancel()
        super().close()

    def to_figure(self) -> Figure:
        """The badges as a static picture, for executed notebooks and exported reports."""
        figure = Figure(figsize=(6.0, 1.2))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        badges = [
            ("agent", self.agent or "-", "#334155"),
            ("agent state", self.agent_state, _AGENT_COLORS.get(self.agent_state, "#64748b")),
            ("user", self.user_state, _USER_COLORS.get(self.user_state, "#64748b")),
        ]
        for index, (label, value, color) in enumerate(badges):
            x = 0.04 + index * 0.33
            ax.text(x, 0.72, label, fontsize=9, color="#475569", transform=ax.transAxes)
            ax.text(
                x,
                0.3,
                value,
                fontsize=13,
                color="white",
                transform=ax.transAxes,
                bbox={"boxstyle": "round,pad=0.4", "facecolor": color, "edgecolor": "none"},
            )
        if self.closed:
            note = f"session failed: {self.failure}" if self.failure else "session closed"
            ax.text(0.96, 0.08, note, ha="right", fontsize=8, transform=ax.transAxes)
        return figure


_AGENT_COLORS = {
    "initializing": "#94a3b8",
    "idle": "#64748b",
    "listening": "#0284c7",
    "thinking": "#d97706",
    "speaking": "#16a34a",
}
_USER_COLORS = {"listening": "#64748b", "speaking": "#16a34a", "away": "#94a3b8"}
