// AgentGraphView: agents as boxes, handoff tools as arrows, the current agent filled.
// The layout is the one AgentGraphView.to_figure() draws (notebook_agents/views/graph_view.py):
// columns by breadth-first depth from the first agent, parallel edges bent apart.

const SVG = "http://www.w3.org/2000/svg";
const NODE_H = 36;
const NODE_MIN_W = 90;
const NODE_CHAR_W = 7.5; // an estimate, not a measurement: the Python figure uses the same
const TOOL_CHAR_W = 6.6;
const ROW = 84;
const MARGIN = 16; // space around everything drawn: nodes, curves and tool names
const PARALLEL_GAP = 44; // how far apart A->B and B->A bulge, so they never overlap
const UNKNOWN = "?";

let instances = 0; // marker ids must be unique across every view in the page

function svg(tag, attributes = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, String(value));
  return el;
}

function layout(nodes, edges) {
  const ids = nodes.map((n) => n.id);
  const depth = new Map();
  for (const root of ids) {
    if (depth.has(root)) continue;
    depth.set(root, 0);
    const queue = [root];
    while (queue.length) {
      const node = queue.shift();
      for (const edge of edges) {
        if (edge.source === node && !depth.has(edge.target)) {
          depth.set(edge.target, depth.get(node) + 1);
          queue.push(edge.target);
        }
      }
    }
  }
  const layers = new Map();
  for (const id of ids) {
    if (!layers.has(depth.get(id))) layers.set(depth.get(id), []);
    layers.get(depth.get(id)).push(id);
  }
  const tallest = Math.max(...[...layers.values()].map((layer) => layer.length));
  const widths = new Map(
    nodes.map((n) => [n.id, Math.max(NODE_MIN_W, n.label.length * NODE_CHAR_W + 28)]),
  );
  const column = Math.max(...widths.values());
  const longestTool = Math.max(0, ...edges.map((e) => e.tool.length));
  const gap = Math.max(120, longestTool * TOOL_CHAR_W + 48);
  const boxes = new Map();
  for (const [layerDepth, layer] of layers) {
    layer.forEach((id, row) => {
      boxes.set(id, {
        id,
        label: nodes.find((n) => n.id === id).label,
        x: column / 2 + layerDepth * (column + gap),
        y: NODE_H / 2 + (row + (tallest - layer.length) / 2) * ROW,
        width: widths.get(id),
        depth: layerDepth,
      });
    });
  }
  const drawn = edges.filter((e) => boxes.has(e.source) && boxes.has(e.target));
  const paths = drawn.map((e) => path(e, boxes, drawn, column));
  const labels = placeLabels(drawn.map((e) => e.tool), paths, [...boxes.values()]);
  const routes = drawn.map((edge, i) => ({ edge, points: paths[i], labelAt: labels[i] }));
  const ordered = ids.map((id) => boxes.get(id));
  const [left, top, right, bottom] = bounds(ordered, routes);
  return {
    nodes: ordered,
    edges: routes,
    left: left - MARGIN,
    top: top - MARGIN,
    width: right - left + 2 * MARGIN,
    height: bottom - top + 2 * MARGIN,
  };
}

// left, top, right, bottom of the boxes, the curves' ends and middles, the tool names
function bounds(boxes, routes) {
  const xs = [];
  const ys = [];
  for (const box of boxes) {
    xs.push(box.x - box.width / 2, box.x + box.width / 2);
    ys.push(box.y - NODE_H / 2, box.y + NODE_H / 2);
  }
  for (const { edge, points, labelAt } of routes) {
    const first = points[0];
    const last = points[points.length - 1];
    const middle = along(points, 0.5);
    const [left, top, right, bottom] = labelRect(edge.tool, labelAt);
    xs.push(first[0], last[0], middle[0], left, right);
    ys.push(first[1], last[1], middle[1], top, bottom);
  }
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

function pathData(points) {
  const [first, ...rest] = points.map(([x, y]) => `${x} ${y}`);
  return `M ${first} ${rest.length === 2 ? "Q" : "C"} ${rest.join(" ")}`;
}

function boxExit(box, toward, gap = 0) {
  const dx = toward[0] - box.x;
  const dy = toward[1] - box.y;
  const length = Math.hypot(dx, dy) || 1;
  const ux = dx / length;
  const uy = dy / length;
  const reach = Math.min(
    ux ? box.width / 2 / Math.abs(ux) : Infinity,
    uy ? NODE_H / 2 / Math.abs(uy) : Infinity,
  );
  return [box.x + ux * (reach + gap), box.y + uy * (reach + gap)];
}

// a loop (cubic) over the top of its node, or a quadratic curve from box to box
function path(edge, boxes, edges, column) {
  const a = boxes.get(edge.source);
  const b = boxes.get(edge.target);
  if (a === b) {
    // bigger for each further loop on the same node
    const loops = edges.filter((e) => e.source === a.id && e.target === a.id);
    const lift = 44 + 18 * loops.indexOf(edge);
    const top = a.y - NODE_H / 2;
    return [
      [a.x - 10, top],
      [a.x - 34, top - lift],
      [a.x + 34, top - lift],
      [a.x + 10, top],
    ];
  }
  // edges between the same two nodes, either way, share a frame: the first one's direction
  const pair = edges.filter(
    (e) => (e.source === a.id && e.target === b.id) || (e.source === b.id && e.target === a.id),
  );
  let bend = (pair.indexOf(edge) - (pair.length - 1) / 2) * PARALLEL_GAP;
  const length = Math.hypot(b.x - a.x, b.y - a.y);
  // a straight line would cross the nodes in between: around a column, or across several
  if (a.depth === b.depth) bend += column / 2 + 24;
  else if (Math.abs(a.depth - b.depth) > 1) bend += 0.2 * length;
  if (edge.source !== pair[0].source) bend = -bend; // the perpendicular flips with the direction
  const ux = (b.x - a.x) / length;
  const uy = (b.y - a.y) / length;
  // a quadratic curve's middle is half-way to its control point: 2 * bend puts it at bend
  const control = [(a.x + b.x) / 2 - uy * 2 * bend, (a.y + b.y) / 2 + ux * 2 * bend];
  return [boxExit(a, control), control, boxExit(b, control, 2)];
}

// where along its curve a tool name may go, in order of preference: past the middle first,
// where edges fanning out of one agent have spread apart
const LABEL_SPOTS = [0.6, 0.45, 0.75, 0.3];

// each tool name at the first spot along its curve that covers no node and no name placed
// before it (else at the preferred spot): greedy, in edge order
function placeLabels(tools, paths, boxes) {
  const taken = boxes.map((b) => [
    b.x - b.width / 2,
    b.y - NODE_H / 2,
    b.x + b.width / 2,
    b.y + NODE_H / 2,
  ]);
  return tools.map((tool, i) => {
    const points = paths[i];
    const spots =
      points.length === 4
        ? [[points[0][0] + 10, points[1][1] + 6]] // on a loop, on its top
        : LABEL_SPOTS.map((t) => along(points, t));
    const free = spots.find((spot) => !taken.some((rect) => overlap(labelRect(tool, spot), rect)));
    const labelAt = free || spots[0];
    if (tool) taken.push(labelRect(tool, labelAt));
    return labelAt;
  });
}

// the point at t (0 to 1) along a quadratic or cubic Bézier curve
function along(points, t) {
  const u = 1 - t;
  const weights =
    points.length === 3
      ? [u * u, 2 * u * t, t * t]
      : [u ** 3, 3 * u * u * t, 3 * u * t * t, t ** 3];
  return [0, 1].map((axis) => weights.reduce((sum, w, i) => sum + w * points[i][axis], 0));
}

function labelRect(tool, at) {
  const half = (tool.length * TOOL_CHAR_W) / 2 + 3;
  return [at[0] - half, at[1] - 8, at[0] + half, at[1] + 8];
}

function overlap(a, b) {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

function arrowMarker(id, className) {
  const marker = svg("marker", {
    id,
    viewBox: "0 0 10 10",
    refX: 9,
    refY: 5,
    markerWidth: 8,
    markerHeight: 8,
    orient: "auto-start-reverse",
  });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: className }));
  return marker;
}

function render({ model, el }) {
  const uid = `na-graph-${++instances}-${Math.random().toString(36).slice(2, 8)}`;
  const root = svg("svg", { class: "na-graph", role: "img", "aria-label": "agent handoff graph" });
  el.append(root);

  function draw() {
    const nodes = model.get("nodes");
    const edges = model.get("edges");
    root.replaceChildren();
    if (!nodes.length) {
      root.setAttribute("viewBox", "0 0 240 48");
      root.setAttribute("width", 240);
      root.setAttribute("height", 48);
      const empty = svg("text", { class: "na-graph-empty", x: 12, y: 28 });
      empty.textContent = "no agents yet";
      root.append(empty);
      return;
    }
    const graph = layout(nodes, edges);
    root.setAttribute("viewBox", `${graph.left} ${graph.top} ${graph.width} ${graph.height}`);
    root.setAttribute("width", graph.width);
    root.setAttribute("height", graph.height);
    const defs = svg("defs");
    defs.append(arrowMarker(`${uid}-arrow`, "na-edge-arrow"));
    defs.append(arrowMarker(`${uid}-arrow-observed`, "na-edge-arrow na-edge-arrow-observed"));
    root.append(defs);

    const labelled = [];
    for (const { edge, points, labelAt } of graph.edges) {
      const g = svg("g", {
        class: edge.observed ? "na-edge na-edge-observed" : "na-edge",
        "data-source": edge.source,
        "data-target": edge.target,
        "data-tool": edge.tool,
      });
      const title = svg("title");
      const seen = edge.observed ? " (observed live)" : "";
      title.textContent = `${edge.tool || "handoff"}: ${edge.source} → ${edge.target}${seen}`;
      const marker = edge.observed ? `${uid}-arrow-observed` : `${uid}-arrow`;
      const line = svg("path", { d: pathData(points), "marker-end": `url(#${marker})` });
      g.append(title, line);
      if (edge.tool) {
        const [x, y] = labelAt;
        const label = svg("text", { class: "na-edge-label", x, y, dy: "0.35em" });
        label.textContent = edge.tool;
        g.append(label);
        labelled.push([g, label, labelAt]);
      }
      root.append(g);
    }
    // a white box behind each tool name keeps it readable over the arrows (a text halo lets
    // the line show between glyphs). Its width is measured once drawn (else the layout's
    // estimate), all before any box is inserted: one layout pass, not one per label.
    const widths = labelled.map(
      ([, label]) => label.getComputedTextLength() || label.textContent.length * TOOL_CHAR_W,
    );
    labelled.forEach(([g, label, labelAt], i) => {
      const width = widths[i] + 6;
      const backdrop = svg("rect", {
        class: "na-edge-backdrop",
        x: labelAt[0] - width / 2,
        y: labelAt[1] - 8,
        width,
        height: 16,
        rx: 3,
      });
      g.insertBefore(backdrop, label);
    });
    for (const box of graph.nodes) {
      const g = svg("g", {
        class: box.id === UNKNOWN ? "na-node na-node-unknown" : "na-node",
        "data-id": box.id,
      });
      const title = svg("title");
      title.textContent =
        box.id === UNKNOWN ? "a target not known until a handoff shows it" : box.label;
      const rect = svg("rect", {
        x: box.x - box.width / 2,
        y: box.y - NODE_H / 2,
        width: box.width,
        height: NODE_H,
        rx: 8,
      });
      const text = svg("text", { x: box.x, y: box.y, dy: "0.35em" });
      text.textContent = box.label;
      g.append(title, rect, text);
      root.append(g);
    }
    highlight();
  }

  function highlight() {
    const current = model.get("current");
    for (const node of root.querySelectorAll(".na-node")) {
      node.classList.toggle("na-current", node.dataset.id === current);
    }
  }

  // one kernel flush changes nodes, edges and current together: draw once for all three
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      draw();
    });
  }

  draw();
  model.on("change:nodes", redraw);
  model.on("change:edges", redraw);
  model.on("change:current", highlight);
  return () => {
    model.off("change:nodes", redraw);
    model.off("change:edges", redraw);
    model.off("change:current", highlight);
  };
}

export { layout }; // for tests: the figure's layout must be the same
export default { render };
