// VoiceView: the browser's microphone to the kernel, the agent's voice back, with levels.
// The microphone opens only on a click. Audio crosses the comm as binary PCM16 buffers at the
// kernel's rate; the kernel sends what was heard and said, and who is on the call.

const CHUNK_S = 0.02; // what the kernel gets at a time: 20 ms, as a microphone delivers
const RELEASE_S = 0.3; // a meter's fall: rises at once, falls by 1/e in this (a VU's 300 ms)
// On the audio thread, which sees every sample (the page's frames, when the page is busy, see
// only moments): the level of what passes through, as a meter shows it, every CHUNK_S; with
// forward, the samples too, as PCM16 for the kernel. The audio passes on unchanged.
const METER = `
class Meter extends AudioWorkletProcessor {
  constructor({ processorOptions: { chunk, forward } }) {
    super();
    this.samples = forward ? new Int16Array(chunk) : null;
    this.chunk = chunk;
    this.filled = 0;
    this.level = 0;
  }
  process(inputs, outputs) {
    const channel = inputs[0] && inputs[0][0];
    const frames = channel ? channel.length : outputs[0][0].length;
    let sum = 0;
    if (channel) {
      outputs[0][0].set(channel);
      for (const x of channel) sum += x * x;
    }
    const fall = Math.exp(-frames / (sampleRate * ${RELEASE_S}));
    this.level = Math.max(Math.sqrt(sum / frames), this.level * fall);
    for (let i = 0; i < frames; i++) {
      if (this.samples !== null) {
        const x = channel ? Math.max(-1, Math.min(1, channel[i])) : 0;
        this.samples[this.filled] = x * 32767;
      }
      if (++this.filled === this.chunk) this.post();
    }
    return true;
  }
  post() {
    const samples = this.samples && this.samples.buffer;
    this.port.postMessage({ level: this.level, samples }, samples ? [samples] : []);
    if (samples) this.samples = new Int16Array(this.chunk);
    this.filled = 0;
  }
}
registerProcessor("na-meter", Meter);
`;
// the button's label in each mode, closed and open; every one is laid out in the button, only
// the current one shown, so the button is as wide as the longest and never moves its neighbours
const LABELS = {
  push_to_talk: { closed: "hold to talk", open: "listening… let go to send" },
  open_mic: { closed: "talk", open: "listening… click to stop" },
};

function meterNode(ctx, forward) {
  const chunk = Math.round(ctx.sampleRate * CHUNK_S);
  return new AudioWorkletNode(ctx, "na-meter", {
    processorOptions: { chunk, forward },
    outputChannelCount: [1],
  });
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
  // the line your voice crosses: the kernel names the choices, this only draws them
  const line = document.createElement("select");
  line.className = "na-voice-conditions jp-mod-styled";
  line.title = "the line your voice crosses to the agent";
  line.setAttribute("aria-label", "line conditions");
  const you = meter("you", "na-voice-you");
  const agentMeter = meter("agent", "na-voice-agent");
  const lines = document.createElement("div");
  lines.className = "na-voice-lines";
  const note = document.createElement("div");
  note.className = "na-voice-note";
  note.setAttribute("role", "status");
  const controls = document.createElement("div");
  controls.className = "na-voice-controls";
  controls.append(button, mode, line, you.el, agentMeter.el);
  root.append(controls, lines, note);
  el.append(root);

  let context = null;
  let agentOut = null; // the agent's audio goes through its meter to the speaker
  let agentLevel = 0;
  let microphone = null; // { stream, tap, nodes } while open
  let youLevel = 0;
  let wanted = false; // push-to-talk held (it may be let go while the microphone opens)
  let nextStart = 0;
  let scheduled = [];
  let frame = 0;

  async function audioContext() {
    if (context === null) {
      context = new AudioContext({ sampleRate: model.get("rate") });
      const url = URL.createObjectURL(new Blob([METER], { type: "application/javascript" }));
      await context.audioWorklet.addModule(url);
      agentOut = meterNode(context, false);
      agentOut.port.onmessage = ({ data }) => {
        agentLevel = data.level;
      };
      agentOut.connect(context.destination);
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
      const tap = meterNode(ctx, true);
      const mute = ctx.createGain();
      mute.gain.value = 0; // the tap must reach the destination to run; nothing is heard
      source.connect(tap).connect(mute).connect(ctx.destination);
      tap.port.onmessage = ({ data }) => {
        youLevel = data.level;
        model.send({ kind: "microphone" }, undefined, [data.samples]);
      };
      microphone = { stream, tap, nodes: [source, tap, mute] };
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
    microphone.tap.port.onmessage = null; // what it posted before it stopped is not sent
    microphone = null;
    youLevel = 0;
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
    source.connect(agentOut);
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
  line.addEventListener("change", () => {
    model.set("line", line.value);
    model.save_changes();
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
    const names = model.get("lines");
    if ([...line.options].map((o) => o.value).join("\n") !== names.join("\n")) {
      line.replaceChildren(...names.map((name) => new Option(name, name)));
    }
    line.value = model.get("line");
    line.disabled = Boolean(ended);
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

  function meters() {
    you.show(youLevel);
    agentMeter.show(agentLevel);
    frame = requestAnimationFrame(meters);
  }
  frame = requestAnimationFrame(meters);

  for (const name of ["agent", "heard", "said", "ended", "error", "mode", "line", "lines"]) {
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
