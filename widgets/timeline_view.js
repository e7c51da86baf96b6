// TimelineView: draws what the kernel laid out (notebook_agents/views/_timeline_layout.py):
// lanes, agent-state spans, marks, handoff arrows with chips coloured by mode, bring-up bands,
// each handoff's phases (a strip of segments, from the "phases" trait), a race's marks (the
// "race_marks" trait: a chip naming what went wrong, a line through its lane at that moment),
// idle gaps and the legend, with their colours, labels and hover texts. Decided here is only
// where things go on screen: the time axis (each idle gap drawn a fixed width, the scale of
// the widest timeline sharing it where the kernel says so: "fit_extent"; a tick in every
// stretch between gaps, each gap's label under them), the row a handoff's or race mark's chip
// takes so none covers another, a mark or a handoff's arrow moved beside the one it would
// cover, and where a hover box fits inside the view. Records arrive in batches
// ("msg:custom"); only the visible time window is drawn, and a crowd of marks is merged, so a
// long trace stays responsive.

const LANE_H = 60;
const ROW_Y = [9, 21, 33]; // centre of each row of marks in a lane (the kernel's MarkStyle.row)
const MARK_W = 14; // a mark's room in its row, outline included, a pixel clear of the next
const DODGE_MAX = 3 * MARK_W; // the farthest a mark moves right of its time to be seen
const BAR_Y = 40; // the agent-state bar: its top and height in a lane
const BAR_H = 13;
const SPEECH_Y = 55; // the speech bar under it
const STRIP_Y = 1; // a handoff's phases: a thin strip at the top of the new agent's lane
const STRIP_H = 5;
const BRING_UP_LABEL_Y = 10; // a bring-up's label baseline in its lane; under a strip, lower
const HEAD_L = 9; // the handoff arrow's head: length and width
const HEAD_W = 9;
const ARROW_GAP = HEAD_W + 4; // the least room between two arrows that share a lane
const LABEL_W = 120;
const RIGHT_PAD = 10;
const THUMB = 12; // the scrubber's thumb: its centre runs over the plot's width exactly
const AXIS_H = 22; // the tick labels' row under the lanes
const GAP_ROW_H = 13; // each row of idle gaps' labels under it
const TICK_PAD = 6; // the least room between two tick labels, or two gaps' labels
const ROW_H = 18; // a row of handoff chips above the lanes
const CHIP_H = 14;
const CHIP_PAD = 4; // text to chip edge, and the least room between two chips in a row
const GAP_PX = 84; // an idle gap's width on screen while the whole trace is shown
const GAP_INSET = 10; // the gap's band keeps off the events on either side (a narrow one less)
const TIP_MARGIN = 4;
const SVG_NS = "http://www.w3.org/2000/svg";

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];

function niceStep(span, pixels) {
  const target = (span / pixels) * 90; // about one tick per 90 px
  return STEPS.find((s) => s >= target) ?? STEPS[STEPS.length - 1];
}

// the ticks of the stretch [s0, s1]: the multiples of `step` in it or, where it is too short
// to hold one, of the coarsest finer step that has one, so each stretch gets its time
function stretchTicks(s0, s1, step) {
  for (const every of [step, ...STEPS.filter((s) => s < step).reverse()]) {
    const found = [];
    for (let k = Math.ceil(s0 / every - 1e-9); k * every <= s1 + 1e-9; k++) found.push(k * every);
    if (found.length) {
      const digits = every < 0.01 ? 3 : every < 0.1 ? 2 : every < 1 ? 1 : 0;
      return found.map((t) => ({ t, label: `${t.toFixed(digits)} s` }));
    }
  }
  return [];
}

// whether [left, right] keeps `pad` clear of every extent in `taken`
function clear(taken, left, right, pad) {
  return taken.every(([a, b]) => right + pad <= a || left >= b + pad);
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

// what the kernel sent, kept as sent
class Store {
  constructor() {
    this.reset();
  }

  reset() {
    this.seen = new Set();
    this.marks = []; // {seq, t, lane, style, detail}, in time order
    this.handoffs = []; // {seq, t, from, to, mode, label, color, ink, detail}, in time order
    this.bringUps = []; // {lane, start, end, label, color, name, detail}, in time order
    this.spans = []; // per lane: closed spans {start, end, state, color, ink}, in time order
    this.open = null; // the open span {lane, start, state, color, ink, waiting}: to the live edge
    this.speech = new Map(); // id -> {lane, speaker, start, end, color, detail}; words come later
  }

  add(record) {
    if (this.seen.has(record.seq)) return;
    this.seen.add(record.seq);
    if (record.span) {
      const [lane, start, end, state, color, ink] = record.span;
      while (this.spans.length <= lane) this.spans.push([]);
      this.spans[lane].push({ start, end, state, color, ink });
    }
    if ("open" in record) {
      const open = record.open;
      this.open = open && { lane: open[0], start: open[1], state: open[2], color: open[3], ink: open[4], waiting: open[5] };
    }
    if (record.mark) {
      const [lane, style, detail] = record.mark;
      this.marks.push({ seq: record.seq, t: record.t, lane, style, detail });
    }
    if (record.handoff) this.handoffs.push({ seq: record.seq, t: record.t, ...record.handoff });
    for (const speech of record.speech || []) this.speech.set(speech.id, speech);
    if (record.bring_up) this.bringUps.push(record.bring_up);
  }
}

// Trace time <-> axis units: each idle gap the kernel found is squeezed to `gapU` axis seconds,
// the rest keeps its length, so zooming and panning stay linear on the axis.
class Axis {
  constructor(gaps, gapU) {
    this.gaps = gaps;
    this.gapU = gapU;
  }

  u(t) {
    let shift = 0;
    for (const gap of this.gaps) {
      if (t <= gap.start) break;
      if (t < gap.end) return gap.start - shift + (this.gapU * (t - gap.start)) / (gap.end - gap.start);
      shift += gap.end - gap.start - this.gapU;
    }
    return t - shift;
  }

  t(u) {
    let shift = 0;
    for (const gap of this.gaps) {
      const at = gap.start - shift;
      if (u <= at) break;
      if (u < at + this.gapU) return gap.start + ((u - at) / this.gapU) * (gap.end - gap.start);
      shift += gap.end - gap.start - this.gapU;
    }
    return u + shift;
  }

  // the stretches between the gaps that overlap [t0, t1]
  segments(t0, t1) {
    const edges = [t0];
    for (const gap of this.gaps) if (gap.end > t0 && gap.start < t1) edges.push(gap.start, gap.end);
    edges.push(t1);
    const found = [];
    for (let i = 0; i < edges.length; i += 2) if (edges[i + 1] > edges[i]) found.push([edges[i], edges[i + 1]]);
    return found;
  }
}

// for extents [start, end] sorted by start: each one's row, the lowest whose last extent ended
// before its start (as the figure's `rows`)
function rows(extents) {
  const ends = [];
  return extents.map(([start, end]) => {
    let row = ends.findIndex((before) => start >= before);
    if (row < 0) row = ends.push(end) - 1;
    ends[row] = end;
    return row;
  });
}

function markShape(shape, x, y, attrs) {
  switch (shape) {
    case "circle":
      return `<circle ${attrs} cx="${x}" cy="${y}" r="5"/>`;
    case "square":
      return `<rect ${attrs} x="${x - 4.5}" y="${y - 4.5}" width="9" height="9"/>`;
    case "triangle":
      return `<path ${attrs} d="M${x},${y - 6}L${x + 6},${y + 5}L${x - 6},${y + 5}Z"/>`;
    case "diamond":
      return `<path ${attrs} d="M${x},${y - 6}L${x + 6},${y}L${x},${y + 6}L${x - 6},${y}Z"/>`;
    default: // a cross
      return `<path ${attrs} d="M${x - 5},${y - 5}L${x + 5},${y + 5}M${x + 5},${y - 5}L${x - 5},${y + 5}"/>`;
  }
}

// a mark's class and colour attributes: filled in its style's colour, or outlined in it and
// filled with the page's colour (CSS, .na-hollow), or, a cross, only stroked
function paint(style) {
  if (style.shape === "cross") return ["na-cross", `stroke="${style.color}"`];
  return style.hollow ? ["na-hollow", `stroke="${style.color}"`] : ["", `fill="${style.color}"`];
}

function render({ model, el }) {
  const store = new Store();
  const root = document.createElement("div");
  root.className = "na-timeline";
  root.innerHTML = `
    <div class="na-toolbar">
      <button class="na-fit" title="show the whole trace">fit</button>
      <button class="na-follow" title="keep the live edge in view">follow</button>
      <span class="na-count"></span>
    </div>
    <div class="na-legend-box"><div class="na-legend"></div></div>
    <div class="na-plot"><svg class="na-timeline-svg" xmlns="${SVG_NS}"></svg></div>
    <div class="na-scrub"><span class="na-scrub-time">scrub ▸</span><input class="na-scrubber" type="range" min="0" max="1" step="any" value="0" title="scrub to see each agent's context at that moment" aria-label="scrub to a moment: each agent's context then"></div>
    <div class="na-contexts"></div>
    <div class="na-tooltip" hidden></div>`;
  root.style.setProperty("--na-thumb", `${THUMB}px`);
  el.append(root);
  const svg = root.querySelector("svg");
  const plot = root.querySelector(".na-plot");
  const tooltip = root.querySelector(".na-tooltip");
  const scrubber = root.querySelector(".na-scrubber");
  const scrubTime = root.querySelector(".na-scrub-time");
  const followButton = root.querySelector(".na-follow");

  let view = null; // {u0, u1, gapU}: a window the user zoomed or panned to; null: fit everything
  let follow = true;
  let scrubT = null;
  let frame = 0;
  let pointerInside = false; // the clock holds still under the pointer, so a mark can be hovered
  let tips = []; // the hover text of each element drawn with data-tip
  let shown = null; // the last drawn window: {u0, u1, axis, plotW, width}

  const measure = document.createElement("canvas").getContext("2d");
  const widths = new Map();
  function textWidth(text, size) {
    const key = `${size}:${text}`;
    if (!widths.has(key)) {
      measure.font = `${size}px ${getComputedStyle(root).fontFamily}`;
      widths.set(key, measure.measureText(text).width);
    }
    return widths.get(key);
  }

  const now = () => Date.now() / 1000 - model.get("started_at");
  const first = () => model.get("first_t") ?? 0;
  // the last event's time as the kernel says it, drawn or not: an idle gap can end at one
  const lastT = () => model.get("last_t") ?? first();
  const liveEnd = () => (model.get("live") ? Math.max(now(), lastT()) : lastT());
  // while live, the whole-trace view runs to the clock; waiting on the caller (the kernel
  // says when), at most the idle threshold past the last event: the activity keeps the width
  const fitEnd = () => {
    const waiting = !store.open || store.open.waiting;
    const end = waiting ? Math.min(liveEnd(), lastT() + model.get("idle_after")) : liveEnd();
    return Math.max(end, first() + 0.001);
  };

  // the whole trace fitted to `plotW`, each gap GAP_PX wide (at most half the width to gaps):
  // its activity and its gaps, or the widest of the timelines sharing its scale (the kernel's
  // "fit_extent"), whichever is more, so equal times are drawn equally long in each of them
  function fitted(plotW) {
    const gaps = model.get("gaps");
    const [start, end] = [first(), fitEnd()];
    const inside = gaps.filter((g) => g.end > start && g.start < end);
    const idle = inside.reduce((sum, g) => sum + Math.min(g.end, end) - Math.max(g.start, start), 0);
    const shared = model.get("fit_extent");
    const active = Math.max(end - start - idle, shared.active ?? 0, 1e-3);
    const count = Math.max(inside.length, shared.gaps ?? 0);
    const gapPx = count ? Math.min(GAP_PX, plotW / (2 * count)) : 0;
    const gapU = count ? (active * gapPx) / (plotW - count * gapPx) : 1;
    const axis = new Axis(gaps, gapU);
    const u0 = axis.u(start);
    const u1 = u0 + active + count * gapU;
    const pad = (u1 - u0) * 0.02;
    return { u0: u0 - pad, u1: u1 + pad, axis };
  }

  function window_(plotW) {
    if (view === null) return fitted(plotW);
    const gaps = model.get("gaps");
    const axis = new Axis(gaps, view.gapU);
    if (follow) {
      const width = view.u1 - view.u0;
      const edge = axis.u(liveEnd());
      return { u0: edge + width * 0.02 - width, u1: edge + width * 0.02, axis };
    }
    return { u0: view.u0, u1: view.u1, axis };
  }

  function draw() {
    frame = 0;
    // not laid out (a hidden panel, JupyterLab switching themes): the last drawing stands
    // until the ResizeObserver reports a width again
    if (!plot.clientWidth && shown) return;
    const started = performance.now();
    const lanes = model.get("lanes");
    const styles = model.get("mark_styles");
    const width = Math.max(plot.clientWidth, 300);
    const right = width - RIGHT_PAD;
    const plotW = right - LABEL_W;
    const { u0, u1, axis } = window_(plotW);
    const scale = plotW / (u1 - u0);
    const x = (t) => LABEL_W + (axis.u(t) - u0) * scale;
    const [t0, t1] = [axis.t(u0), axis.t(u1)];
    const end = liveEnd();
    tips = [];
    const tip = (text) => tips.push(text) - 1;
    // each handoff's phases once the kernel split them: they name the mode that happened
    const phases = new Map(model.get("phases").map((strip) => [strip.seq, strip]));
    const chipOf = (handoff) => phases.get(handoff.seq) ?? handoff;
    const handoffTip = (handoff) => {
      const strip = phases.get(handoff.seq);
      return strip ? `${handoff.detail}\n\n${strip.detail}` : handoff.detail;
    };

    // the handoffs in view, each arrow at its time or, where it would cover an arrow before
    // it that shares a lane, just right of that one (a crowd too dense for that stays at its
    // times); its chip, in the first row where it covers no other, leads to the arrow, and
    // its bring-up starts there. A chip at the right edge ends at its arrow
    const handoffs = store.handoffs.slice(lowerBound(store.handoffs, t0, (h) => h.t));
    const chips = [];
    const chipAt = (at, label, what) => {
      const w = textWidth(label, 10) + 2 * CHIP_PAD;
      const left = at + w > right ? at - w : at;
      chips.push({ ...what, at, left, w });
    };
    const arrows = []; // {at, lo, hi}: each arrow drawn, from its top lane to its bottom one
    const arrowAt = new Map(); // a handoff's seq -> where its arrow is drawn
    for (const handoff of handoffs) {
      if (handoff.t > t1) break;
      const [lo, hi] = [Math.min(handoff.from, handoff.to), Math.max(handoff.from, handoff.to)];
      let at = x(handoff.t);
      for (const arrow of arrows) {
        if (arrow.lo <= hi && lo <= arrow.hi && Math.abs(arrow.at - at) < ARROW_GAP) at = arrow.at + ARROW_GAP;
      }
      if (at - x(handoff.t) > DODGE_MAX) at = x(handoff.t);
      arrows.push({ at, lo, hi });
      arrowAt.set(handoff.seq, at);
      chipAt(at, chipOf(handoff).label, { handoff });
    }
    // a race's marks share the rows: its chip says what went wrong there
    for (const race of model.get("race_marks")) {
      if (race.t >= t0 && race.t <= t1) chipAt(x(race.t), race.label, { race });
    }
    const byLeft = [...chips].sort((a, b) => a.left - b.left); // drawn in time order all the same
    rows(byLeft.map((c) => [c.left, c.left + c.w + CHIP_PAD])).forEach((row, i) => (byLeft[i].row = row));
    const rowCount = chips.reduce((most, c) => Math.max(most, c.row + 1), 0);
    const top = rowCount ? rowCount * ROW_H + 4 : 0;
    const laneY = (lane) => top + lane * LANE_H;
    const axisY = laneY(lanes.length);
    const parts = [];

    lanes.forEach((name, lane) => {
      const y = laneY(lane);
      parts.push(`<g class="na-lane" data-agent="${escape(name)}"><rect class="na-lane-bg" x="0" y="${y}" width="${width}" height="${LANE_H}"/>`);
      parts.push(`<text class="na-lane-label" x="8" y="${y + LANE_H / 2 + 4}">${escape(name)}</text></g>`);
    });

    // ticks at round trace times in each stretch between gaps, one at least in each
    // (stretchTicks); each stretch's first label goes on first, then the others where they
    // leave room; none leaves the view
    const step = niceStep(u1 - u0, plotW);
    const ticks = axis.segments(t0, t1).flatMap(([s0, s1]) =>
      stretchTicks(s0, s1, step).map((tick, i) => ({ ...tick, at: x(tick.t), first: i === 0 })),
    );
    const labelled = [];
    for (const tick of [...ticks.filter((k) => k.first), ...ticks.filter((k) => !k.first)]) {
      const half = textWidth(tick.label, 10) / 2;
      if (tick.at - half < 0 || tick.at + half > width || !clear(labelled, tick.at - half, tick.at + half, TICK_PAD)) continue;
      labelled.push([tick.at - half, tick.at + half]);
      tick.shown = true;
    }
    for (const tick of ticks) {
      parts.push(`<line class="na-tick" x1="${tick.at}" y1="${top}" x2="${tick.at}" y2="${axisY + 4}"/>`);
      if (tick.shown) parts.push(`<text class="na-tick-label" x="${tick.at}" y="${axisY + 16}">${tick.label}</text>`);
    }
    // idle gaps: a band where time is shortened, under the spans that run through it, and
    // under the times how long nothing happened (the kernel's label), centred under the part
    // in view, in the first row where it covers no other label: every gap is named. When the
    // long labels would take more than two rows, each gap has its short one
    const shownGaps = model.get("gaps").filter((gap) => gap.end >= t0 && gap.start <= t1).map((gap) => {
      const [g0, g1] = [Math.max(x(gap.start), LABEL_W), Math.min(x(gap.end), right)];
      const inset = Math.min(GAP_INSET, (x(gap.end) - x(gap.start)) / 4);
      return { gap, g0, g1, x0: Math.max(x(gap.start) + inset, LABEL_W), x1: Math.min(x(gap.end) - inset, right) };
    });
    const labelRows = (key) => {
      const placed = shownGaps.map((shown) => {
        const text = shown.gap[key];
        const half = textWidth(text, 10) / 2;
        const at = Math.min(Math.max((shown.g0 + shown.g1) / 2, half), width - half);
        return { shown, text, at, left: at - half, right: at + half };
      });
      const byLeft = [...placed].sort((a, b) => a.left - b.left);
      rows(byLeft.map((p) => [p.left, p.right + TICK_PAD])).forEach((row, i) => (byLeft[i].row = row));
      return placed;
    };
    let gapLabels = labelRows("label");
    if (gapLabels.some((p) => p.row >= 2)) gapLabels = labelRows("short");
    const gapRows = gapLabels.reduce((most, p) => Math.max(most, p.row + 1), 0);
    for (const { shown, text, at, row } of gapLabels) {
      parts.push(`<g class="na-gap" data-tip="${tip(shown.gap.detail)}">`);
      if (shown.x1 > shown.x0) parts.push(`<rect class="na-gap-band" x="${shown.x0}" y="${top}" width="${shown.x1 - shown.x0}" height="${axisY - top}"/>`);
      parts.push(`<text class="na-gap-label" x="${at}" y="${axisY + 16 + GAP_ROW_H * (row + 1)}">${escape(text)}</text></g>`);
    }

    const drawSpan = (lane, span, spanEnd) => {
      const x0 = Math.max(x(span.start), LABEL_W);
      const x1 = Math.min(x(spanEnd), right);
      const y = laneY(lane);
      parts.push(`<rect class="na-span" data-state="${escape(span.state)}" fill="${span.color}" x="${x0}" y="${y + BAR_Y}" width="${Math.max(x1 - x0, 1)}" height="${BAR_H}"/>`);
      if (x1 - x0 > textWidth(span.state, 10) + 8) {
        parts.push(`<text class="na-span-label" fill="${span.ink}" x="${x0 + 4}" y="${y + BAR_Y + 10}">${escape(span.state)}</text>`);
      }
      return x1;
    };
    store.spans.forEach((spans, lane) => {
      let drawnTo = -Infinity;
      for (let i = lowerBound(spans, t0, (s) => s.end); i < spans.length; i++) {
        const span = spans[i];
        if (span.start > t1) break;
        if (x(span.end) < drawnTo + 1) continue; // under a pixel past the previous span: merged
        drawnTo = drawSpan(lane, span, span.end);
      }
    });
    if (store.open && store.open.start <= t1 && end >= t0) drawSpan(store.open.lane, store.open, end);

    // speech: a bar under the lane while the caller or the agent speaks, the words on hover
    for (const speech of store.speech.values()) {
      if (speech.end < t0 || speech.start > t1) continue;
      const x0 = Math.max(x(speech.start), LABEL_W);
      const x1 = Math.min(x(speech.end), right);
      parts.push(`<rect class="na-speech" data-speaker="${escape(speech.speaker)}" data-tip="${tip(speech.detail)}" fill="${speech.color}" x="${x0}" y="${laneY(speech.lane) + SPEECH_Y}" width="${Math.max(x1 - x0, 1)}" height="3"/>`);
    }

    // each handoff's phases: a segment per phase where the kernel's times put it, framed, the
    // phases on hover (the chip's hover adds them to the handoff's details)
    const strips = store.handoffs.filter((h) => phases.has(h.seq)).map((h) => [h, phases.get(h.seq)]);
    for (const [, strip] of strips) {
      if (strip.end < t0 || strip.start > t1) continue;
      const y = laneY(strip.lane) + STRIP_Y;
      const x0 = Math.max(x(strip.start), LABEL_W);
      const x1 = Math.min(x(strip.end), right);
      parts.push(`<g class="na-phases" data-mode="${escape(strip.mode)}" data-tip="${tip(strip.detail)}" role="img" aria-label="${escape(strip.name)}">`);
      for (const segment of strip.segments) {
        const s0 = Math.max(x(segment.start), LABEL_W);
        const s1 = Math.min(x(segment.end), right);
        if (s1 <= s0) continue;
        parts.push(`<rect class="na-phase" data-phase="${escape(segment.name)}" fill="${segment.color}" x="${s0}" y="${y}" width="${s1 - s0}" height="${STRIP_H}"/>`);
      }
      parts.push(`<rect class="na-phases-frame" x="${x0}" y="${y}" width="${Math.max(x1 - x0, 1)}" height="${STRIP_H}"/></g>`);
    }

    // bring-ups under the marks: few (one per handoff) and short, so a plain scan will do. The
    // band starts at its handoff's arrow: its label starts clear of the arrow's head, and of
    // the phases' strip over it
    for (const bringUp of store.bringUps) {
      if (bringUp.end < t0 || bringUp.start > t1) continue;
      const moved = (arrowAt.get(bringUp.handoff) ?? x(bringUp.start)) - x(bringUp.start); // with its arrow
      const x0 = Math.max(x(bringUp.start) + moved, LABEL_W);
      const x1 = Math.min(x(bringUp.end) + moved, right);
      const y = laneY(bringUp.lane);
      parts.push(`<g class="na-bringup" style="--na-color: ${bringUp.color}" data-tip="${tip(bringUp.detail)}" role="img" aria-label="${escape(bringUp.name)}"><rect x="${x0}" y="${y + 2}" width="${Math.max(x1 - x0, 1)}" height="${BAR_Y - 4}"/>`);
      const labelX = Math.max(x0 + 3, x(bringUp.start) + moved + HEAD_W / 2 + 3);
      const under = strips.some(([, s]) => s.lane === bringUp.lane && s.start <= bringUp.start && bringUp.start <= s.end);
      const labelY = y + BRING_UP_LABEL_Y + (under ? STRIP_Y + STRIP_H : 0);
      if (x1 - labelX > textWidth(bringUp.label, 9) + 3) parts.push(`<text class="na-bringup-label" x="${labelX}" y="${labelY}">${escape(bringUp.label)}</text>`);
      parts.push("</g>");
    }

    // handoffs: the arrow between the lanes, a dotted lead up to its chip
    for (const { handoff, race, at, left, w, row } of chips) {
      const chipY = row * ROW_H + 2;
      if (race) {
        // its chip, a dotted lead down to its lane, and a line through the lane at its time
        const y = laneY(race.lane);
        parts.push(`<g class="na-race" data-race="${escape(race.key)}" data-tip="${tip(race.detail)}" role="img" aria-label="${escape(race.name)}">`);
        parts.push(`<line class="na-race-lead" x1="${at}" y1="${chipY + CHIP_H}" x2="${at}" y2="${y}"/>`);
        parts.push(`<line class="na-race-line" x1="${at}" y1="${y}" x2="${at}" y2="${y + LANE_H}"/>`);
        parts.push(`<line class="na-hit" x1="${at}" y1="${y}" x2="${at}" y2="${y + LANE_H}"/>`);
        parts.push(`<rect class="na-race-chip" x="${left}" y="${chipY}" width="${w}" height="${CHIP_H}" rx="3"/>`);
        parts.push(`<text class="na-race-label" x="${left + CHIP_PAD}" y="${chipY + 10.5}">${escape(race.label)}</text></g>`);
        continue;
      }
      const y0 = laneY(handoff.from) + LANE_H / 2;
      const down = handoff.to > handoff.from ? 1 : -1;
      const y1 = laneY(handoff.to) + LANE_H / 2 - 8 * down; // the head's tip
      const base = y1 - HEAD_L * down;
      const chip = chipOf(handoff);
      const attrs = `class="na-handoff" data-mode="${escape(chip.mode)}" data-tip="${tip(handoffTip(handoff))}"`;
      parts.push(`<g ${attrs}><line class="na-handoff-lead" x1="${at}" y1="${chipY + CHIP_H}" x2="${at}" y2="${Math.min(y0, y1)}"/>`);
      parts.push(`<line class="na-handoff-arrow" x1="${at}" y1="${y0}" x2="${at}" y2="${base}"/>`);
      parts.push(`<path class="na-handoff-head" d="M${at - HEAD_W / 2},${base}L${at},${y1}L${at + HEAD_W / 2},${base}Z"/>`);
      parts.push(`<line class="na-hit" x1="${at}" y1="${y0}" x2="${at}" y2="${y1}"/>`);
      parts.push(`<rect class="na-handoff-chip" fill="${chip.color}" x="${left}" y="${chipY}" width="${w}" height="${CHIP_H}" rx="3"/>`);
      parts.push(`<text class="na-handoff-label" fill="${chip.ink}" x="${left + CHIP_PAD}" y="${chipY + 10.5}">${escape(chip.label)}</text></g>`);
    }

    // each mark over the arrows, in its row (the kernel's), at its time or, where it would
    // cover the mark before it, just right of that one; a mark that would have to move
    // farther is merged with the crowd it falls in
    const marks = store.marks;
    const lastX = new Map(); // lane:row -> where the last mark drawn there sits
    const looks = new Map(); // each style's class and colour attributes
    for (let i = lowerBound(marks, t0, (m) => m.t); i < marks.length && marks[i].t <= t1; i++) {
      const mark = marks[i];
      const style = styles[mark.style];
      const key = `${mark.lane}:${style.row}`;
      const at = x(mark.t);
      const mx = Math.max(at, (lastX.get(key) ?? -Infinity) + MARK_W);
      if (mx - at > DODGE_MAX || mx > right) continue;
      lastX.set(key, mx);
      if (!looks.has(mark.style)) {
        const [paintClass, colour] = paint(style);
        looks.set(mark.style, `class="na-mark ${style.css} ${paintClass}" ${colour}`);
      }
      const attrs = `${looks.get(mark.style)} data-seq="${mark.seq}" data-tip="${tip(mark.detail)}"`;
      parts.push(markShape(style.shape, mx, laneY(mark.lane) + ROW_Y[style.row], attrs));
    }

    if (scrubT !== null && scrubT >= t0 && scrubT <= t1) {
      parts.push(`<line class="na-cursor" x1="${x(scrubT)}" y1="${top}" x2="${x(scrubT)}" y2="${axisY}"/>`);
    }
    svg.setAttribute("width", width);
    svg.setAttribute("height", axisY + AXIS_H + gapRows * GAP_ROW_H);
    svg.innerHTML = parts.join("");
    root.querySelector(".na-count").textContent = `${store.seen.size} events`;
    followButton.classList.toggle("na-active", follow);
    // the scrubber is the plot's axis: its thumb's centre runs from the plot's left to its
    // right edge over the same axis units, so at any x it picks the time the axis shows there
    scrubber.style.left = `${LABEL_W - THUMB / 2}px`;
    scrubber.style.width = `${plotW + THUMB}px`;
    scrubber.min = String(u0);
    scrubber.max = String(u1);
    if (scrubT !== null) scrubber.value = String(axis.u(scrubT));
    shown = { u0, u1, axis, plotW, width };
    root.dataset.renderMs = (performance.now() - started).toFixed(2);
  }

  const redraw = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };

  function onMessage(msg) {
    if (msg.type !== "events") return;
    if (msg.reset) store.reset();
    for (const record of msg.events) store.add(record);
    redraw();
  }

  function keyOf(entry) {
    const label = `<span class="na-key-label">${escape(entry.label)}</span>`;
    if (entry.group === "mark") {
      const [paintClass, colour] = paint(entry);
      const shape = markShape(entry.shape, 6, 6, `class="${paintClass}" ${colour}`);
      return `<span class="na-key-entry" data-group="mark"><svg class="na-key na-key-mark" data-mark="${escape(entry.key)}" width="12" height="12">${shape}</svg>${label}</span>`;
    }
    // a race mark's key takes the theme's colours, as its chip does (CSS)
    const color = entry.group === "race" ? "" : entry.group === "band" ? `--na-color: ${entry.color}` : `background: ${entry.color}`;
    return `<span class="na-key-entry" data-group="${entry.group}"><i class="na-key na-key-${entry.group}" data-${entry.group}="${escape(entry.key)}" style="${color}"></i>${label}</span>`;
  }

  // each group of the legend (in the kernel's order) kept together, a rule before it; a group
  // that starts a line has its rule out of sight (CSS)
  function showLegend() {
    const groups = [];
    for (const entry of model.get("legend")) {
      if (groups.at(-1)?.name !== entry.group) groups.push({ name: entry.group, keys: [] });
      groups.at(-1).keys.push(keyOf(entry));
    }
    root.querySelector(".na-legend").innerHTML = groups
      .map((g) => `<span class="na-key-group" data-group="${g.name}">${g.keys.join("")}</span>`)
      .join("");
  }

  // an item the python side marked (missing, extra or moved) says so on hover
  const MARK_TITLES = { missing: "missing from the model's side", extra: "only on the model's side", moved: "out of order" };

  function contextColumn(title, items, agent, isModel) {
    const column = document.createElement("div");
    column.className = isModel ? "na-context na-context-model" : "na-context";
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

  // the hover box beside the pointer, on whichever side has room, always inside the view
  function showTip(text, clientX, clientY) {
    const box = root.getBoundingClientRect();
    tooltip.textContent = text;
    tooltip.style.maxWidth = `${Math.min(420, box.width - 2 * TIP_MARGIN)}px`;
    tooltip.style.maxHeight = `${box.height - 2 * TIP_MARGIN}px`;
    tooltip.hidden = false;
    const [w, h] = [tooltip.offsetWidth, tooltip.offsetHeight];
    const place = (at, size, room) => {
      const after = at + 12;
      const spot = after + size + TIP_MARGIN > room ? at - 12 - size : after;
      return Math.min(Math.max(spot, TIP_MARGIN), room - size - TIP_MARGIN);
    };
    tooltip.style.left = `${place(clientX - box.left, w, box.width)}px`;
    tooltip.style.top = `${place(clientY - box.top, h, box.height)}px`;
  }

  // zoom around the pointer, drag to pan; either stops following the live edge
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    if (!shown) return;
    const { u0, u1, axis, plotW } = shown;
    const at = u0 + ((event.clientX - svg.getBoundingClientRect().left - LABEL_W) / plotW) * (u1 - u0);
    const factor = Math.exp(event.deltaY * 0.002);
    const whole = axis.u(fitEnd()) - axis.u(first());
    const width = Math.min(Math.max((u1 - u0) * factor, 0.002), Math.max(whole * 1.5, 1));
    // while following, the live edge stays put and only the width changes
    const left = follow ? u1 - width : at - (at - u0) * (width / (u1 - u0));
    view = { u0: left, u1: left + width, gapU: axis.gapU };
    redraw();
  }, { passive: false });

  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (shown) drag = { x: event.clientX, shown };
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener("pointermove", (event) => {
    if (drag) {
      const { u0, u1, axis, plotW } = drag.shown;
      const shift = ((drag.x - event.clientX) / plotW) * (u1 - u0);
      if (Math.abs(drag.x - event.clientX) > 2) {
        view = { u0: u0 + shift, u1: u1 + shift, gapU: axis.gapU };
        follow = false;
        redraw();
      }
      return;
    }
    const target = event.target.closest("[data-tip]");
    if (!target) {
      tooltip.hidden = true;
      return;
    }
    showTip(tips[Number(target.dataset.tip)], event.clientX, event.clientY);
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
    if (!shown) return;
    scrubT = shown.axis.t(Number(scrubber.value));
    scrubTime.textContent = `${scrubT.toFixed(3)} s`;
    model.set("scrub_t", scrubT);
    model.save_changes();
    redraw();
  });

  model.on("msg:custom", onMessage);
  const redrawOn = ["change:live", "change:lanes", "change:gaps", "change:first_t", "change:last_t", "change:fit_extent", "change:phases", "change:race_marks"];
  for (const name of redrawOn) model.on(name, redraw);
  model.on("change:legend", showLegend);
  model.on("change:scrub_contexts", showContexts);
  model.on("change:scrub_models", showContexts);
  const resize = new ResizeObserver(redraw);
  resize.observe(plot);
  // the open span grows with the clock while the session is live, followed and not hovered;
  // and a width the drawing missed is drawn at once: a loaded CI machine's theme switch once
  // left it at its old width for 90 s (the ResizeObserver silent, or its frame never drawn).
  // Neither under the pointer: a mark redrawn there drops its hover details
  const timer = setInterval(() => {
    if (pointerInside) return;
    if (shown && plot.clientWidth && Math.max(plot.clientWidth, 300) !== shown.width) draw();
    else if (model.get("live") && follow) redraw();
  }, 250);
  model.send({ type: "history" });
  showLegend();
  showContexts();
  redraw();
  return () => {
    clearInterval(timer);
    resize.disconnect();
    if (frame) cancelAnimationFrame(frame);
    model.off("msg:custom", onMessage);
    for (const name of redrawOn) model.off(name, redraw);
    model.off("change:legend", showLegend);
    model.off("change:scrub_contexts", showContexts);
    model.off("change:scrub_models", showContexts);
  };
}

export default { render };
