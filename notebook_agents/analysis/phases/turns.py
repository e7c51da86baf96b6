"""Every turn's wait split into its phases, from the trace's events and livekit's spans.

A turn's wait is ``TraceAnalysis``'s (defined once in ``analysis``): from the end of the
caller's speech, or from typed text reaching the session, to the first audio out (the first
text without audio). Its phases are the steps livekit took in between, each where its span or
event puts it: the VAD's end of speech, the final transcript, the end-of-turn detection and
decision, the LLM's request to its first token, the TTS's first byte, the first audio out; or,
on a realtime model, the response and its first token. Which of them the caller waited on (the
critical ones) is read backwards from the end: each step waited on the one that finished last
before it began. The others ran beside them. What no step covers stays ``unexplained``.

A spoken turn's reply may be made while the caller is still being heard (livekit's preemptive
generation): its model answers, and its TTS too with ``preemptive_tts``, before the end of turn,
but livekit runs its tools and plays its audio only once the turn is committed and the reply
scheduled (``AgentActivity._pipeline_reply_task`` waits for ``_wait_for_scheduled`` and the
authorization first). The steps that wait for that start no earlier than the commit, so the
end of turn, not the model, is what the caller waited on up to it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...trace import TraceEvent, TraceSpan
from ..clock import on_trace_clock
from .model import E2E_LATENCY, Breakdown, Phase

if TYPE_CHECKING:
    from ..trace_analysis import TraceAnalysis

TOLERANCE = 0.001
"""seconds two moments may be apart and still be one (a span's end and the event it caused)"""

_REPLY_SPANS = frozenset({"llm_node", "tts_request", "realtime_inference", "function_tool"})
_MODEL_STEPS = frozenset({"llm_first_token", "llm_response", "llm_tool_call", "tts_first_byte"})
_TURN_ENDS = frozenset({"end_of_turn", "end_of_turn_commit", "on_user_turn_completed"})
"""the steps that end a spoken turn: livekit schedules the reply after the last of them"""
_CALL_ENDS = frozenset({"tool", "llm_response", "llm_tool_call"})
"""the steps a model's next round after a tool call waits on: the tool, and the round that
called it (livekit answers once both are over); the stretch after is the tool's output"""

LIVEKIT_TOTALS = (
    E2E_LATENCY,
    "lk.end_of_turn_delay",
    "lk.transcription_delay",
    "lk.on_user_turn_completed_delay",
    "lk.speech.queue_wait",
)
"""the per-turn figures livekit puts on the reply's ``agent_turn`` span, kept as they are"""
MESSAGE_TOTALS = ("llm_node_ttft", "tts_node_ttfb", "playback_latency")
"""the reply message's per-turn figures (``ChatMessage.metrics``) kept beside them"""


def split_turns(analysis: TraceAnalysis) -> list[Breakdown]:
    """Every turn of what ``analysis`` has taken so far that the agent answered, typed or
    spoken, its wait split into phases; in the order the answers began
    (``TraceAnalysis.turns``, ``turn_phases``)."""
    answers = sorted(
        (
            s
            for s in [*analysis.speech, *analysis.speaking]
            if s.speaker == "agent" and s.first_audio_s is not None and s.answers != "handoff"
        ),
        key=lambda s: s.start,
    )
    split = _Splitter(analysis.events, analysis.livekit_spans, analysis.started_at)
    return [
        split.turn(n, s.agent, s.start - s.first_audio_s, s.start, s.answers == "speech")
        for n, s in enumerate(answers, start=1)
        if s.first_audio_s is not None
    ]


@dataclass(frozen=True, slots=True)
class _Step:
    """A phase before the walk decides whether the caller waited on it."""

    name: str
    start: float
    end: float
    livekit: float | None = None
    livekit_name: str | None = None
    note: str = ""
    walk: bool = True
    """whether it may be on the critical path (False: shown beside it only)"""

    def phase(self, critical: bool) -> Phase:
        return Phase(
            self.name,
            self.start,
            self.end,
            critical,
            self.livekit,
            self.livekit_name,
            note=self.note,
        )


class _Splitter:
    def __init__(
        self, events: Sequence[TraceEvent], spans: Sequence[TraceSpan], started_at: float | None
    ) -> None:
        self.events = events
        self.spans = spans
        self.started_at = started_at
        self.by_id = {s.span_id: s for s in spans}
        self.roots = {s.span_id: self._root(s) for s in spans}
        self.began: dict[str, float] = {}
        """each ``agent_turn`` (by id) -> when the first of its spans began"""
        for span in spans:
            root = self.roots[span.span_id]
            if root is not None:
                self.began[root] = min(self.began.get(root, span.start), span.start)

    def turn(self, n: int, agent: str, start: float, end: float, spoken: bool) -> Breakdown:
        reply = self._reply_spans(start, end)
        turn = self._agent_turn(end)
        committed: float | None = None
        if spoken:
            steps, committed = self._user_steps(start, end, reply)
        else:
            steps = self._typed_steps(start, reply)
        steps += self._reply_steps(start, end, reply, committed)
        steps = [_within_wait(s, start, end) for s in steps]
        chain = _critical_path(steps, start, end)
        critical = set(map(id, chain))
        phases = sorted(
            [s.phase(id(s) in critical) for s in steps]
            + [g.phase(True) for g in chain if not any(g is s for s in steps)],
            key=lambda p: (p.start, not p.critical, p.end),
        )
        return Breakdown(
            kind="turn",
            label=f"turn {n} · {'spoken' if spoken else 'typed'}",
            agent=agent,
            start=start,
            end=end,
            phases=tuple(phases),
            speech_id=turn.attributes.get("lk.speech_id") if turn else None,
            spoken=spoken,
            attributes=self._totals(turn, end),
        )

    # -- what happened in the window -------------------------------------------------------

    def _within(self, start: float, end: float, names: frozenset[str]) -> list[TraceSpan]:
        return [
            s
            for s in self.spans
            if s.name in names and start - TOLERANCE <= s.start <= end + TOLERANCE
        ]

    def _reply_spans(self, start: float, end: float) -> list[TraceSpan]:
        """The reply's spans: those begun in the wait, but not any of an earlier reply still
        going on (an ``agent_turn`` begun before the wait, as when the caller barged in)."""
        found = self._within(start, end, _REPLY_SPANS)
        return [s for s in found if self._turn_began(s) >= start - TOLERANCE]

    def _turn_began(self, span: TraceSpan) -> float:
        """When the ``agent_turn`` that ``span`` belongs to began (as far as the trace says:
        an open one is not in it yet, its children are); a span outside any: its own start."""
        root = self.roots.get(span.span_id)
        return span.start if root is None else self.began[root]

    def _root(self, span: TraceSpan) -> str | None:
        """The id of the ``agent_turn`` above ``span`` (None: outside any)."""
        current: TraceSpan | None = span
        while current is not None and current.name != "agent_turn":
            parent = current.parent_id
            if parent is None:
                return None
            found = self.by_id.get(parent)
            if found is None:
                return parent  # an open span: the agent_turn has not ended yet
            current = found
        return current.span_id if current is not None else None

    def _agent_turn(self, end: float) -> TraceSpan | None:
        """The ``agent_turn`` whose speech ended the wait (once it has ended itself)."""
        turns = [
            s
            for s in self.spans
            if s.name == "agent_turn" and s.start - TOLERANCE <= end <= s.end + TOLERANCE
        ]
        return turns[-1] if turns else None

    def _last_event(self, start: float, end: float, kind: str, **data: Any) -> TraceEvent | None:
        found = [
            e
            for e in self.events
            if e.kind == kind
            and start - TOLERANCE <= e.t <= end
            and all(e.data.get(k) == v for k, v in data.items())
        ]
        return found[-1] if found else None

    # -- the caller's side -----------------------------------------------------------------

    def _user_steps(
        self, start: float, end: float, reply: list[TraceSpan]
    ) -> tuple[list[_Step], float | None]:
        """A spoken turn up to its end-of-turn decision, and when livekit committed the turn
        (after ``on_user_turn_completed``: the reply is scheduled then; None: not known)."""
        steps: list[_Step] = []
        message = self._last_event(start, end, "user_message")
        metrics: dict[str, Any] = message.data.get("metrics", {}) if message else {}
        realtime = any(s.name == "realtime_inference" for s in reply)
        vad = self._last_event(start, end, "user_state", old="speaking", new="listening")
        if vad is not None and vad.t - start > TOLERANCE:
            steps.append(_Step("vad_end_of_speech", start, vad.t, note=VAD_NOTE))
        heard = self._last_event(start, end, "user_transcript", final=True)
        if heard is not None:
            steps.append(
                _Step(
                    "final_transcript",
                    start,
                    heard.t,
                    metrics.get("transcription_delay"),
                    "lk.transcription_delay",
                    REALTIME_TRANSCRIPT_NOTE if realtime else "",
                    walk=not realtime,  # a realtime model's reply does not wait on it
                )
            )
        hooks = self._within(start, end, frozenset({"on_user_turn_completed"}))
        for hook in hooks:
            steps.append(
                _Step(
                    "on_user_turn_completed",
                    hook.start,
                    hook.end,
                    metrics.get("on_user_turn_completed_delay"),
                    "lk.on_user_turn_completed_delay",
                    "your Agent.on_user_turn_completed",
                )
            )
        committed = [
            s
            for s in self._within(start, end, frozenset({"eou_wait"}))
            if s.attributes.get("lk.eou.outcome") == "committed"
        ]
        if not committed:
            return steps, None
        wait = committed[-1]
        detections = [
            s
            for s in self._within(start, wait.end, frozenset({"eou_detection"}))
            if s.end <= wait.end + TOLERANCE
        ]
        detection = detections[-1] if detections else None
        if detection is not None:
            steps.append(
                _Step(
                    "eou_detection",
                    detection.start,
                    detection.end,
                    note=_detection_note(detection.attributes),
                )
            )
        delay = wait.attributes.get("lk.eou.endpointing_delay")
        ready = max(
            [detection.end if detection else start]
            + [e.t for e in (heard, vad) if e is not None and e.t <= wait.end]
        )
        held = isinstance(delay, int | float) and start + delay >= ready - TOLERANCE
        steps.append(
            _Step(
                "end_of_turn",
                start,
                wait.end,
                metrics.get("end_of_turn_delay"),
                "lk.end_of_turn_delay",
                _endpointing_note(delay, detection) if held else _decided_note(delay),
                walk=held,
            )
        )
        if not held and wait.end - ready > TOLERANCE:
            steps.append(_Step("end_of_turn_commit", ready, wait.end))
        return steps, max([wait.end, *(h.end for h in hooks if h.start >= wait.end - TOLERANCE)])

    def _typed_steps(self, start: float, reply: list[TraceSpan]) -> list[_Step]:
        """A realtime model is told the typed text (and acknowledges it) before it is asked
        for a response: the user's message is recorded then."""
        inference = [s for s in reply if s.name == "realtime_inference"]
        message = self._last_event(start, inference[0].start, "user_message") if inference else None
        if message is None or message.t - start <= TOLERANCE:
            return []
        return [_Step("message_sync", start, message.t, note=MESSAGE_SYNC_NOTE)]

    # -- the reply -------------------------------------------------------------------------

    def _reply_steps(
        self, start: float, end: float, reply: list[TraceSpan], committed: float | None
    ) -> list[_Step]:
        """The reply's steps; those livekit holds until the turn is ``committed`` (its tools,
        its first audio or text) start no earlier."""
        steps: list[_Step] = []
        producers: list[float] = []
        rounds = [s for s in reply if s.name in ("llm_node", "realtime_inference")]
        for span in reply:
            if span.name in ("llm_node", "realtime_inference"):
                kind, begin, ttft = self._round(span)
                made = _model_steps(kind, begin, span.end, ttft, end)
                steps += made
                producers.append(min(made[0].end, end))
            elif span.name == "function_tool":
                name = span.attributes.get("lk.function_tool.name", "")
                steps.append(_Step("tool", span.start, span.end, note=f"{name}()"))
                called = [r for r in rounds if r.start <= span.start]
                if called and not _held(called[-1], span, committed):
                    # the model's round that called it, up to the call (held: the round's own
                    # steps show it, and the tool waited on the end of turn)
                    kind = "llm" if called[-1].name == "llm_node" else "realtime"
                    steps.append(_Step(f"{kind}_tool_call", called[-1].start, span.start))
        for span in self._within(start, end, frozenset({"update_agent"})):
            steps.append(_Step("handoff", span.start, span.end, note=HANDOFF_NOTE))
        first_byte = self._first_byte(reply, end)
        if first_byte is not None:
            steps.append(first_byte)
            producers.append(first_byte.end)
        audio = first_byte is not None or any(
            s.attributes.get("gen_ai.output.type") == "speech"
            for s in reply
            if s.name == "realtime_inference"
        )
        ready = [t for t in producers if t <= end + TOLERANCE]
        if ready:
            steps.append(
                _Step(
                    "first_audio" if audio else "first_text",
                    min(max([*ready, start if committed is None else committed]), end),
                    end,
                    note=FIRST_AUDIO_NOTE if audio else FIRST_TEXT_NOTE,
                )
            )
        return steps

    def _round(self, span: TraceSpan) -> tuple[str, float, float | None]:
        """A model round's kind, start and time to first token (None: not known). A realtime
        model's counts from its ``response.created`` (livekit's metrics ``timestamp``), a
        little before the span; its metrics come after the response and are lost when the
        span has ended before them, and a response without output (a tool call) has none."""
        attributes = span.attributes
        if span.name == "llm_node":
            return "llm", span.start, _number(attributes, "lk.response.ttft")
        metrics = _json(attributes.get("lk.realtime_model_metrics"))
        created = on_trace_clock(metrics.get("timestamp"), self.started_at)
        ttft = _number(metrics, "ttft")
        if ttft is None:
            ttft = _number(attributes, "gen_ai.response.time_to_first_chunk")
        begin = created if created is not None and created <= span.start else span.start
        return "realtime", begin, ttft if ttft is not None and ttft >= 0 else None

    def _first_byte(self, reply: list[TraceSpan], end: float) -> _Step | None:
        """The TTS request of the first audio: the first begun after the last text the reply
        was made of began coming (a tool call's LLM round is not spoken)."""
        nodes = [s.start for s in reply if s.name in ("llm_node", "realtime_inference")]
        last = max(nodes, default=-float("inf"))
        requests = [s for s in reply if s.name == "tts_request" and s.start >= last]
        if not requests:
            return None
        request = requests[0]
        ttfb = _number(_json(request.attributes.get("lk.tts_metrics")), "ttfb")
        node = self.by_id.get(request.parent_id or "")
        while node is not None and node.name != "tts_node":
            node = self.by_id.get(node.parent_id or "")
        livekit = _number(node.attributes, "lk.response.ttfb") if node is not None else None
        first = request.start + ttfb if ttfb is not None else min(request.end, end)
        return _Step("tts_first_byte", request.start, first, livekit, "tts_node_ttfb")

    def _totals(self, turn: TraceSpan | None, end: float) -> dict[str, float]:
        """livekit's own per-turn figures: the ``agent_turn``'s and the reply message's."""
        totals: dict[str, float] = {}
        if turn is not None:
            for name in LIVEKIT_TOTALS:
                if (value := _number(turn.attributes, name)) is not None:
                    totals[name] = value
        said = next(
            (e for e in self.events if e.kind == "agent_message" and e.t >= end - TOLERANCE),
            None,
        )
        if said is not None:
            metrics = said.data.get("metrics", {})
            for name in MESSAGE_TOTALS:
                if (value := _number(metrics, name)) is not None:
                    totals[name] = value
            e2e = _number(metrics, "e2e_latency")
            if E2E_LATENCY not in totals and e2e is not None:
                totals[E2E_LATENCY] = e2e
        return totals


def _model_steps(
    kind: str, start: float, stop: float, ttft: float | None, end: float
) -> list[_Step]:
    """A model's round from ``start`` to ``stop``: to its first token (livekit's ``ttft``),
    then the rest of its answer when that ended before the wait did (a tool call the reply
    waited on). A first token after the wait ended (a realtime model's audio, its transcript
    already shown) is shown beside the round, which the caller waited on up to the end."""
    livekit_name = "llm_node_ttft" if kind == "llm" else "ttft"
    if ttft is None:
        return [_Step(f"{kind}_response", start, min(stop, end))]
    first = start + ttft
    if first > end + TOLERANCE:
        return [
            _Step(f"{kind}_response", start, min(stop, end)),
            _Step(f"{kind}_first_token", start, first, ttft, livekit_name, walk=False),
        ]
    steps = [_Step(f"{kind}_first_token", start, first, ttft, livekit_name)]
    if stop <= end + TOLERANCE:
        steps.append(_Step(f"{kind}_response", first, stop))
    return steps


def _held(round_: TraceSpan, tool: TraceSpan, committed: float | None) -> bool:
    """Whether ``tool`` waited on the turn's commit rather than on the model's ``round_``
    that called it: the round ended before the commit, the tool began after it."""
    return (
        committed is not None
        and round_.end <= committed + TOLERANCE
        and tool.start >= committed - TOLERANCE
    )


def _within_wait(step: _Step, start: float, end: float) -> _Step:
    """``step`` with an end or start just outside the wait (two clocks, a tick apart) moved
    to the wait's own."""
    if end < step.end <= end + TOLERANCE:
        step = dataclasses.replace(step, end=end)
    if start - TOLERANCE <= step.start < start:
        step = dataclasses.replace(step, start=start)
    return step


def _critical_path(steps: Iterable[_Step], start: float, end: float) -> list[_Step]:
    """The steps the caller waited on, read backwards from ``end``: at each moment the step
    that finished last before it (of two ending together, the later begun); a stretch
    between two that a known step fills is named (``reply_start``, ``first_sentence``,
    ``response_created``), any other stays unexplained."""
    candidates = [s for s in steps if s.walk and s.end > start + TOLERANCE]
    chain: list[_Step] = []
    t, after = end, None
    while t > start + TOLERANCE:
        eligible = [
            s
            for s in candidates
            if s.end <= t + TOLERANCE and s.start >= start - TOLERANCE and s not in chain
        ]
        if not eligible:
            break
        # two that ended in the same moment (a reply's last token and its first audio byte):
        # the one begun later, the narrower, is what was waited on
        last = max(s.end for s in eligible)
        best = max((s for s in eligible if s.end >= last - TOLERANCE), key=lambda s: s.start)
        glue = _glue(best, after, best.end, t) if t - best.end > TOLERANCE else None
        if glue is not None:
            chain.append(glue)
        chain.append(best)
        t, after = min(t, best.start), best
    glue = _glue(None, after, start, t) if t - start > TOLERANCE else None
    if glue is not None:
        chain.append(glue)
    return chain


def _glue(before: _Step | None, after: _Step | None, start: float, end: float) -> _Step | None:
    """The named stretch between two steps of the critical path, if it is a known one."""
    if after is None:
        return None
    if after.name == "tool" and before is not None and before.name in _TURN_ENDS:
        return _Step("reply_start", start, end, note=REPLY_TOOL_NOTE)
    if after.name.startswith("llm") and before is not None and before.name in _CALL_ENDS:
        return _Step("tool_output", start, end, note=TOOL_OUTPUT_NOTE)
    if after.name == "tts_first_byte" and before is not None and before.name.startswith("llm"):
        return _Step("first_sentence", start, end, note=FIRST_SENTENCE_NOTE)
    if after.name.startswith("realtime"):
        return _Step("response_created", start, end, note=RESPONSE_CREATED_NOTE)
    if after.name in _MODEL_STEPS:
        return _Step("reply_start", start, end, note=REPLY_START_NOTE)
    return None


def _number(attributes: Any, name: str) -> float | None:
    value = attributes.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _json(text: Any) -> dict[str, Any]:
    """A JSON object livekit wrote into an attribute (``lk.tts_metrics``...), else empty."""
    if not isinstance(text, str):
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _detection_note(attributes: dict[str, Any]) -> str:
    p, threshold = attributes.get("lk.eou.probability"), attributes.get("lk.eou.unlikely_threshold")
    if not isinstance(p, int | float) or not isinstance(threshold, int | float):
        return "the turn detector's model"
    below = p < threshold
    return (
        f"the turn detector put the end of turn at probability {p:.2f}, "
        f"{'under' if below else 'at or over'} its unlikely_threshold {threshold:.2f}: "
        f"livekit waits its endpointing {'max_delay' if below else 'min_delay'}"
    )


def _endpointing_note(delay: Any, detection: TraceSpan | None) -> str:
    """What made the end-of-turn decision take this long and how to change it (option names
    as livekit-agents 1.8.9 has them: voice/turn.py, voice/audio_recognition.py)."""
    seconds = f"{delay:.2f} s" if isinstance(delay, int | float) else "its delay"
    attributes = detection.attributes if detection is not None else {}
    p, threshold = attributes.get("lk.eou.probability"), attributes.get("lk.eou.unlikely_threshold")
    if isinstance(p, int | float) and isinstance(threshold, int | float) and p < threshold:
        return (
            f"livekit's endpointing max_delay ({seconds}) from the end of speech: its turn "
            f"detector put the end of turn at probability {p:.2f}, under its unlikely_threshold "
            f"{threshold:.2f}, so livekit waited for more speech. The default is 2.5 s with "
            "livekit's turn detector (3.0 s without). Change it with AgentSession("
            "turn_handling={'endpointing': {'max_delay': 1.0}}) (1.8.9 still takes the "
            "deprecated max_endpointing_delay=)"
        )
    return (
        f"livekit's endpointing min_delay ({seconds}) from the end of speech (0.3 s by default "
        "with livekit's turn detector, 0.5 s without). Change it with AgentSession("
        "turn_handling={'endpointing': {'min_delay': 0.2}}) (or the deprecated "
        "min_endpointing_delay=)"
    )


def _decided_note(delay: Any) -> str:
    seconds = f" ({delay:.2f} s)" if isinstance(delay, int | float) else ""
    return (
        f"livekit's endpointing delay{seconds} had passed when the transcript and its "
        "end-of-turn detection came: the turn ended on them"
    )


VAD_NOTE = (
    "silero's VAD calls the speech over after min_silence_duration of silence (0.55 s by "
    "default): silero.VAD.load(min_silence_duration=0.3) (at least 0.25 s with livekit's "
    "turn detector). A non-streaming STT is asked only then"
)
REALTIME_TRANSCRIPT_NOTE = (
    "the model's own transcription of the input; its response does not wait on it"
)
MESSAGE_SYNC_NOTE = (
    "livekit gives the realtime model the typed message (conversation.item.create) and "
    "waits for the model to acknowledge it"
)
RESPONSE_CREATED_NOTE = (
    "until the realtime model created its response (response.created); on speech, its own "
    "turn detection ended the turn first (RealtimeModel(turn_detection=...)): the silence it "
    "waited for is before this wait and not in the trace"
)
REPLY_START_NOTE = (
    "the turn ended or the text arrived, to the reply's first request: livekit schedules the "
    "reply and builds its context (a reply made while the caller spoke, by preemptive "
    "generation, goes on to its TTS)"
)
REPLY_TOOL_NOTE = (
    "the turn ended, to the tool the model had already called: livekit made the reply while "
    "the caller spoke (preemptive generation) but runs its tools only once the turn is over "
    "and the reply scheduled"
)
TOOL_OUTPUT_NOTE = (
    "the tool and the model's round that called it over, to the model's next request: livekit "
    "adds the tool's output to the context and asks the model to answer it"
)
FIRST_SENTENCE_NOTE = "the LLM's text until the first sentence went to the TTS"
FIRST_AUDIO_NOTE = "the first audio to the caller's speaker: livekit's audio output"
FIRST_TEXT_NOTE = "the first text to the caller (no audio output)"
HANDOFF_NOTE = "livekit's update_agent: the handoff (handoff_phases splits it)"
