// StateView: the current agent, agent state and user state, with time in state.
// The kernel sends the states, when they began, their colours and the closing note; the
// clock ticks here.

function field(label, badgeClass) {
  const el = document.createElement("div");
  el.className = "na-field";
  const name = document.createElement("span");
  name.className = "na-label";
  name.textContent = label;
  const badge = document.createElement("span");
  badge.className = `na-badge ${badgeClass}`;
  const since = document.createElement("span");
  since.className = "na-since";
  el.append(name, badge, since);
  return { el, badge, since };
}

function seconds(model, sinceKey) {
  const startedAt = model.get("started_at");
  const since = model.get(sinceKey);
  return Math.max(0, Date.now() / 1000 - (startedAt + since));
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "na-state";
  const agent = field("agent", "na-agent");
  const agentState = field("agent state", "na-agent-state");
  const userState = field("user", "na-user-state");
  const closed = document.createElement("span");
  closed.className = "na-closed";
  root.append(agent.el, agentState.el, userState.el, closed);
  el.append(root);

  function draw() {
    const colors = model.get("colors");
    agent.badge.textContent = model.get("agent") || "–";
    agentState.badge.textContent = model.get("agent_state");
    agentState.badge.dataset.state = model.get("agent_state");
    userState.badge.textContent = model.get("user_state");
    userState.badge.dataset.state = model.get("user_state");
    const badges = { agent, agent_state: agentState, user_state: userState };
    for (const [key, { badge }] of Object.entries(badges)) {
      badge.style.setProperty("--na-badge-color", colors[key]);
    }
    closed.textContent = model.get("note");
    closed.dataset.failed = model.get("failure") ? "true" : "false";
    tick();
  }

  function tick() {
    const live = !model.get("closed");
    agentState.since.textContent = live ? `${seconds(model, "agent_state_since").toFixed(1)} s` : "";
    userState.since.textContent = live ? `${seconds(model, "user_state_since").toFixed(1)} s` : "";
  }

  draw();
  model.on("change", draw);
  const timer = setInterval(tick, 250);
  return () => {
    clearInterval(timer);
    model.off("change", draw);
  };
}

export default { render };
