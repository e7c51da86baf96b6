"""AgentGraphView: agents as nodes, handoff tools as edges, the current agent highlighted live."""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import math
import sys
import textwrap
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ForwardRef, Literal, Union, get_args, get_origin

import anywidget
import traitlets
from livekit.agents import Agent, llm
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path as MplPath

from ..runner import NotebookRunner
from ..trace import Trace, TraceEvent, agent_label
from ._assets import asset
from ._throttle import Throttle

UNKNOWN = "?"
"""the node a handoff goes to when its target cannot be read from the code"""

AgentLike = Agent | type[Agent]
Point = tuple[float, float]
Rect = tuple[float, float, float, float]
Tool = llm.FunctionTool[..., Any] | llm.RawFunctionTool[..., Any]


class AgentGraphView(anywidget.AnyWidget):
    """The handoff graph of a multi-agent app, from its code, lit up as the session runs.

    ``AgentGraphView([Concierge, Billing()])`` inspects the agents' classes (never
    instantiating one) and follows every handoff tool to the agents it returns, transitively.
    A tool is a handoff when its return annotation names an ``Agent`` (a subclass, ``Agent``
    itself, ``tuple[Agent, str]``, in a union or ``Optional``); for a bare ``-> Agent`` the
    target is read from the body's ``return Billing(...)``. A target that cannot be read
    (``return self._billing``) goes to the ``"?"`` node, until a live handoff through that
    tool shows where it leads. An unannotated tool is an edge only when its body visibly
    returns an agent class.

    With ``trace=`` (or a ``NotebookRunner``, whose trace it follows) each ``handoff`` event
    moves ``current`` and adds, marked ``observed``, any handoff the code did not show. From a
    runner the graph stays empty until the session starts, then grows from its first agent.
    """

    _esm = asset("graph_view.js")
    _css = asset("views.css")

    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``{"id", "label"}`` per agent, in discovery order (breadth first from the first agent)"""
    edges = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``{"source", "target", "tool", "observed"}`` per handoff tool and target"""
    current = traitlets.Unicode("").tag(sync=True)
    """the id of the active agent, "" before the first handoff event"""

    def __init__(
        self,
        agents: Sequence[AgentLike] | AgentLike | NotebookRunner,
        *,
        trace: Trace | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._graph = _Graph()
        self._current = ""
        self._last_tool = ""
        self._runner: NotebookRunner | None = None
        if isinstance(agents, NotebookRunner):
            if trace is not None and trace is not agents.trace:
                raise ValueError(
                    "a NotebookRunner brings its own trace: pass trace= only with agents"
                )
            self._runner = agents
            trace = agents.trace
        else:
            self._graph.add_agents(_as_agents(agents))
        self.trace = trace
        self._throttle = Throttle(self._flush)
        self._unsubscribe: Callable[[], None] = lambda: None
        self._seen = -1
        if trace is not None:
            # subscribed before reading the backlog, so nothing recorded in between is lost;
            # _on_event skips what the backlog already covered
            self._unsubscribe = trace.subscribe(self._on_event)
            for event in trace.events:
                self._apply(event)
        if self._runner is not None:
            self._discover_current()
        self._flush()

    def _on_event(self, event: TraceEvent) -> None:
        if event.seq <= self._seen:
            return
        if self._apply(event):
            self._throttle.request()

    def _apply(self, event: TraceEvent) -> bool:
        """Fold one event into the graph; True if the view changed."""
        self._seen = max(self._seen, event.seq)
        if event.kind == "tool_call":
            self._last_tool = str(event.data.get("name", ""))
            return False
        target = event.data.get("to") if event.kind == "handoff" else None
        if not target:
            return False
        # a handoff's tool is the last one called since the previous handoff, if any
        tool, self._last_tool = self._last_tool, ""
        self._graph.add_node(target)
        if self._runner is not None:
            self._discover_current(target)
        source = event.data.get("from")
        if source:
            self._graph.observe(source, target, tool)
        self._current = target
        return True

    def _discover_current(self, label: str | None = None) -> None:
        """Inspect the runner's live agent if not done yet (and if it is ``label``).

        Events arrive a little after they happened, so the session may already have moved
        on: only an agent whose label matches the event is inspected for it.
        """
        session = self._runner.session if self._runner is not None else None
        if session is None:
            return
        try:
            agent = session.current_agent
        except RuntimeError:  # the session has not started its first agent yet
            return
        if label is None or agent_label(agent) == label:
            self._graph.add_agents([agent])

    def _flush(self) -> None:
        with self.hold_sync():  # one comm message per flush, not one per trait
            self.nodes = self._graph.node_records()
            self.edges = self._graph.edge_records()
            self.current = self._current

    def close(self) -> None:
        self._unsubscribe()
        self._throttle.cancel()
        super().close()

    def to_figure(self) -> Figure:
        """The graph as a static picture (same layout as the browser's), for exported reports."""
        nodes, edges = list(self.nodes), list(self.edges)
        if not nodes:
            figure = Figure(figsize=(6.0, 1.2))
            ax = figure.add_axes((0, 0, 1, 1))
            ax.set_axis_off()
            ax.text(0.5, 0.5, "no agents yet", ha="center", va="center", color="#64748b")
            return figure
        layout = graph_layout(nodes, edges)
        figure = Figure(figsize=(layout.width / 100, layout.height / 100), dpi=100)
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        # one data unit is one browser pixel, y down as on screen
        ax.set_xlim(layout.left, layout.left + layout.width)
        ax.set_ylim(layout.top + layout.height, layout.top)
        for route in layout.edges:
            color = _OBSERVED if route.observed else _EDGE
            ax.add_patch(
                FancyArrowPatch(
                    path=MplPath(route.points, route.codes),
                    arrowstyle="-|>",
                    mutation_scale=12,
                    color=color,
                    linewidth=1.3,
                    linestyle="--" if route.observed else "-",
                )
            )
            ax.text(
                *route.label_at,
                route.tool,
                ha="center",
                va="center",
                fontsize=7.5,
                color="#475569",
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"},
            )
        for box in layout.nodes:
            lit = box.id == self.current
            ax.add_patch(
                FancyBboxPatch(
                    (box.x - box.width / 2, box.y - NODE_H / 2),
                    box.width,
                    NODE_H,
                    boxstyle="round,pad=0,rounding_size=8",
                    facecolor=_CURRENT if lit else "white",
                    edgecolor=_CURRENT_EDGE if lit else _NODE_EDGE,
                    linewidth=1.5,
                    linestyle=":" if box.id == UNKNOWN else "-",
                )
            )
            ax.text(
                box.x,
                box.y,
                box.label,
                ha="center",
                va="center",
                fontsize=9.5,
                color="white" if lit else "#0f172a",
                fontweight="bold" if lit else "normal",
            )
        return figure


# -- the graph -----------------------------------------------------------------------------


@dataclass
class _Edge:
    source: str
    target: str
    tool: str
    observed: bool


class _Graph:
    """Nodes in discovery order and deduplicated edges; agents are expanded once per label."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] = {}
        self.edges: list[_Edge] = []
        self.expanded: set[str] = set()

    def add_node(self, node_id: str) -> None:
        self.nodes.setdefault(node_id, node_id)

    def add_edge(self, source: str, target: str, tool: str, observed: bool) -> None:
        if not any((e.source, e.target, e.tool) == (source, target, tool) for e in self.edges):
            self.edges.append(_Edge(source, target, tool, observed))

    def add_agents(self, agents: Iterable[AgentLike]) -> None:
        """Breadth first from ``agents`` through every handoff tool; each label once."""
        roots = list(agents)
        for agent in roots:  # the caller's order first: the first agent is the layout's root
            self.add_node(_node_id(agent))
        known = {_class_of(agent).__name__: _class_of(agent) for agent in roots}
        queue: deque[AgentLike] = deque(roots)
        while queue:
            agent = queue.popleft()
            source = _node_id(agent)
            if source in self.expanded:
                continue
            self.expanded.add(source)
            owner = _class_of(agent)
            for tool in _tools_of(agent):
                for target in handoff_targets(tool, owner, known):
                    target_id = UNKNOWN if target is None else target.__name__
                    self.add_node(target_id)
                    self.add_edge(source, target_id, tool.info.name, observed=False)
                    if target is not None:
                        known.setdefault(target.__name__, target)
                        queue.append(target)

    def observe(self, source: str, target: str, tool: str) -> None:
        """A handoff seen live: already drawn, or it resolves a ``"?"`` edge, or it is new."""
        self.add_node(source)
        self.add_node(target)
        if any(e.source == source and e.target == target for e in self.edges):
            return
        for edge in self.edges:
            if (edge.source, edge.target, edge.tool) == (source, UNKNOWN, tool) and tool:
                edge.target, edge.observed = target, True
                break
        else:
            self.edges.append(_Edge(source, target, tool, observed=True))
        if not any(UNKNOWN in (e.source, e.target) for e in self.edges):
            self.nodes.pop(UNKNOWN, None)

    def node_records(self) -> list[dict[str, Any]]:
        return [{"id": node_id, "label": label} for node_id, label in self.nodes.items()]

    def edge_records(self) -> list[dict[str, Any]]:
        return [
            {"source": e.source, "target": e.target, "tool": e.tool, "observed": e.observed}
            for e in self.edges
        ]


def _as_agents(agents: Sequence[AgentLike] | AgentLike) -> list[AgentLike]:
    items: list[Any] = [agents] if isinstance(agents, Agent | type) else list(agents)
    for item in items:
        if not (isinstance(item, Agent) or (isinstance(item, type) and issubclass(item, Agent))):
            raise TypeError(
                "AgentGraphView takes agents (Agent instances or subclasses) or a "
                f"NotebookRunner, not {item!r}"
            )
    return items


def _class_of(agent: AgentLike) -> type[Agent]:
    return agent if isinstance(agent, type) else type(agent)


def _node_id(agent: AgentLike) -> str:
    return agent.__name__ if isinstance(agent, type) else agent_label(agent)


def _tools_of(agent: AgentLike) -> list[Tool]:
    """An instance's tools include those given to its constructor; a class has only methods."""
    if isinstance(agent, type):
        return list(llm.find_function_tools(agent))
    tools: list[Tool] = []
    pending: list[llm.Tool | llm.Toolset] = list(agent.tools)
    while pending:
        tool = pending.pop(0)
        if isinstance(tool, llm.Toolset):
            pending[:0] = tool.tools
        elif isinstance(tool, llm.FunctionTool | llm.RawFunctionTool):
            tools.append(tool)
    return tools


# -- reading a tool's targets --------------------------------------------------------------


def handoff_targets(
    tool: Tool, owner: type[Agent], known: dict[str, type[Agent]] | None = None
) -> list[type[Agent] | None]:
    """The agent classes ``tool`` can hand off to; ``None`` stands for one it cannot read.

    ``owner`` is the class the tool was found on (its module helps resolve names); ``known``
    maps class names to agent classes, for annotations naming classes local to a function.
    """
    func = inspect.unwrap(tool)
    namespace = _namespace(func, owner, known or {})
    kind, annotated = _annotated_targets(func, namespace)
    if kind == "none":
        return []
    if kind == "specific":
        return annotated
    returned = _returned_targets(func, namespace)
    if kind == "base":
        # annotated as a handoff: never dropped, an unreadable target is drawn as "?"
        return _unique(returned) if returned else [None]
    return _unique(c for c in returned or [] if c is not None)


def _namespace(
    func: Callable[..., Any], owner: type[Agent], known: dict[str, type[Agent]]
) -> dict[str, Any]:
    """Names a tool's code can see, nearest first: closure, globals, the class's module."""
    namespace: dict[str, Any] = dict(known)
    module = sys.modules.get(owner.__module__)
    if module is not None:
        namespace.update(vars(module))
    namespace.update(getattr(func, "__globals__", {}))
    # a builtin or a callable object has no closure to read
    with contextlib.suppress(TypeError, ValueError):
        namespace.update(inspect.getclosurevars(func).nonlocals)
    return namespace


AnnotationKind = Literal["none", "specific", "base", "unannotated"]


def _annotated_targets(
    func: Callable[..., Any], namespace: dict[str, Any]
) -> tuple[AnnotationKind, list[type[Agent] | None]]:
    """Only the return annotation is read: a parameter's that does not evaluate (an import
    under ``TYPE_CHECKING``) must not hide where the tool hands off."""
    try:
        annotation = inspect.get_annotations(func).get("return", inspect.Parameter.empty)
    except TypeError:  # not a function, class or module: nothing annotated
        return "unannotated", []
    if annotation is inspect.Parameter.empty:
        return "unannotated", []
    try:
        classes = _unique(_agent_classes(annotation, namespace))
    except Exception:  # an annotation that does not evaluate: fall back on the body
        return "unannotated", []
    if not classes:
        return "none", []
    specific: list[type[Agent] | None] = [c for c in classes if c is not Agent]
    return ("specific", specific) if specific else ("base", [])


def _agent_classes(annotation: Any, namespace: dict[str, Any]) -> Iterator[type[Agent]]:
    """Agent classes in a return annotation, through unions and tuples (what LiveKit accepts);
    names in strings (``from __future__ import annotations``, forward references) resolved."""
    if isinstance(annotation, ForwardRef):
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):
        annotation = eval(annotation, dict(namespace))  # what typing.get_type_hints does
    if isinstance(annotation, type) and not get_args(annotation):
        if issubclass(annotation, Agent):
            yield annotation
        return
    if get_origin(annotation) in (Union, types.UnionType, tuple):
        for arg in get_args(annotation):
            yield from _agent_classes(arg, namespace)


def _returned_targets(
    func: Callable[..., Any], namespace: dict[str, Any]
) -> list[type[Agent] | None] | None:
    """What the body's ``return`` statements build: agent classes, ``None`` if unreadable.

    ``None`` as a whole when there is no source (a lambda, ``exec``'d code).
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None
    )
    if definition is None:
        return None
    targets: list[type[Agent] | None] = []
    for value in _returned_values(definition):
        targets.extend(_targets_of(value, namespace))
    return targets


def _returned_values(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    """The function's own ``return`` values, not those of functions nested in it."""
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value
        pending.extend(ast.iter_child_nodes(node))


def _targets_of(value: ast.expr, namespace: dict[str, Any]) -> list[type[Agent] | None]:
    if isinstance(value, ast.Tuple):  # return Billing(), "transferring"
        return [t for element in value.elts for t in _targets_of(element, namespace)]
    if isinstance(value, ast.IfExp):
        return _targets_of(value.body, namespace) + _targets_of(value.orelse, namespace)
    if isinstance(value, ast.Constant | ast.JoinedStr | ast.Dict | ast.List):
        return []  # a result, not an agent
    if isinstance(value, ast.Call):
        called = _resolve(value.func, namespace)
        if isinstance(called, type):
            return [called] if issubclass(called, Agent) else []
        if callable(called):  # a factory: its own annotation may name the agent
            own = {**namespace, **getattr(called, "__globals__", {})}
            kind, classes = _annotated_targets(called, own)
            return classes if kind == "specific" else [] if kind == "none" else [None]
    return [None]


def _resolve(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """``Name`` or ``module.Name`` to the object it names in ``namespace``; None if unsure."""
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id, getattr(builtins, expr.id, None))
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, namespace)
        # only modules and classes: getattr on anything else could run arbitrary code
        if isinstance(base, types.ModuleType | type):
            return getattr(base, expr.attr, None)
    return None


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


# -- layout (widgets/graph_view.js draws the same) -------------------------------------------

NODE_H = 36.0
NODE_MIN_W = 90.0
NODE_CHAR_W = 7.5
"""estimated width of a character of a 13 px node label: the same estimate as the browser's"""
TOOL_CHAR_W = 6.6
ROW = 84.0
MARGIN = 16.0
"""space around everything drawn: nodes, curves and tool names"""
PARALLEL_GAP = 44.0
"""how far apart parallel edges (A->B and B->A) bulge, so they never overlap"""


@dataclass(frozen=True)
class NodeBox:
    id: str
    label: str
    x: float
    y: float
    width: float
    depth: int


@dataclass(frozen=True)
class EdgeRoute:
    source: str
    target: str
    tool: str
    observed: bool
    points: list[Point]
    codes: list[int]
    label_at: Point


@dataclass(frozen=True)
class GraphLayout:
    """Boxes and routes in pixels; ``left``/``top``/``width``/``height`` frame all of them."""

    nodes: list[NodeBox]
    edges: list[EdgeRoute]
    left: float
    top: float
    width: float
    height: float


def graph_layout(nodes: Sequence[dict[str, Any]], edges: Sequence[dict[str, Any]]) -> GraphLayout:
    """Columns by breadth-first depth from the first node (then from each node not reached),
    rows in discovery order; edges as quadratic curves, bent apart when parallel."""
    ids = [str(n["id"]) for n in nodes]
    depth: dict[str, int] = {}
    for root in ids:
        if root in depth:
            continue
        depth[root] = 0
        queue = [root]
        while queue:
            node = queue.pop(0)
            for edge in edges:
                if edge["source"] == node and edge["target"] not in depth:
                    depth[edge["target"]] = depth[node] + 1
                    queue.append(edge["target"])
    layers: dict[int, list[str]] = {}
    for node_id in ids:
        layers.setdefault(depth[node_id], []).append(node_id)
    tallest = max(len(layer) for layer in layers.values())
    widths = {str(n["id"]): max(NODE_MIN_W, len(str(n["label"])) * NODE_CHAR_W + 28) for n in nodes}
    column = max(widths.values())
    longest_tool = max((len(str(e["tool"])) for e in edges), default=0)
    gap = max(120.0, longest_tool * TOOL_CHAR_W + 48)
    boxes: dict[str, NodeBox] = {}
    for layer_depth, layer in layers.items():
        for row, node_id in enumerate(layer):
            boxes[node_id] = NodeBox(
                id=node_id,
                label=str(next(n["label"] for n in nodes if n["id"] == node_id)),
                x=column / 2 + layer_depth * (column + gap),
                y=NODE_H / 2 + (row + (tallest - len(layer)) / 2) * ROW,
                width=widths[node_id],
                depth=layer_depth,
            )
    drawn = [e for e in edges if e["source"] in boxes and e["target"] in boxes]
    paths = [_path(edge, boxes, drawn, column) for edge in drawn]
    labels = _place_labels([str(e["tool"]) for e in drawn], paths, boxes.values())
    routes = [
        EdgeRoute(
            source=str(edge["source"]),
            target=str(edge["target"]),
            tool=str(edge["tool"]),
            observed=bool(edge["observed"]),
            points=points,
            codes=[_MOVETO, _CURVE3, _CURVE3] if len(points) == 3 else [_MOVETO, *[_CURVE4] * 3],
            label_at=label_at,
        )
        for edge, points, label_at in zip(drawn, paths, labels, strict=True)
    ]
    ordered = [boxes[i] for i in ids]
    left, top, right, bottom = _bounds(ordered, routes)
    return GraphLayout(
        nodes=ordered,
        edges=routes,
        left=left - MARGIN,
        top=top - MARGIN,
        width=right - left + 2 * MARGIN,
        height=bottom - top + 2 * MARGIN,
    )


def _bounds(boxes: Sequence[NodeBox], routes: Sequence[EdgeRoute]) -> Rect:
    """Left, top, right, bottom of the boxes, the curves' ends and middles, the tool names."""
    xs: list[float] = []
    ys: list[float] = []
    for box in boxes:
        xs += [box.x - box.width / 2, box.x + box.width / 2]
        ys += [box.y - NODE_H / 2, box.y + NODE_H / 2]
    for route in routes:
        first, last = route.points[0], route.points[-1]
        middle = _along(route.points, 0.5)
        left, top, right, bottom = _label_rect(route.tool, route.label_at)
        xs += [first[0], last[0], middle[0], left, right]
        ys += [first[1], last[1], middle[1], top, bottom]
    return min(xs), min(ys), max(xs), max(ys)


def _path(
    edge: dict[str, Any], boxes: dict[str, NodeBox], edges: Sequence[dict[str, Any]], column: float
) -> list[Point]:
    """A loop (cubic) over the top of its node, or a quadratic curve from box to box."""
    a, b = boxes[edge["source"]], boxes[edge["target"]]
    if a is b:  # bigger for each further loop on the same node
        loops = [e for e in edges if e["source"] == e["target"] == a.id]
        lift = 44 + 18 * loops.index(edge)
        top = a.y - NODE_H / 2
        return [(a.x - 10, top), (a.x - 34, top - lift), (a.x + 34, top - lift), (a.x + 10, top)]
    # edges between the same two nodes, either way, share a frame: the first one's direction
    pair = [e for e in edges if {e["source"], e["target"]} == {a.id, b.id}]
    bend = (pair.index(edge) - (len(pair) - 1) / 2) * PARALLEL_GAP
    length = math.dist((a.x, a.y), (b.x, b.y))
    # a straight line would cross the nodes in between: around a column, or across several
    if a.depth == b.depth:
        bend += column / 2 + 24
    elif abs(a.depth - b.depth) > 1:
        bend += 0.2 * length
    if edge["source"] != pair[0]["source"]:
        bend = -bend  # the perpendicular flips with the direction; keep the shared side
    ux, uy = (b.x - a.x) / length, (b.y - a.y) / length
    # a quadratic curve's middle is half-way to its control point: 2 * bend puts it at bend
    control = ((a.x + b.x) / 2 - uy * 2 * bend, (a.y + b.y) / 2 + ux * 2 * bend)
    return [_box_exit(a, control), control, _box_exit(b, control, gap=2)]


LABEL_SPOTS = (0.6, 0.45, 0.75, 0.3)
"""where along its curve a tool name may go, in order of preference: past the middle first,
where edges fanning out of one agent have spread apart"""


def _place_labels(
    tools: Sequence[str], paths: Sequence[list[Point]], boxes: Iterable[NodeBox]
) -> list[Point]:
    """Each tool name at the first spot along its curve that covers no node and no name
    placed before it (else at the preferred spot): greedy, in edge order."""
    taken: list[Rect] = [
        (b.x - b.width / 2, b.y - NODE_H / 2, b.x + b.width / 2, b.y + NODE_H / 2) for b in boxes
    ]
    labels: list[Point] = []
    for tool, points in zip(tools, paths, strict=True):
        if len(points) == 4:  # on a loop, on its top
            spots = [(points[0][0] + 10, points[1][1] + 6)]
        else:
            spots = [_along(points, t) for t in LABEL_SPOTS]
        free = (
            spot
            for spot in spots
            if not any(_overlap(_label_rect(tool, spot), rect) for rect in taken)
        )
        label_at = next(free, spots[0])
        labels.append(label_at)
        if tool:
            taken.append(_label_rect(tool, label_at))
    return labels


def _along(points: Sequence[Point], t: float) -> Point:
    """The point at ``t`` (0 to 1) along a quadratic or cubic Bézier curve."""
    u = 1 - t
    weights = (
        (u * u, 2 * u * t, t * t)
        if len(points) == 3
        else (u**3, 3 * u * u * t, 3 * u * t * t, t**3)
    )
    return (
        sum(w * p[0] for w, p in zip(weights, points, strict=True)),
        sum(w * p[1] for w, p in zip(weights, points, strict=True)),
    )


def _label_rect(tool: str, at: Point) -> Rect:
    half = len(tool) * TOOL_CHAR_W / 2 + 3
    return (at[0] - half, at[1] - 8, at[0] + half, at[1] + 8)


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _box_exit(box: NodeBox, toward: Point, gap: float = 0) -> Point:
    """Where the ray from ``box``'s centre toward ``toward`` leaves the box (plus ``gap``)."""
    dx, dy = toward[0] - box.x, toward[1] - box.y
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    reach = min(
        box.width / 2 / abs(ux) if ux else math.inf,
        NODE_H / 2 / abs(uy) if uy else math.inf,
    )
    return (box.x + ux * (reach + gap), box.y + uy * (reach + gap))


_MOVETO, _CURVE3, _CURVE4 = int(MplPath.MOVETO), int(MplPath.CURVE3), int(MplPath.CURVE4)
_EDGE = "#64748b"
_OBSERVED = "#d97706"
_NODE_EDGE = "#334155"
_CURRENT = "#0284c7"
_CURRENT_EDGE = "#0369a1"
