// AgentGraphView: agents as boxes, handoff tools as arrows, the current agent filled.
// The kernel lays the graph out (notebook_agents/views/_graph_layout.py) and sends boxes,
// curves, label positions, titles and colours; this only draws them.

const SVG = "http://www.w3.org/2000/svg";

let instances = 0; // marker ids must be unique across every view in the page

function svg(tag, attributes = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, String(value));
  return el;
}

function titled(el, text) {
  const title = svg("title");
  title.textContent = text;
  el.append(title);
  return el;
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

  function paint() {
    for (const [name, color] of Object.entries(model.get("colors"))) {
      root.style.setProperty(`--na-graph-${name}`, color);
    }
  }

  function draw() {
    const nodes = model.get("nodes");
    root.replaceChildren();
    if (!nodes.length) {
      root.setAttribute("viewBox", "0 0 240 48");
      root.setAttribute("width", 240);
      root.setAttribute("height", 48);
      const empty = svg("text", { class: "na-graph-empty", x: 12, y: 28 });
      empty.textContent = model.get("note");
      root.append(empty);
      return;
    }
    const [left, top, width, height] = model.get("view_box");
    root.setAttribute("viewBox", `${left} ${top} ${width} ${height}`);
    root.setAttribute("width", width);
    root.setAttribute("height", height);
    const defs = svg("defs");
    defs.append(arrowMarker(`${uid}-arrow`, "na-edge-arrow"));
    defs.append(arrowMarker(`${uid}-arrow-observed`, "na-edge-arrow na-edge-arrow-observed"));
    root.append(defs);

    const labelled = [];
    for (const edge of model.get("edges")) {
      const g = titled(
        svg("g", {
          class: edge.observed ? "na-edge na-edge-observed" : "na-edge",
          "data-source": edge.source,
          "data-target": edge.target,
          "data-tool": edge.tool,
        }),
        edge.title,
      );
      const marker = edge.observed ? `${uid}-arrow-observed` : `${uid}-arrow`;
      g.append(svg("path", { d: edge.path, "marker-end": `url(#${marker})` }));
      if (edge.tool) {
        const [x, y] = edge.label_at;
        const label = svg("text", { class: "na-edge-label", x, y, dy: "0.35em" });
        label.textContent = edge.tool;
        g.append(label);
        labelled.push([g, label, edge]);
      }
      root.append(g);
    }
    // a box of the page's colour behind each tool name keeps it readable over the arrows (a
    // text halo lets the line show between glyphs), as wide as the name is drawn (the
    // kernel's estimate while not displayed): every width is read before any box is
    // inserted, one layout pass rather than one per label
    const widths = labelled.map(
      ([, label, edge]) => label.getComputedTextLength() || edge.label_width,
    );
    labelled.forEach(([g, label, edge], i) => {
      const [x, y] = edge.label_at;
      const backdrop = svg("rect", {
        class: "na-edge-backdrop",
        x: x - (widths[i] + 6) / 2,
        y: y - 8,
        width: widths[i] + 6,
        height: 16,
        rx: 3,
      });
      g.insertBefore(backdrop, label);
    });
    for (const box of nodes) {
      const g = titled(
        svg("g", { class: box.unknown ? "na-node na-node-unknown" : "na-node", "data-id": box.id }),
        box.title,
      );
      const rect = svg("rect", {
        x: box.x - box.width / 2,
        y: box.y - box.height / 2,
        width: box.width,
        height: box.height,
        rx: 8,
      });
      const text = svg("text", { x: box.x, y: box.y, dy: "0.35em" });
      text.textContent = box.label;
      g.append(rect, text);
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

  // one kernel flush changes the nodes, edges and frame together: draw once for all
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      draw();
    });
  }

  const drawn = ["change:nodes", "change:edges", "change:view_box", "change:note"];
  paint();
  draw();
  for (const event of drawn) model.on(event, redraw);
  model.on("change:current", highlight);
  model.on("change:colors", paint);
  return () => {
    for (const event of drawn) model.off(event, redraw);
    model.off("change:current", highlight);
    model.off("change:colors", paint);
  };
}

export default { render };
