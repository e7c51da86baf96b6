// "Save as scenario", shared by ChatView and SuiteView (joined before the view's module): a
// label, the scenarios file, a button. The kernel writes the call the view shows as a scenario
// (notebook_agents.suites.to_scenario) and answers in scenario_saved (the file) or
// scenario_error (why not, and the fix).

function scenarioForm(model) {
  const form = document.createElement("form");
  form.className = "na-scenario-form";
  form.innerHTML = `
    <input class="na-scenario-label" type="text" placeholder="label of the new scenario"
      aria-label="label of the new scenario" autocomplete="off">
    <input class="na-scenario-path" type="text" aria-label="scenarios file" autocomplete="off">
    <button class="na-scenario-save" type="submit">save as scenario</button>
    <div class="na-scenario-status" role="status"></div>`;
  const label = form.querySelector(".na-scenario-label");
  const path = form.querySelector(".na-scenario-path");
  const status = form.querySelector(".na-scenario-status");

  function show() {
    const error = model.get("scenario_error");
    const saved = model.get("scenario_saved");
    status.classList.toggle("na-error", Boolean(error));
    status.textContent = error || (saved ? `saved in ${saved}` : "");
    if (saved) label.value = "";
    if (document.activeElement !== path) path.value = model.get("scenario_path");
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    model.set("scenario_path", path.value.trim() || "scenarios.yaml");
    model.save_changes();
    model.send({ type: "save_scenario", label: label.value });
  });
  // keep JupyterLab's notebook shortcuts out of the text boxes
  for (const input of [label, path]) {
    input.addEventListener("keydown", (event) => event.stopPropagation());
  }
  const events = ["change:scenario_error", "change:scenario_saved", "change:scenario_path"];
  for (const name of events) model.on(name, show);
  show();
  return {
    element: form,
    dispose: () => events.forEach((name) => model.off(name, show)),
  };
}
