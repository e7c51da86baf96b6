// WaterfallView: draws the wait the kernel laid out (notebook_agents/views/_waterfall_layout.py):
// a row per phase with its bar from the wait's start (the network's share hatched, the
// client's solid), livekit's figure as a line under it, the labels in ms, the note under the
// row and the hover text; the wait itself, livekit's totals and the unexplained rest. Decided
// here is only where the kernel's milliseconds fall on the row's width. A pick of another wait
// goes to the kernel ("selected"), which sends its layout.

function element(tag, className, text) {
  const el = document.createElement(tag);
  el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

// the share of the axis from its start to `ms`, as a CSS length
function at(axis, ms) {
  return `${((ms - axis.min_ms) / (axis.max_ms - axis.min_ms)) * 100}%`;
}

function span(axis, className, from, to) {
  const el = element("i", className);
  el.style.left = at(axis, from);
  el.style.width = `calc(${at(axis, to)} - ${at(axis, from)})`;
  return el;
}

function ticks(axis, track) {
  for (const tick of axis.ticks) {
    const line = element("i", "na-wf-tick");
    line.style.left = at(axis, tick.ms);
    track.append(line);
  }
}

function headings(axis) {
  const row = element("div", "na-wf-row na-wf-headings");
  const track = element("div", "na-wf-track na-wf-axis");
  for (const tick of axis.ticks) {
    const label = element("span", "na-wf-tick-label", tick.label);
    label.style.left = at(axis, tick.ms);
    track.append(label);
  }
  row.append(
    element("div", "na-wf-name", "phase"),
    track,
    element("div", "na-wf-ms", "measured"),
    element("div", "na-wf-lk", "livekit"),
    element("div", "na-wf-net", "network · client"),
  );
  return row;
}

function row(axis, data) {
  const el = element("div", "na-wf-row");
  el.dataset.kind = data.kind;
  el.dataset.critical = data.critical ? "true" : "false";
  el.title = data.title;
  // one line: a long name ends in an ellipsis, the row's hover text gives it whole
  const name = element("div", "na-wf-name");
  name.append(element("span", "na-wf-label", data.name));
  if (!data.critical) name.append(element("span", "na-wf-parallel", " (parallel)"));
  const track = element("div", "na-wf-track");
  ticks(axis, track);
  for (const part of data.segments) {
    const bar = span(axis, `na-wf-bar na-wf-${part.part}`, part.start_ms, part.end_ms);
    track.append(bar);
  }
  if (data.livekit) {
    track.append(span(axis, "na-wf-livekit", data.livekit.start_ms, data.livekit.end_ms));
  }
  el.append(
    name,
    track,
    element("div", "na-wf-ms", data.measured),
    element("div", "na-wf-lk", data.livekit_text),
    element("div", "na-wf-net", data.truth_text),
  );
  if (data.note) el.append(element("div", "na-wf-note", data.note));
  return el;
}

function render({ model, el }) {
  const root = element("div", "na-waterfall");
  const bar = element("div", "na-wf-toolbar");
  const pick = element("select", "na-wf-pick");
  pick.setAttribute("aria-label", "wait");
  const live = element("span", "na-wf-live", "live");
  bar.append(pick, live);
  const title = element("div", "na-wf-title");
  const subtitle = element("div", "na-wf-subtitle");
  const empty = element("div", "na-wf-empty");
  const rows = element("div", "na-wf-rows");
  const key = element("div", "na-wf-key");
  root.append(bar, title, subtitle, empty, rows, key);
  el.append(root);

  function colors() {
    for (const [name, color] of Object.entries(model.get("colors"))) {
      root.style.setProperty(`--na-wf-${name}`, color);
    }
  }

  function choices() {
    const waits = model.get("waits");
    pick.textContent = "";
    if (model.get("live") && waits.length) pick.append(new Option("newest", ""));
    for (const wait of waits) pick.append(new Option(wait.text, String(wait.id)));
    live.hidden = !model.get("live");
    bar.hidden = !waits.length;
    const selected = model.get("selected");
    const shown = model.get("shown");
    pick.value = selected !== null ? String(selected) : model.get("live") ? "" : String(shown.id ?? "");
  }

  function draw() {
    const shown = model.get("shown");
    const has = shown.rows !== undefined;
    empty.textContent = model.get("empty");
    empty.hidden = has;
    key.hidden = title.hidden = subtitle.hidden = !has;
    rows.textContent = "";
    if (!has) return;
    title.textContent = shown.title;
    title.style.setProperty("--na-wf-mode", shown.mode_color ?? "transparent");
    title.dataset.mode = shown.mode_color ? "true" : "false";
    subtitle.textContent = shown.subtitle;
    rows.append(headings(shown.axis), ...shown.rows.map((data) => row(shown.axis, data)));
    key.textContent = "";
    for (const { part, label } of shown.key) {
      const entry = element("span", "na-wf-key-entry");
      entry.dataset.part = part;
      entry.append(element("i", `na-wf-swatch na-wf-swatch-${part}`), label);
      key.append(entry);
    }
  }

  pick.addEventListener("change", () => {
    model.set("selected", pick.value === "" ? null : Number(pick.value));
    model.save_changes();
  });

  colors();
  choices();
  draw();
  const redraw = () => {
    choices();
    draw();
  };
  // one listener per trait: anywidget's model takes one event name at a time
  const listeners = [
    ["change:colors", colors],
    ["change:waits", choices],
    ["change:live", choices],
    ["change:selected", choices],
    ["change:shown", redraw],
    ["change:empty", redraw],
  ];
  for (const [name, listener] of listeners) model.on(name, listener);
  return () => {
    for (const [name, listener] of listeners) model.off(name, listener);
  };
}

export default { render };
