// VoiceView: the browser's microphone to the kernel, the agent's voice back, with levels.
// The microphone opens only on a click. Audio crosses the comm as binary PCM16 buffers at the
// kernel's rate; the kernel sends what was heard and said, and who is on the call.

const TAP = `
class Tap extends AudioWorkletProcessor {
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) this.port.postMessage(channel.slice(0));
    return true;
  }
}
registerProcessor("na-tap", Tap);
`;
const CHUNK_S = 0.02; // what the kernel gets at a time: 20 ms, as a microphone delivers
// the button's label in each mode, closed and open; every one is laid out in the button, only
// the current one shown, so the button is as wide as the longest and never moves its neighbours
const LABELS = {
  push_to_talk: { closed: "hold to talk", open: "listening… let go to send" },
  open_mic: { closed: "talk", open: "listening… click to stop" },
};

function pcm16(floats) {
  const out = new Int16Array(floats.length);
  for (let i = 0; i < floats.length; i++) {
    out[i] = Math.max(-1, Math.min(1, floats[i])) * 32767;
  }
  return out;
}

function level(analyser, scratch) {
  analyser.getFloatTimeDomainData(scratch);
  let sum = 0;
  for (const x of scratch) sum += x * x;
  return Math.sqrt(sum / scratch.length);
}

function meter(label, className) {
  const el = document.createElement("div");
  el.className = `na-voice-meter ${className}`;
  const name = document.createElement("span");
  name.className = "na-label";
  name.textContent = label;
  const bar = document.createElement("div");
  bar.className = "na-voice-bar";
  const fill = document.createElement("div");
  fill.className = "na-voice-fill";
  bar.append(fill);
  el.append(name, bar);
  el.dataset.level = "0";
  return {
    el,
    show(rms) {
      el.dataset.level = rms.toFixed(4);
      fill.style.width = `${Math.min(100, Math.sqrt(rms) * 200)}%`;
    },
  };
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "na-voice";
  const button = document.createElement("button");
  button.className = "na-voice-button jp-mod-styled";
  const dot = document.createElement("span");
  dot.className = "na-voice-dot";
  const labels = document.createElement("span");
  labels.className = "na-voice-labels";
  for (const [mode, texts] of Object.entries(LABELS)) {
    for (const [state, text] of Object.entries(texts)) {
      const label = document.createElement("span");
      label.className = "na-voice-label";
      label.dataset.key = `${mode}:${state}`;
      label.textContent = text;
      labels.append(label);
    }
  }
  button.append(dot, labels);
  const mode = document.createElement("select");
  mode.className = "na-voice-mode jp-mod-styled";
  for (const [value, text] of [["push_to_talk", "push to talk"], ["open_mic", "open mic"]]) {
    mode.append(new Option(text, value));
  }
  const you = meter("you", "na-voice-you");
  const agentMeter = meter("agent", "na-voice-agent");
  const lines = document.createElement("div");
  lines.className = "na-voice-lines";
  const note = document.createElement("div");
  note.className = "na-voice-note";
  note.setAttribute("role", "status");
  const controls = document.createElement("div");
  controls.className = "na-voice-controls";
  controls.append(button, mode, you.el, agentMeter.el);
  root.append(controls, lines, note);
  el.append(root);

  let context = null;
  let agentAnalyser = null;
  let microphone = null; // { stream, nodes, analyser } while open
  let wanted = false; // push-to-talk held (it may be let go while the microphone opens)
  let pending = [];
  let nextStart = 0;
  let scheduled = [];
  let frame = 0;

  async function audioContext() {
    if (context === null) {
      context = new AudioContext({ sampleRate: model.get("rate") });
      const url = URL.createObjectURL(new Blob([TAP], { type: "application/javascript" }));
      await context.audioWorklet.addModule(url);
      agentAnalyser = context.createAnalyser();
      agentAnalyser.connect(context.destination);
    }
    await context.resume();
    return context;
  }

  async function openMicrophone() {
    if (microphone !== null || model.get("ended")) return;
    microphone = { opening: true };
    try {
      const ctx = await audioContext();
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
      });
      const source = ctx.createMediaStreamSource(stream);
      const analyser = ctx.createAnalyser();
      const tap = new AudioWorkletNode(ctx, "na-tap");
      const mute = ctx.createGain();
      mute.gain.value = 0; // the tap must reach the destination to run; nothing is heard
      source.connect(analyser);
      source.connect(tap).connect(mute).connect(ctx.destination);
      const chunk = Math.round(ctx.sampleRate * CHUNK_S);
      tap.port.onmessage = ({ data }) => {
        pending.push(...data);
        while (pending.length >= chunk) {
          const samples = pcm16(pending.splice(0, chunk));
          model.send({ kind: "microphone" }, undefined, [samples.buffer]);
        }
      };
      microphone = { stream, nodes: [source, analyser, tap, mute], analyser };
      model.set("error", "");
      model.save_changes();
      // before the first audio (the tap's messages come in later tasks): the turn starts here
      if (pushToTalk()) model.send({ kind: "pressed" });
      if (!wanted) release();
    } catch (error) {
      microphone = null;
      model.set("error", `the microphone could not open: ${error.message || error}`);
      model.save_changes();
    }
    draw();
  }

  function closeMicrophone() {
    if (microphone === null || microphone.opening) return;
    for (const track of microphone.stream.getTracks()) track.stop();
    for (const node of microphone.nodes) node.disconnect();
    microphone = null;
    pending = [];
    draw();
  }

  function play(buffer) {
    if (context === null) return; // no click yet: the browser would not play it anyway
    const samples = new Int16Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 2);
    const audio = context.createBuffer(1, samples.length, model.get("rate"));
    const channel = audio.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
    const source = context.createBufferSource();
    source.buffer = audio;
    source.connect(agentAnalyser);
    nextStart = Math.max(nextStart, context.currentTime);
    source.start(nextStart);
    nextStart += audio.duration;
    scheduled.push(source);
    source.onended = () => {
      scheduled = scheduled.filter((s) => s !== source);
    };
  }

  function cut() {
    for (const source of scheduled) source.stop();
    scheduled = [];
    nextStart = 0;
  }

  function onMessage(message, buffers) {
    if (message.kind === "agent_audio") buffers.forEach(play);
    else if (message.kind === "cut") cut();
  }
  model.on("msg:custom", onMessage);

  const pushToTalk = () => model.get("mode") === "push_to_talk";
  button.addEventListener("pointerdown", () => {
    wanted = true;
    if (pushToTalk()) openMicrophone();
  });
  function release() {
    wanted = false;
    if (pushToTalk() && microphone !== null && !microphone.opening) {
      closeMicrophone();
      model.send({ kind: "released" });
    }
  }
  button.addEventListener("pointerup", release);
  button.addEventListener("pointerleave", release);
  button.addEventListener("click", () => {
    if (pushToTalk()) return;
    wanted = microphone === null;
    if (wanted) openMicrophone();
    else closeMicrophone();
  });
  mode.addEventListener("change", () => {
    closeMicrophone();
    model.set("mode", mode.value);
    model.save_changes();
  });

  function draw() {
    const ended = model.get("ended");
    const open = microphone !== null && !microphone.opening;
    button.disabled = Boolean(ended);
    button.setAttribute("aria-pressed", String(open));
    const key = `${model.get("mode")}:${open ? "open" : "closed"}`;
    for (const label of labels.children) label.classList.toggle("na-shown", label.dataset.key === key);
    mode.value = model.get("mode");
    mode.disabled = Boolean(ended);
    lines.replaceChildren(
      ...[
        ["agent", model.get("agent")],
        ["heard", model.get("heard")],
        ["said", model.get("said")],
      ].map(([label, text]) => {
        const line = document.createElement("div");
        line.className = `na-voice-line na-voice-line-${label}`;
        const name = document.createElement("span");
        name.className = "na-label";
        name.textContent = label;
        const value = document.createElement("span");
        value.textContent = text || "–";
        line.append(name, value);
        return line;
      }),
    );
    note.textContent = ended || model.get("error");
  }

  const scratch = new Float32Array(1024);
  function meters() {
    you.show(microphone && microphone.analyser ? level(microphone.analyser, scratch) : 0);
    agentMeter.show(agentAnalyser ? level(agentAnalyser, scratch) : 0);
    frame = requestAnimationFrame(meters);
  }
  frame = requestAnimationFrame(meters);

  for (const name of ["agent", "heard", "said", "ended", "error", "mode"]) {
    model.on(`change:${name}`, draw);
  }
  model.on("change:ended", () => {
    if (model.get("ended")) closeMicrophone();
  });
  draw();
  return () => {
    cancelAnimationFrame(frame);
    closeMicrophone();
    cut();
    if (context !== null) context.close();
  };
}

export default { render };
