// SuiteView's table: a row per scenario (outcome, the first failing expectation and why,
// time). The kernel sends the rows; a click selects a scenario, whose timeline the kernel
// shows under the table, and whose run "save as scenario" (scenarioForm) writes as a new one.

function cell(tr, className, text) {
  const td = document.createElement("td");
  td.className = className;
  td.textContent = text;
  tr.append(td);
  return td;
}

function why(td, row) {
  // a failure's reason: "turn N (...): <expectation>", livekit's message, then its context
  const lines = row.reason ? row.reason.split("\n") : [];
  const shown = row.expectation ? 2 : 1;
  if (row.expectation) {
    const code = document.createElement("code");
    code.textContent = row.expectation;
    td.append(`turn ${row.turn}: `, code);
  }
  const message = lines[shown - 1];
  if (message) {
    const line = document.createElement("div");
    line.className = "na-suite-message";
    line.textContent = message;
    td.append(line);
  }
  const more = lines.slice(shown).join("\n");
  if (more) {
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "details";
    const pre = document.createElement("pre");
    pre.textContent = more;
    details.append(summary, pre);
    details.addEventListener("click", (event) => event.stopPropagation());
    td.append(details);
  }
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "na-suite";
  const summary = document.createElement("div");
  summary.className = "na-suite-summary";
  const table = document.createElement("table");
  table.innerHTML =
    "<thead><tr><th>scenario</th><th>outcome</th><th>first failing expectation</th>" +
    "<th>time</th></tr></thead>";
  const body = document.createElement("tbody");
  table.append(body);
  const hint = document.createElement("div");
  hint.className = "na-suite-hint";
  hint.textContent = "click a scenario to see its timeline";
  const saving = scenarioForm(model);
  root.append(summary, table, hint, saving.element);
  el.append(root);

  function draw() {
    summary.textContent = model.get("summary");
    body.textContent = "";
    for (const row of model.get("rows")) {
      const tr = document.createElement("tr");
      tr.dataset.label = row.label;
      tr.classList.toggle("na-selected", row.label === model.get("selected"));
      cell(tr, "na-suite-label", row.label);
      cell(tr, "na-suite-outcome", row.outcome).dataset.outcome = row.outcome;
      why(cell(tr, "na-suite-why", ""), row);
      cell(tr, "na-suite-seconds", `${row.seconds.toFixed(2)} s`);
      tr.addEventListener("click", () => {
        model.set("selected", row.label);
        model.save_changes();
      });
      body.append(tr);
    }
  }

  draw();
  model.on("change:rows", draw);
  model.on("change:summary", draw);
  model.on("change:selected", draw);
  return () => {
    saving.dispose();
    for (const name of ["change:rows", "change:summary", "change:selected"]) model.off(name, draw);
  };
}

export default { render };
