// TimelineView: a lane per agent; agent-state spans; marks for messages, tools, context
// changes, errors and where an agent's context and its model's conversation parted (and
// met again); handoff arrows, each with the new agent's bring-up band (from the arrow to its
// first words: speaking starts). Events arrive in batches ("msg:custom"); only the
// visible time window is drawn, and marks closer than a pixel or two are merged, so a long
// trace stays responsive.

const LANE_H = 48;
const LABEL_W = 120;
const AXIS_H = 22;
const MARK_KINDS = [
  "user_message", "agent_message", "tool_call", "tool_output", "context_changed", "error",
  "context_diverged", "context_converged",
];
const SVG_NS = "http://www.w3.org/2000/svg";

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function niceStep(span, pixels) {
  const target = (span / pixels) * 90; // about one tick per 90 px
  const steps = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
  return steps.find((s) => s >= target) ?? steps[steps.length - 1];
}

// first index i in the sorted array with key(arr[i]) >= value
function lowerBound(arr, value, key) {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (key(arr[mid]) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class Timeline {
  constructor() {
    this.reset();
  }

  reset() {
    this.events = []; // drawn events (marks and handoffs), in time order
    this.bySeq = new Map();
    this.lanes = [];
    this.laneIndex = new Map();
    this.spans = []; // per lane: [{start, end, state}], end null while open
    this.open = null; // {lane, span}
    this.bringUps = []; // [{lane, start, end, handoff}], in time order
    this.arriving = null; // the last handoff, until its new agent's first words
    this.state = "initializing";
    this.lastT = 0;
  }

  lane(name) {
    if (!this.laneIndex.has(name)) {
      this.laneIndex.set(name, this.lanes.length);
      this.lanes.push(name);
      this.spans.push([]);
    }
    return this.laneIndex.get(name);
  }

  startSpan(laneName, t) {
    if (this.open) this.open.span.end = t;
    const lane = this.lane(laneName);
    const span = { start: t, end: null, state: this.state };
    this.spans[lane].push(span);
    this.open = { lane, span };
  }

  add(event) {
    if (this.bySeq.has(event.seq)) return;
    this.bySeq.set(event.seq, event);
    this.lastT = Math.max(this.lastT, event.t);
    if (event.agent) this.lane(event.agent);
    const arriving = this.arriving;
    if (arriving && event.agent === arriving.data.to && firstWords(event)) {
      this.bringUps.push({ lane: this.lane(event.agent), start: arriving.t, end: event.t, handoff: arriving });
      this.arriving = null;
    }
    if (event.kind === "agent_state") {
      this.state = event.data.new;
      this.startSpan(event.agent || (this.open && this.lanes[this.open.lane]) || "?", event.t);
      return;
    }
    if (event.kind === "handoff" && event.data.to) {
      this.startSpan(event.data.to, event.t);
      this.arriving = null;
      if (!event.data.from) return; // the first agent starting: no arrow
      this.lane(event.data.from);
      this.arriving = event;
    }
    if (event.kind === "closed") {
      if (this.open) this.open.span.end = event.t;
      this.open = null;
      this.arriving = null;
    }
    if (event.kind === "handoff" || MARK_KINDS.includes(event.kind)) this.events.push(event);
  }
}

function describe(event) {
  const lines = [`${event.kind.replace("_", " ")} · ${event.agent ?? "-"} · ${event.t.toFixed(3)} s`];
  for (const [key, value] of Object.entries(event.data)) {
    if (value === null || value === undefined || value === "") continue;
    if (Array.isArray(value) && value.length === 0) continue; // nothing missing, say nothing
    lines.push(`${key}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
  }
  return lines.join("\n");
}

// an agent's first words: it starts speaking, or (no state seen) its first message is in
function firstWords(event) {
  return (event.kind === "agent_state" && event.data.new === "speaking") || event.kind === "agent_message";
}

function milliseconds(seconds) {
  const ms = seconds * 1000;
  return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
}

function describeBringUp(bringUp) {
  const how = [bringUp.handoff.data.session, bringUp.handoff.data.context].filter(Boolean).join(" · ");
  return `bring-up · ${bringUp.handoff.data.to}\nhandoff → first words: ${milliseconds(bringUp.end - bringUp.start)}${how ? `\n${how}` : ""}`;
}

function markShape(event, x, y) {
  const attrs = `class="na-mark na-mark-${event.kind}${extraClass(event)}" data-seq="${event.seq}"`;
  switch (event.kind) {
    case "user_message":
    case "agent_message":
      return `<circle ${attrs} cx="${x}" cy="${y}" r="5"/>`;
    case "tool_call":
    case "tool_output":
      return `<rect ${attrs} x="${x - 4.5}" y="${y - 4.5}" width="9" height="9"/>`;
    case "context_changed":
      return `<path ${attrs} d="M${x},${y - 6}L${x + 6},${y + 5}L${x - 6},${y + 5}Z"/>`;
    case "context_diverged":
    case "context_converged":
      return `<path ${attrs} d="M${x},${y - 6}L${x + 6},${y}L${x},${y + 6}L${x - 6},${y}Z"/>`;
    default:
      return `<path ${attrs} d="M${x - 5},${y - 5}L${x + 5},${y + 5}M${x + 5},${y - 5}L${x - 5},${y + 5}"/>`;
  }
}

function extraClass(event) {
  if (event.kind === "agent_message" && event.data.phase === "on_enter") return " na-on-enter";
  if (event.kind === "tool_output" && event.data.is_error) return " na-failed";
  return "";
}

function render({ model, el }) {
  const timeline = new Timeline();
  const root = document.createElement("div");
  root.className = "na-timeline";
  root.innerHTML = `
    <div class="na-toolbar">
      <button class="na-fit" title="show the whole trace">fit</button>
      <button class="na-follow" title="keep the live edge in view">follow</button>
      <span class="na-count"></span>
      <span class="na-legend">
        <i class="na-key na-key-user_message"></i>user
        <i class="na-key na-key-agent_message"></i>agent
        <i class="na-key na-key-on_enter"></i>on_enter
        <i class="na-key na-key-tool_call"></i>tool
        <i class="na-key na-key-context_changed"></i>context
        <i class="na-key na-key-error"></i>error
        <i class="na-key na-key-context_diverged"></i>model apart
        <i class="na-key na-key-bringup"></i>bring-up
      </span>
    </div>
    <div class="na-plot"><svg class="na-timeline-svg" xmlns="${SVG_NS}"></svg><div class="na-tooltip" hidden></div></div>
    <div class="na-scrub"><input class="na-scrubber" type="range" min="0" max="1" step="0.001" value="0"><span class="na-scrub-time">scrub to see each agent's context</span></div>
    <div class="na-contexts"></div>`;
  el.append(root);
  const svg = root.querySelector("svg");
  const plot = root.querySelector(".na-plot");
  const tooltip = root.querySelector(".na-tooltip");
  const scrubber = root.querySelector(".na-scrubber");
  const scrubTime = root.querySelector(".na-scrub-time");
  const followButton = root.querySelector(".na-follow");

  let view = null; // [t0, t1] seconds; null: fit everything
  let follow = true;
  let scrubT = null;
  let frame = 0;
  let pointerInside = false; // the clock holds still under the pointer, so a mark can be hovered

  const now = () => Date.now() / 1000 - model.get("started_at");
  const end = () => (model.get("live") ? Math.max(now(), timeline.lastT) : timeline.lastT);

  function window_() {
    const e = Math.max(end(), 0.001);
    if (view === null) return [0, e * 1.02];
    if (follow) {
      const width = view[1] - view[0];
      return [e + width * 0.02 - width, e + width * 0.02];
    }
    return view;
  }

  function draw() {
    frame = 0;
    const started = performance.now();
    const width = Math.max(plot.clientWidth, 300);
    const plotW = width - LABEL_W - 10;
    const height = timeline.lanes.length * LANE_H + AXIS_H;
    const [t0, t1] = window_();
    const scale = plotW / (t1 - t0);
    const x = (t) => LABEL_W + (t - t0) * scale;
    const liveEnd = end();
    const parts = [];

    timeline.lanes.forEach((name, lane) => {
      const y = lane * LANE_H;
      parts.push(`<g class="na-lane" data-agent="${escape(name)}"><rect class="na-lane-bg" x="0" y="${y}" width="${width}" height="${LANE_H}"/>`);
      parts.push(`<text class="na-lane-label" x="8" y="${y + LANE_H / 2 + 4}">${escape(name)}</text></g>`);
      const spans = timeline.spans[lane];
      let drawnTo = -Infinity;
      for (let i = lowerBound(spans, t0, (s) => s.end ?? liveEnd); i < spans.length; i++) {
        const span = spans[i];
        if (span.start > t1) break;
        const x0 = Math.max(x(span.start), LABEL_W);
        const x1 = Math.min(x(span.end ?? liveEnd), width);
        if (x1 < drawnTo + 1) continue; // under a pixel past the previous span: merged
        drawnTo = x1;
        parts.push(`<rect class="na-span" data-state="${escape(span.state)}" x="${x0}" y="${y + 31}" width="${Math.max(x1 - x0, 1)}" height="13"/>`);
        if (x1 - x0 > 70) parts.push(`<text class="na-span-label" x="${x0 + 4}" y="${y + 41}">${escape(span.state)}</text>`);
      }
    });

    // bring-ups under the marks: few (one per handoff) and short, so a plain scan will do
    timeline.bringUps.forEach((bringUp, i) => {
      if (bringUp.end < t0 || bringUp.start > t1) return;
      const x0 = Math.max(x(bringUp.start), LABEL_W);
      const x1 = Math.min(x(bringUp.end), width);
      const y = bringUp.lane * LANE_H;
      const took = milliseconds(bringUp.end - bringUp.start);
      parts.push(`<g class="na-bringup" data-bringup="${i}" role="img" aria-label="${escape(bringUp.handoff.data.to)} bring-up: ${took}"><rect x="${x0}" y="${y + 2}" width="${Math.max(x1 - x0, 1)}" height="27"/>`);
      if (x1 - x0 > 44) parts.push(`<text class="na-bringup-label" x="${x0 + 3}" y="${y + 12}">${took}</text>`);
      parts.push("</g>");
    });

    const events = timeline.events;
    const lastX = new Map();
    const first = lowerBound(events, t0, (e) => e.t);
    for (let i = first; i < events.length && events[i].t <= t1; i++) {
      const event = events[i];
      const ex = x(event.t);
      if (event.kind === "handoff") {
        const from = timeline.laneIndex.get(event.data.from);
        const to = timeline.laneIndex.get(event.data.to);
        const y0 = from * LANE_H + LANE_H / 2;
        const y1 = to * LANE_H + LANE_H / 2 + (to > from ? -8 : 8);
        const label = [event.data.session, event.data.context].filter(Boolean).join(" · ");
        parts.push(`<g class="na-handoff" data-seq="${event.seq}"><line x1="${ex}" y1="${y0}" x2="${ex}" y2="${y1}" marker-end="url(#na-arrow)"/>`);
        parts.push(`<text class="na-handoff-label" x="${ex + 5}" y="${(y0 + y1) / 2 + 4}">${escape(label)}</text></g>`);
        continue;
      }
      const lane = timeline.laneIndex.get(event.agent);
      if (lane === undefined) continue;
      const key = `${lane}:${event.kind}`;
      if (ex - (lastX.get(key) ?? -Infinity) < 2) continue; // same spot as the last one drawn
      lastX.set(key, ex);
      const row = event.kind.endsWith("message") ? 10 : 22; // messages above, the rest below
      parts.push(markShape(event, ex, lane * LANE_H + row));
    }

    const axisY = timeline.lanes.length * LANE_H;
    const step = niceStep(t1 - t0, plotW);
    const digits = step < 0.01 ? 3 : step < 0.1 ? 2 : step < 1 ? 1 : 0;
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      parts.push(`<line class="na-tick" x1="${x(t)}" y1="0" x2="${x(t)}" y2="${axisY + 4}"/><text class="na-tick-label" x="${x(t)}" y="${axisY + 16}">${t.toFixed(digits)} s</text>`);
    }
    if (scrubT !== null && scrubT >= t0 && scrubT <= t1) {
      parts.push(`<line class="na-cursor" x1="${x(scrubT)}" y1="0" x2="${x(scrubT)}" y2="${axisY}"/>`);
    }
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.innerHTML = `<defs><marker id="na-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10Z"/></marker></defs>${parts.join("")}`;
    root.querySelector(".na-count").textContent = `${timeline.bySeq.size} events`;
    followButton.classList.toggle("na-active", follow);
    // rounded up to the slider's step: the far end must include the last event
    scrubber.max = String(Math.ceil(Math.max(liveEnd, 0.001) * 1000) / 1000);
    root.dataset.renderMs = (performance.now() - started).toFixed(2);
  }

  const redraw = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };

  function onMessage(msg) {
    if (msg.type !== "events") return;
    if (msg.reset) timeline.reset();
    for (const event of msg.events) timeline.add(event);
    redraw();
  }

  // an item the python side marked (missing, extra or moved) says so on hover
  const MARK_TITLES = { missing: "missing from the model's side", extra: "only on the model's side", moved: "out of order" };

  function contextColumn(title, items, agent, model) {
    const column = document.createElement("div");
    column.className = model ? "na-context na-context-model" : "na-context";
    column.dataset.agent = agent;
    const heading = document.createElement("div");
    heading.className = "na-context-title";
    heading.textContent = `${title} (${items.length})`;
    column.append(heading);
    for (const item of items) {
      const row = document.createElement("div");
      row.className = `na-item na-item-${item.type}${item.mark ? ` na-item-marked na-item-${item.mark}` : ""}`;
      const who = item.type === "message" ? item.role : item.type === "function_call" ? `call ${item.name}` : `output ${item.name || "?"}`;
      row.textContent = `${who}: ${item.text}`;
      if (item.mark) row.title = MARK_TITLES[item.mark] ?? item.mark;
      column.append(row);
    }
    return column;
  }

  function showContexts() {
    const contexts = model.get("scrub_contexts") || {};
    const models = model.get("scrub_models") || {};
    const box = root.querySelector(".na-contexts");
    box.innerHTML = "";
    for (const [agent, items] of Object.entries(contexts)) {
      box.append(contextColumn(agent, items, agent, false));
      const apart = models[agent];
      if (apart) box.append(contextColumn(apart.title, apart.items, agent, true));
    }
  }

  // zoom around the pointer, drag to pan; either stops following the live edge
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const [t0, t1] = window_();
    const rect = svg.getBoundingClientRect();
    const plotW = rect.width - LABEL_W - 10;
    const at = t0 + ((event.clientX - rect.left - LABEL_W) / plotW) * (t1 - t0);
    const factor = Math.exp(event.deltaY * 0.002);
    const width = Math.min(Math.max((t1 - t0) * factor, 0.002), Math.max(end() * 1.5, 1));
    // while following, the live edge stays put and only the width changes
    const left = follow ? t1 - width : at - (at - t0) * (width / (t1 - t0));
    view = [left, left + width];
    redraw();
  }, { passive: false });

  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    drag = { x: event.clientX, window: window_() };
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener("pointermove", (event) => {
    if (drag) {
      const [t0, t1] = drag.window;
      const plotW = svg.getBoundingClientRect().width - LABEL_W - 10;
      const shift = ((drag.x - event.clientX) / plotW) * (t1 - t0);
      if (Math.abs(drag.x - event.clientX) > 2) {
        view = [t0 + shift, t1 + shift];
        follow = false;
        redraw();
      }
      return;
    }
    const target = event.target.closest("[data-seq], [data-bringup]");
    const marked = target?.dataset.seq !== undefined && timeline.bySeq.get(Number(target.dataset.seq));
    const bringUp = target?.dataset.bringup !== undefined && timeline.bringUps[Number(target.dataset.bringup)];
    if (!marked && !bringUp) {
      tooltip.hidden = true;
      return;
    }
    const box = plot.getBoundingClientRect();
    tooltip.textContent = marked ? describe(marked) : describeBringUp(bringUp);
    tooltip.hidden = false;
    // beside the pointer, on whichever side it fits
    const x = event.clientX - box.left;
    const left = x + 12 + tooltip.offsetWidth > box.width ? x - 12 - tooltip.offsetWidth : x + 12;
    tooltip.style.left = `${Math.max(left, 0)}px`;
    tooltip.style.top = `${event.clientY - box.top + 12}px`;
  });
  svg.addEventListener("pointerup", () => {
    drag = null;
  });
  svg.addEventListener("pointerenter", () => {
    pointerInside = true;
  });
  svg.addEventListener("pointerleave", () => {
    pointerInside = false;
    tooltip.hidden = true;
    redraw();
  });
  root.querySelector(".na-fit").addEventListener("click", () => {
    view = null;
    follow = true;
    redraw();
  });
  followButton.addEventListener("click", () => {
    follow = !follow;
    redraw();
  });
  scrubber.addEventListener("input", () => {
    scrubT = Number(scrubber.value);
    scrubTime.textContent = `${scrubT.toFixed(3)} s`;
    model.set("scrub_t", scrubT);
    model.save_changes();
    redraw();
  });

  model.on("msg:custom", onMessage);
  model.on("change:live", redraw);
  model.on("change:scrub_contexts", showContexts);
  model.on("change:scrub_models", showContexts);
  const resize = new ResizeObserver(redraw);
  resize.observe(plot);
  // the open span grows with the clock while the session is live, followed and not hovered
  const timer = setInterval(() => {
    if (model.get("live") && follow && !pointerInside) redraw();
  }, 250);
  model.send({ type: "history" });
  showContexts();
  redraw();
  return () => {
    clearInterval(timer);
    resize.disconnect();
    if (frame) cancelAnimationFrame(frame);
    model.off("msg:custom", onMessage);
    model.off("change:live", redraw);
    model.off("change:scrub_contexts", showContexts);
    model.off("change:scrub_models", showContexts);
  };
}

export default { render };
