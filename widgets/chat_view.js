// ChatView: type as the user; the transcript (from the trace) names who said what; the call
// so far saved as a scenario (scenarioForm, from scenario_form.js).
// Lines arrive in batches ("msg:custom"); the kernel sends each once.

function line(entry) {
  const row = document.createElement("div");
  row.className = `na-line na-line-${entry.kind}`;
  if (entry.phase === "on_enter") row.classList.add("na-on-enter");
  row.dataset.seq = entry.seq;
  if (entry.who) {
    const who = document.createElement("span");
    who.className = "na-who";
    who.textContent = entry.who;
    row.append(who);
  }
  const text = document.createElement("span");
  text.className = "na-text";
  text.textContent = entry.text;
  row.append(text);
  return row;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "na-chat";
  root.innerHTML = `
    <div class="na-transcript" role="log" aria-live="polite"></div>
    <form class="na-chat-form">
      <input class="na-chat-input" type="text" placeholder="Type as the user, then Enter" autocomplete="off">
      <button class="na-chat-send" type="submit">send</button>
    </form>
    <div class="na-chat-status"></div>`;
  const saving = scenarioForm(model);
  root.append(saving.element);
  el.append(root);
  const transcript = root.querySelector(".na-transcript");
  const input = root.querySelector(".na-chat-input");
  const status = root.querySelector(".na-chat-status");
  const shown = new Set();

  function onMessage(msg) {
    if (msg.type !== "events") return;
    if (msg.reset) {
      transcript.replaceChildren();
      shown.clear();
    }
    const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 24;
    for (const entry of msg.events) {
      if (shown.has(entry.seq)) continue;
      shown.add(entry.seq);
      transcript.append(line(entry));
    }
    if (atBottom || msg.reset) transcript.scrollTop = transcript.scrollHeight;
  }

  const send = root.querySelector(".na-chat-send");

  function showStatus() {
    const error = model.get("error");
    const pending = model.get("pending");
    const ended = model.get("ended");
    // a call that is over takes no more turns: say so where one would type
    input.disabled = send.disabled = Boolean(ended);
    input.placeholder = ended ? "This call has ended" : "Type as the user, then Enter";
    status.classList.toggle("na-error", Boolean(error));
    status.textContent = error || (pending ? "waiting for the agent…" : ended);
  }

  root.querySelector("form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    model.send({ type: "say", text });
    input.value = "";
  });
  // keep JupyterLab's notebook shortcuts out of the text box
  input.addEventListener("keydown", (event) => event.stopPropagation());

  model.on("msg:custom", onMessage);
  model.on("change:error", showStatus);
  model.on("change:pending", showStatus);
  model.on("change:live", showStatus);
  model.on("change:ended", showStatus);
  model.send({ type: "history" });
  showStatus();
  return () => {
    saving.dispose();
    model.off("msg:custom", onMessage);
    model.off("change:error", showStatus);
    model.off("change:pending", showStatus);
    model.off("change:live", showStatus);
    model.off("change:ended", showStatus);
  };
}

export default { render };
