"""StateView: the current agent, its state and the user's, as live badges with time in state."""

from __future__ import annotations

from typing import Any

import traitlets
from matplotlib.figure import Figure

from .._figure_style import static_figure
from ..trace import Trace, TraceEvent
from ._assets import asset
from ._stream import TraceFedView

STATE_COLORS = {
    "initializing": "#64748b",
    "listening": "#0369a1",
    "thinking": "#b45309",
    "speaking": "#15803d",
    "away": "#64748b",
}
"""a state's badge colour, agent's and user's alike: white text on each reads at >= 4.5:1,
each pill at >= 3:1 on the light and the dark theme's page"""
OTHER_STATE = "#64748b"
"""the badge of a state without a colour of its own (``idle``, ``closed``)"""
CLOSED = "closed"
"""the agent's state once the session has closed"""
NO_CALLER = "–"
"""the user's state once the session has closed (as the agent's badge before there is one)"""
AGENT_COLOR = "#334155"
"""the agent's badge outside JupyterLab; in it, the theme's inverse colour"""


class StateView(TraceFedView):
    """Live from a ``Trace`` (or the final state of a loaded one).

    Only the three states, when they began and how to colour them cross to the browser, at
    most 30 times a second; the browser counts the time in state itself.
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
    colors = traitlets.Dict().tag(sync=True)
    """each badge's colour (``agent``, ``agent_state``, ``user_state``), for its state"""
    note = traitlets.Unicode("").tag(sync=True)
    """"session closed", or "session failed: <why>"; "" while it runs"""

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(started_at=trace.started_at, **kwargs)
        self.trace = trace
        self._state: dict[str, Any] = {}
        self._follow(trace)

    @traitlets.default("colors")
    def _default_colors(self) -> dict[str, str]:
        return {
            "agent": AGENT_COLOR,
            "agent_state": STATE_COLORS.get(self.agent_state, OTHER_STATE),
            "user_state": STATE_COLORS.get(self.user_state, OTHER_STATE),
        }

    @traitlets.observe("agent_state", "user_state")
    def _recolor(self, _: Any) -> None:
        self.colors = self._default_colors()

    @traitlets.observe("closed", "failure")
    def _renote(self, _: Any) -> None:
        if not self.closed:
            self.note = ""
        else:
            self.note = f"session failed: {self.failure}" if self.failure else "session closed"

    def _take(self, event: TraceEvent) -> bool:
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
            # livekit says no last state: the agent's is closed, and no caller is on the line
            state.update(closed=True, agent_state=CLOSED, agent_state_since=event.t)
            state.update(user_state=NO_CALLER, user_state_since=event.t)
            if event.data.get("error"):
                state["failure"] = str(event.data["error"])
        return True

    def _flush(self) -> None:
        with self.hold_sync():  # one comm message per flush, not one per trait
            for name, value in self._state.items():
                setattr(self, name, value)

    def to_figure(self) -> Figure:
        """The badges as a static picture, for executed notebooks and exported reports."""
        self._catch_up()
        with static_figure():
            return self._figure()

    def _figure(self) -> Figure:
        figure = Figure(figsize=(6.0, 1.2))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        badges = [
            ("agent", self.agent or "–", self.colors["agent"]),
            ("agent state", self.agent_state, self.colors["agent_state"]),
            ("user", self.user_state, self.colors["user_state"]),
        ]
        for index, (label, value, color) in enumerate(badges):
            x = 0.04 + index * 0.33
            ax.text(x, 0.72, label, fontsize=9, transform=ax.transAxes)
            ax.text(
                x,
                0.3,
                value,
                fontsize=13,
                color="white",
                transform=ax.transAxes,
                bbox={"boxstyle": "round,pad=0.4", "facecolor": color, "edgecolor": "none"},
            )
        if self.note:
            ax.text(0.96, 0.08, self.note, ha="right", fontsize=8, transform=ax.transAxes)
        return figure
