// BenchmarkView: the handoff benchmark's progress, its distribution plot and summary table.
// The kernel sends the counters, the table rows and the plot as SVG; nothing is computed here.

// [row key, header, tooltip, how to show it]
const COLUMNS = [
  ["level", "level", "agent: AgentSession; session: bare realtime session; cascaded: chat", "text"],
  ["mode", "mode", "realtime session reused or fresh, chat context copied or empty", "text"],
  ["rtt_ms", "RTT", "injected round-trip time (ms)", "plain"],
  ["history_turns", "history", "turns of history before the handoff", "plain"],
  ["n", "n", "successful trials", "plain"],
  ["median", "median", "median (ms)", "ms"],
  ["p90", "p90", "90th percentile (ms)", "ms"],
  ["p95", "p95", "95th percentile (ms)", "ms"],
  ["iqr", "IQR", "interquartile range (ms)", "ms"],
  ["ci", "95% CI median", "bootstrap 95% confidence interval of the median (ms)", "ci"],
  ["truth_ms", "truth", "what the network alone must cost (emulator only, ms)", "ms"],
  ["excess_ms", "excess ms", "median minus truth: the client's own work", "signed"],
  ["excess_rtts", "excess RTTs", "excess in units of the injected RTT", "rtts"],
  ["failed", "failed", "failed trials", "plain"],
];

function number(value, digits, signed = false) {
  if (value == null) return "-"; // null: absent (no truth, no RTT, no successful trial)
  const text = value.toFixed(digits);
  return signed && value >= 0 ? `+${text}` : text;
}

function cellText(row, key, format) {
  switch (format) {
    case "text":
    case "plain":
      return String(row[key] ?? "-");
    case "ci":
      return row.ci_low == null ? "-" : `${number(row.ci_low, 1)}..${number(row.ci_high, 1)}`;
    case "signed":
      return number(row[key], 1, true);
    case "rtts":
      // as the CLI's table: a fraction of an RTT needs the second digit
      return number(row[key], 2, true);
    default:
      return number(row[key], 1);
  }
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function render({ model, el }) {
  const root = element("div", "na-bench");
  const progress = element("div", "na-bench-progress");
  const bar = element("progress");
  const count = element("span", "na-bench-count");
  const failed = element("span", "na-bench-failed");
  const status = element("span", "na-bench-status");
  const last = element("span", "na-bench-last");
  progress.append(bar, count, failed, status, last);
  const error = element("div", "na-bench-error");
  const plot = element("div", "na-bench-plot");
  // matplotlib's SVG brings a page-wide `*{...}` style rule and its own ids: a shadow root
  // keeps both to the plot
  const plotRoot = plot.attachShadow({ mode: "open" });
  const table = element("table", "na-bench-table");
  const caption = element("caption");
  const head = element("thead");
  const headRow = element("tr");
  for (const [key, header, tooltip, format] of COLUMNS) {
    const th = element("th", format === "text" ? "na-bench-text" : "na-bench-num", header);
    th.title = tooltip;
    th.dataset.key = key;
    headRow.append(th);
  }
  head.append(headRow);
  const body = element("tbody");
  table.append(caption, head, body);
  root.append(progress, error, plot, table);
  el.append(root);

  function drawProgress() {
    const done = model.get("done");
    const total = model.get("total");
    const running = model.get("running");
    bar.max = Math.max(total, 1);
    bar.value = Math.min(done, bar.max);
    count.textContent = `${done} / ${total}`;
    const nFailed = model.get("failed");
    failed.textContent = nFailed ? `${nFailed} failed` : "";
    const idle = done === 0 && !model.get("error"); // after a failed run the error says it all
    status.textContent = running ? "running…" : idle ? "not started: await view.run()" : "";
    root.dataset.running = String(running);
    last.textContent = model.get("last_trial");
    last.title = model.get("last_trial");
  }

  function drawError() {
    const text = model.get("error");
    error.textContent = text;
    error.hidden = !text;
  }

  function drawPlot() {
    const svg = model.get("plot_svg");
    plotRoot.innerHTML = svg
      ? `<style>svg { max-width: 100%; height: auto; }</style>${svg}`
      : `<div class="na-bench-empty">no trials yet</div>`;
  }

  function drawTable() {
    const rows = model.get("rows");
    const colors = model.get("mode_colors");
    caption.textContent = `${model.get("timing")} (ms)`;
    table.hidden = rows.length === 0;
    body.replaceChildren(
      ...rows.map((row) => {
        const tr = element("tr");
        for (const [key, , , format] of COLUMNS) {
          const td = element(
            "td",
            format === "text" ? "na-bench-text" : "na-bench-num",
            cellText(row, key, format),
          );
          td.dataset.key = key;
          if (key === "mode") {
            td.classList.add("na-bench-mode");
            // a mode without a colour of its own: the theme's secondary text colour (views.css)
            if (colors[row.mode]) td.style.setProperty("--na-mode-color", colors[row.mode]);
          }
          tr.append(td);
        }
        return tr;
      }),
    );
  }

  const handlers = [
    ["change:done change:total change:failed change:running change:last_trial", drawProgress],
    ["change:error", drawError],
    ["change:error", drawProgress],
    ["change:plot_svg", drawPlot],
    ["change:rows change:timing change:mode_colors", drawTable],
  ];
  for (const [events, draw] of handlers) {
    draw();
    for (const event of events.split(" ")) model.on(event, draw);
  }
  return () => {
    for (const [events, draw] of handlers) {
      for (const event of events.split(" ")) model.off(event, draw);
    }
  };
}

export default { render };
