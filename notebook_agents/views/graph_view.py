"""AgentGraphView: agents as nodes, handoff tools as edges, the current agent highlighted live."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import traitlets
from livekit.agents import Agent
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path as MplPath

from .._figure_style import static_figure
from ..agent_graph import UNKNOWN, AgentLike, HandoffGraph
from ..runner import AgentRunner
from ..trace import Trace, TraceEvent
from ._assets import asset
from ._graph_layout import NODE_H, TOOL_CHAR_W, EdgeRoute, GraphLayout, NodeBox, graph_layout
from ._stream import TraceFedView
from .errors import ViewArgumentError, ViewSourceError

EMPTY = "no agents yet"
"""what the view says before it knows an agent"""
GRAPH_COLORS = {
    "edge": "#64748b",
    "observed": "#d97706",
    "node": "white",
    "node-edge": "#334155",
    "text": "#0f172a",
    "label": "#475569",
    "backdrop": "white",
    "current": "#0369a1",
    "current-text": "white",
    "unknown": "#94a3b8",
    "muted": "#64748b",
}
"""the graph's colours, for the figure and the browser alike; in JupyterLab the browser takes
the theme's where one fits (views.css), all but ``observed`` and ``current-text``"""


class AgentGraphView(TraceFedView):
    """The handoff graph of a multi-agent app, from its code, lit up as the session runs.

    ``AgentGraphView([Concierge, Billing()])`` reads the agents' code and follows every
    handoff tool to the agents it returns, transitively (``notebook_agents.agent_graph``
    says how); a target that cannot be read goes to the ``"?"`` node until a handoff
    through that tool shows where it leads.

    With ``trace=``, or given a runner (``NotebookRunner`` or ``AgentProcess``: its trace is
    followed) or a ``Trace`` (live or loaded) instead of agents, the trace's ``handoff``
    events move ``current``, add, marked ``observed``, any handoff the code did not show, and
    have the code of each agent they name read too, where its class is loaded here. Everything
    the view shows comes from the code and the trace's events, never from a live session.
    """

    _esm = asset("graph_view.js")
    _css = asset("views.css")

    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    """per agent, in discovery order (breadth first from the first one): ``id``, ``label``,
    its box's centre ``x``, ``y`` and its ``width``, ``height``; ``unknown``; ``title``"""
    edges = traitlets.List(traitlets.Dict()).tag(sync=True)
    """per handoff tool and target: ``source``, ``target``, ``tool``, ``observed``; the
    curve as an SVG ``path``; ``label_at``, the tool name's centre, and ``label_width``, its
    estimated width; ``title``"""
    view_box = traitlets.List(traitlets.Float(), [0.0, 0.0, 0.0, 0.0]).tag(sync=True)
    """left, top, width, height of all that is drawn, in the pixels of ``nodes`` and ``edges``"""
    current = traitlets.Unicode("").tag(sync=True)
    """the id of the active agent, "" before the first handoff event and once the session
    has closed"""
    note = traitlets.Unicode(EMPTY).tag(sync=True)
    """what to say instead of a graph, "" once there is one"""
    colors = traitlets.Dict().tag(sync=True)
    """``GRAPH_COLORS``"""

    def __init__(
        self,
        agents: Sequence[AgentLike] | AgentLike | AgentRunner | Trace,
        *,
        trace: Trace | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(colors=dict(GRAPH_COLORS), **kwargs)
        if isinstance(agents, AgentRunner | Trace):
            if trace is not None:
                raise ViewArgumentError(
                    "a runner or a Trace is followed as it is: pass trace= only with agents"
                )
            trace = agents.trace if isinstance(agents, AgentRunner) else agents
            agents = []
        self.trace = trace
        self._graph = HandoffGraph(_as_agents(agents))
        self._closed = False
        """the session closed: no agent is on the call any more"""
        self.geometry = graph_layout([], [])
        """what ``nodes``, ``edges`` and ``view_box`` were made of, at the last flush"""
        self._follow(trace)

    def _take(self, event: TraceEvent) -> bool:
        if event.kind == "closed":
            self._closed = True
            return True
        return self._graph.apply(event)

    def _flush(self) -> None:
        graph = self._graph
        self.geometry = layout = graph_layout(graph.nodes, graph.edges)
        with self.hold_sync():  # one comm message per flush, not one per trait
            self.nodes = [_node_record(box) for box in layout.nodes]
            self.edges = [_edge_record(route) for route in layout.edges]
            self.view_box = [layout.left, layout.top, layout.width, layout.height]
            self.current = "" if self._closed else graph.current
            self.note = "" if layout.nodes else EMPTY

    def to_figure(self) -> Figure:
        """The graph as a static picture: the layout the browser draws, in the same colours."""
        self._catch_up()
        with static_figure():
            return graph_figure(self.geometry, self.current, self.colors)


def graph_figure(layout: GraphLayout, current: str, colors: dict[str, str]) -> Figure:
    """``layout`` drawn with matplotlib, ``current`` lit: the nodes and tool names on boxes of
    their own, the rest on the page."""
    if not layout.nodes:
        figure = Figure(figsize=(6.0, 1.2))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.text(0.5, 0.5, EMPTY, ha="center", va="center")
        return figure
    figure = Figure(figsize=(layout.width / 100, layout.height / 100), dpi=100)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    # one data unit is one browser pixel, y down as on screen
    ax.set_xlim(layout.left, layout.left + layout.width)
    ax.set_ylim(layout.top + layout.height, layout.top)
    for route in layout.edges:
        edge = route.edge
        color = colors["observed" if edge.observed else "edge"]
        # a quadratic curve's control point and end are CURVE3 codes, a cubic's three CURVE4
        curve = MplPath.CURVE3 if len(route.points) == 3 else MplPath.CURVE4
        codes = [MplPath.MOVETO] + [curve] * (len(route.points) - 1)
        ax.add_patch(
            FancyArrowPatch(
                path=MplPath(route.points, codes),
                arrowstyle="-|>",
                mutation_scale=12,
                color=color,
                linewidth=1.3,
                linestyle="--" if edge.observed else "-",
            )
        )
        ax.text(
            *route.label_at,
            edge.tool,
            ha="center",
            va="center",
            fontsize=7.5,
            color=colors["label"],
            bbox={
                "boxstyle": "round,pad=0.15",
                "facecolor": colors["backdrop"],
                "edgecolor": "none",
            },
        )
    for box in layout.nodes:
        lit, unknown = box.id == current, box.id == UNKNOWN
        ax.add_patch(
            FancyBboxPatch(
                (box.x - box.width / 2, box.y - NODE_H / 2),
                box.width,
                NODE_H,
                boxstyle="round,pad=0,rounding_size=8",
                facecolor=colors["current" if lit else "node"],
                edgecolor=colors["current" if lit else "unknown" if unknown else "node-edge"],
                linewidth=1.5,
                linestyle=":" if unknown else "-",
            )
        )
        ax.text(
            box.x,
            box.y,
            box.id,
            ha="center",
            va="center",
            fontsize=9.5,
            color=colors["current-text" if lit else "muted" if unknown else "text"],
            fontweight="bold" if lit else "normal",
        )
    return figure


def _node_record(box: NodeBox) -> dict[str, Any]:
    unknown = box.id == UNKNOWN
    return {
        "id": box.id,
        "label": box.id,
        "x": box.x,
        "y": box.y,
        "width": box.width,
        "height": NODE_H,
        "unknown": unknown,
        "title": "a target not known until a handoff shows it" if unknown else box.id,
    }


def _edge_record(route: EdgeRoute) -> dict[str, Any]:
    edge = route.edge
    seen = " (observed live)" if edge.observed else ""
    (x0, y0), *rest = route.points
    curve = "Q" if len(rest) == 2 else "C"
    return {
        "source": edge.source,
        "target": edge.target,
        "tool": edge.tool,
        "observed": edge.observed,
        "path": f"M {x0:.2f} {y0:.2f} {curve} " + " ".join(f"{x:.2f} {y:.2f}" for x, y in rest),
        "label_at": list(route.label_at),
        "label_width": len(edge.tool) * TOOL_CHAR_W,
        "title": f"{edge.tool or 'handoff'}: {edge.source} → {edge.target}{seen}",
    }


def _as_agents(agents: Sequence[AgentLike] | AgentLike) -> list[AgentLike]:
    items: list[Any] = [agents] if isinstance(agents, Agent | type) else list(agents)
    for item in items:
        if not (isinstance(item, Agent) or (isinstance(item, type) and issubclass(item, Agent))):
            raise ViewSourceError(
                "AgentGraphView takes agents (Agent instances or subclasses), a runner "
                f"or a Trace, not {item!r}"
            )
    return items
