"""Where AgentGraphView draws its agents, handoff curves and tool names, in pixels.

Computed once in the kernel: the browser draws what it is sent, the static figure the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..agent_graph import HandoffEdge

Point = tuple[float, float]
Rect = tuple[float, float, float, float]

NODE_H = 36.0
NODE_MIN_W = 90.0
NODE_CHAR_W = 7.5
"""estimated width of a character of a 13 px node label"""
TOOL_CHAR_W = 6.6
"""estimated width of a character of an 11 px tool name"""
ROW = 84.0
MARGIN = 16.0
"""space around everything drawn: nodes, curves and tool names"""
PARALLEL_GAP = 44.0
"""how far apart parallel edges (A->B and B->A) bulge, so they never overlap"""
LABEL_SPOTS = (0.6, 0.45, 0.75, 0.3)
"""where along its curve a tool name may go, in order of preference: past the middle first,
where edges fanning out of one agent have spread apart"""


@dataclass(frozen=True)
class NodeBox:
    """An agent's box: ``x``, ``y`` its centre."""

    id: str
    x: float
    y: float
    width: float
    depth: int


@dataclass(frozen=True)
class EdgeRoute:
    """A handoff's curve: quadratic (3 points) between two boxes, cubic (4) for a loop."""

    edge: HandoffEdge
    points: list[Point]
    label_at: Point


@dataclass(frozen=True)
class GraphLayout:
    """Boxes and routes; ``left``/``top``/``width``/``height`` frame all of them."""

    nodes: list[NodeBox]
    edges: list[EdgeRoute]
    left: float
    top: float
    width: float
    height: float


def graph_layout(nodes: Sequence[str], edges: Sequence[HandoffEdge]) -> GraphLayout:
    """Columns by breadth-first depth from the first node (then from each node not reached),
    rows in discovery order; edges as quadratic curves, bent apart when parallel. No nodes:
    an empty layout, of size 0."""
    if not nodes:
        return GraphLayout([], [], 0.0, 0.0, 0.0, 0.0)
    depth: dict[str, int] = {}
    for root in nodes:
        if root in depth:
            continue
        depth[root] = 0
        queue = [root]
        while queue:
            node = queue.pop(0)
            for edge in edges:
                if edge.source == node and edge.target not in depth:
                    depth[edge.target] = depth[node] + 1
                    queue.append(edge.target)
    layers: dict[int, list[str]] = {}
    for node in nodes:
        layers.setdefault(depth[node], []).append(node)
    tallest = max(len(layer) for layer in layers.values())
    widths = {node: max(NODE_MIN_W, len(node) * NODE_CHAR_W + 28) for node in nodes}
    column = max(widths.values())
    longest_tool = max((len(e.tool) for e in edges), default=0)
    gap = max(120.0, longest_tool * TOOL_CHAR_W + 48)
    boxes: dict[str, NodeBox] = {}
    for layer_depth, layer in layers.items():
        for row, node in enumerate(layer):
            boxes[node] = NodeBox(
                id=node,
                x=column / 2 + layer_depth * (column + gap),
                y=NODE_H / 2 + (row + (tallest - len(layer)) / 2) * ROW,
                width=widths[node],
                depth=layer_depth,
            )
    drawn = [e for e in edges if e.source in boxes and e.target in boxes]
    paths = [_path(edge, boxes, drawn, column) for edge in drawn]
    labels = _place_labels([e.tool for e in drawn], paths, boxes.values())
    routes = [
        EdgeRoute(edge, points, label_at)
        for edge, points, label_at in zip(drawn, paths, labels, strict=True)
    ]
    ordered = [boxes[node] for node in nodes]
    left, top, right, bottom = _bounds(ordered, routes)
    return GraphLayout(
        nodes=ordered,
        edges=routes,
        left=left - MARGIN,
        top=top - MARGIN,
        width=right - left + 2 * MARGIN,
        height=bottom - top + 2 * MARGIN,
    )


def label_rect(tool: str, at: Point) -> Rect:
    """Left, top, right, bottom of a tool name centred at ``at`` (estimated width)."""
    half = len(tool) * TOOL_CHAR_W / 2 + 3
    return (at[0] - half, at[1] - 8, at[0] + half, at[1] + 8)


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
        left, top, right, bottom = label_rect(route.edge.tool, route.label_at)
        xs += [first[0], last[0], middle[0], left, right]
        ys += [first[1], last[1], middle[1], top, bottom]
    return min(xs), min(ys), max(xs), max(ys)


def _path(
    edge: HandoffEdge, boxes: dict[str, NodeBox], edges: Sequence[HandoffEdge], column: float
) -> list[Point]:
    """A loop (cubic) over the top of its node, or a quadratic curve from box to box."""
    a, b = boxes[edge.source], boxes[edge.target]
    if a is b:  # bigger for each further loop on the same node
        loops = [e for e in edges if e.source == e.target == a.id]
        lift = 44 + 18 * loops.index(edge)
        top = a.y - NODE_H / 2
        return [(a.x - 10, top), (a.x - 34, top - lift), (a.x + 34, top - lift), (a.x + 10, top)]
    # edges between the same two nodes, either way, share a frame: the first one's direction
    pair = [e for e in edges if {e.source, e.target} == {a.id, b.id}]
    bend = (pair.index(edge) - (len(pair) - 1) / 2) * PARALLEL_GAP
    length = math.dist((a.x, a.y), (b.x, b.y))
    # a straight line would cross the nodes in between: around a column, or across several
    if a.depth == b.depth:
        bend += column / 2 + 24
    elif abs(a.depth - b.depth) > 1:
        bend += 0.2 * length
    if edge.source != pair[0].source:
        bend = -bend  # the perpendicular flips with the direction; keep the shared side
    ux, uy = (b.x - a.x) / length, (b.y - a.y) / length
    # a quadratic curve's middle is half-way to its control point: 2 * bend puts it at bend
    control = ((a.x + b.x) / 2 - uy * 2 * bend, (a.y + b.y) / 2 + ux * 2 * bend)
    return [_box_exit(a, control), control, _box_exit(b, control, gap=2)]


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
            if not any(_overlap(label_rect(tool, spot), rect) for rect in taken)
        )
        label_at = next(free, spots[0])
        labels.append(label_at)
        if tool:
            taken.append(label_rect(tool, label_at))
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
