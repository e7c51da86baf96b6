// SuiteView's table: a row per scenario (outcome, how its runs did when the suite repeated
// scenarios, the first failing expectation and why, time). The kernel sends the rows, each
// repetition's text ("4/5 passed · flaky") included; a click selects a scenario, whose
// timeline the kernel shows under the table, and whose run "save as scenario" (scenarioForm)
// writes as a new one.

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
  const head = document.createElement("thead");
  const body = document.createElement("tbody");
  table.append(head, body);
  const hint = document.createElement("div");
  hint.className = "na-suite-hint";
  hint.textContent = "click a scenario to see its timeline";
  const saving = scenarioForm(model);
  root.append(summary, table, hint, saving.element);
  el.append(root);

  function draw() {
    const repeated = model.get("repeated");
    summary.textContent = model.get("summary");
    const titles = ["scenario", "outcome", ...(repeated ? ["runs"] : [])];
    head.textContent = "";
    const titled = document.createElement("tr");
    for (const title of [...titles, "first failing expectation", "time"]) {
      const th = document.createElement("th");
      th.textContent = title;
      titled.append(th);
    }
    head.append(titled);
    body.textContent = "";
    for (const row of model.get("rows")) {
      const tr = document.createElement("tr");
      tr.dataset.label = row.label;
      tr.classList.toggle("na-selected", row.label === model.get("selected"));
      cell(tr, "na-suite-label", row.label);
      cell(tr, "na-suite-outcome", row.outcome).dataset.outcome = row.outcome;
      if (repeated) {
        cell(tr, "na-suite-runs", row.runs).classList.toggle("na-flaky", row.flaky);
      }
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
