// BenchmarkView: the handoff benchmark's progress, its distribution plot and summary table.
// The kernel sends the counters, the status, the plot as SVG and the table as HTML; nothing is
// computed here.

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
  // the table's HTML is summary_table's, as a notebook cell shows it
  const table = element("div", "na-bench-table");
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
    status.textContent = model.get("status");
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
    table.innerHTML = model.get("table_html");
  }

  const handlers = [
    [
      "change:done change:total change:failed change:running change:status change:last_trial",
      drawProgress,
    ],
    ["change:error", drawError],
    ["change:plot_svg", drawPlot],
    ["change:table_html", drawTable],
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
