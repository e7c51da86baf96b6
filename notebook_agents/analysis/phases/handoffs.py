"""Every handoff in a trace split into its phases, from livekit's spans and the trace's own.

livekit's ``update_agent`` span holds a handoff's stages (``drain_agent_activity`` with the old
agent's ``on_exit``, ``start_agent_activity`` with the new one's ``on_enter``); the trace adds
what livekit makes no span of (``realtime_spans``): a fresh session's connect and the new
agent's reply from its request to its first text or audio. The wait runs from the moment the
old agent's tool returned the new one (or livekit began the handoff) to the new agent starting
to speak; the phases on its critical path follow one another, and what ran beside them (a
fresh session's connect while the new agent started) is shown beside them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ...emulator.latency import LatencyModel
from ...modes import UNKNOWN_MODE, mode_label
from ...speech.tokens import tokens
from ...trace import Trace, TraceEvent, TraceSpan
from ...trace.realtime_spans import (
    ACQUIRE_TIME,
    CONNECT_SPAN,
    CREATED,
    FIRST_AUDIO,
    FIRST_TEXT,
    RESPONSE_ID,
    RESPONSE_SPAN,
)
from ..network_truth import PhaseTruths, connect_awaited, network, truths_of
from .model import Breakdown, Phase

CONNECT_NOTE = (
    "a fresh realtime session connects its own websocket: give the new agent no llm= of its "
    "own (the session's RealtimeModel) to reuse the open session instead"
)

TOOL_REPLY_NOTE = (
    "the old agent answered its tool's output before the new one started: return the agent "
    "alone (or ToolResult(..., reply_required=False)) to hand off without it"
)

_SLACK = 0.05
"""seconds between two clocks' readings of one moment (livekit's spans are timed on the wall
clock, the trace's events on the monotonic one) within which they count as the same"""


def handoff_phases(
    trace: Trace, latency: LatencyModel | None = None, *, truths: PhaseTruths | None = None
) -> list[Breakdown]:
    """Each handoff between two agents in ``trace``, split into its phases (``HANDOFF_PHASES``
    names them).

    ``latency``: the emulator's network the session ran on (what its ``base_url`` asked for);
    each phase then has its truth, the network's share of it, and ``Phase.client`` the rest
    (``truths``: the provider's; by default those of the provider the trace's usage names).
    A handoff is labelled by what happened (``reused+copied``...): a fresh connect seen during
    it makes it ``fresh``. Needs the trace's spans (a ``NotebookRunner``'s trace has them); a
    trace without them has no handoffs to split.
    """
    latency = network(latency)
    truths = truths or truths_of(trace)
    spans = _Spans(trace.spans)
    events = trace.events
    updates = spans.named("update_agent")
    ends = [later.start for later in updates[1:]] + [math.inf] if updates else []
    return [
        _split(update, until, spans, events, latency, truths)
        for update, until in zip(updates, ends, strict=True)
    ]


class _Spans:
    """A trace's spans by name and by parent."""

    def __init__(self, spans: Iterable[TraceSpan]) -> None:
        self.all = sorted(spans, key=lambda s: s.start)
        self._by_id = {s.span_id: s for s in self.all}

    def named(self, *names: str) -> list[TraceSpan]:
        return [s for s in self.all if s.name in names]

    def child(self, parent: TraceSpan | None, *names: str) -> TraceSpan | None:
        if parent is None:
            return None
        return next(
            (s for s in self.all if s.parent_id == parent.span_id and s.name in names), None
        )

    def parent(self, span: TraceSpan) -> TraceSpan | None:
        return self._by_id.get(span.parent_id) if span.parent_id else None


@dataclass
class _Reply:
    """The new agent's first reply: its request, creation, first text and audio, and when
    livekit began playing it (trace seconds; None where unknown)."""

    requested: float | None = None
    created: float | None = None
    first_text: float | None = None
    first_audio: float | None = None
    playing: float | None = None
    turn: TraceSpan | None = None
    ttft: float | None = None
    """livekit's ``ttft`` of the response (``lk.realtime_model_metrics``)"""


def _split(
    update: TraceSpan,
    until: float,
    spans: _Spans,
    events: list[TraceEvent],
    latency: LatencyModel | None,
    phase_truths: PhaseTruths,
) -> Breakdown:
    """One handoff (livekit's ``update_agent`` span), before the next one starts at ``until``."""
    stages = _Stages.of(update, spans)
    event = _handoff_event(update, stages.started, events)
    reply = _reply(update, stages.started, spans, events, event)
    # the new agent's own session connecting: after it started, before its reply was created
    limit = reply.created if reply.created is not None else until
    connect = next(
        (s for s in spans.named(CONNECT_SPAN) if stages.started <= s.start <= limit), None
    )
    session, context = _what_happened(event, connect)
    truths = (
        phase_truths(
            session,
            context,
            int(event.data.get("items_to", 0)),
            latency,
            tool=bool(stages.tool),
            tool_reply=_tool_reply_tokens(update, stages, events, event),
        )
        if latency is not None and event is not None and session and context
        else {}
    )
    critical, beside = _paths(stages, connect, connect_awaited(session or "", context or ""))
    critical += _reply_steps(reply)
    if reply.first_audio is not None and reply.first_text is not None and reply.created is not None:
        beside.append(_Step("first_text", reply.first_text, start=reply.created))
    start = stages.tool.end if stages.tool is not None else update.start
    phases = [
        *_chained(start, critical, truths),
        *(step.beside(step.start if step.start is not None else start, truths) for step in beside),
    ]
    source, target = (
        (str(event.data["from"]), str(event.data["to"]))
        if event is not None
        else (
            str(update.attributes.get("lk.previous_agent_label", "")),
            str(update.attributes.get("lk.agent_label", "")),
        )
    )
    mode = mode_label(session, context) if context else UNKNOWN_MODE
    attributes = {"update_agent": update.end - update.start}
    if reply.ttft is not None:
        attributes["ttft"] = reply.ttft
    on_path = [p for p in phases if p.critical]
    return Breakdown(
        kind="handoff",
        label=f"{source} → {target} · {mode}",
        agent=target,
        start=start,
        end=on_path[-1].end if on_path else start,
        phases=tuple(sorted(phases, key=lambda p: (p.start, p.end))),
        speech_id=_speech_id(reply.turn),
        mode=mode,
        spoken=reply.first_audio is not None,
        attributes=attributes,
    )


@dataclass
class _Stages:
    """livekit's spans of one handoff: the old agent's drain (or pause) and ``on_exit``, the
    new one's start (or resume) and ``on_enter``, and the tool that handed off."""

    old: TraceSpan | None
    on_exit: TraceSpan | None
    new: TraceSpan | None
    on_enter: TraceSpan | None
    tool: TraceSpan | None
    answer: TraceSpan | None
    """the old agent's reply to its tool's output, which its drain waited for"""
    began: float
    """when livekit began the handoff"""
    started: float
    """when the new agent's start began (else the handoff's)"""

    @classmethod
    def of(cls, update: TraceSpan, spans: _Spans) -> _Stages:
        old = spans.child(update, "drain_agent_activity", "pause_agent_activity")
        new = spans.child(update, "start_agent_activity", "resume_agent_activity")
        on_exit = spans.child(old, "on_exit")
        # a response requested while the old agent drained, after its on_exit (which may
        # speak): its answer to the tool's output
        after = on_exit.end if on_exit is not None else old.start if old is not None else 0.0
        answer = (
            next((s for s in spans.named(RESPONSE_SPAN) if after <= s.start <= old.end), None)
            if old is not None
            else None
        )
        return cls(
            old=old,
            on_exit=on_exit,
            new=new,
            on_enter=spans.child(new, "on_enter"),
            tool=_handing_tool(update, spans),
            answer=answer,
            began=update.start,
            started=new.start if new is not None else update.start,
        )


def _paths(
    stages: _Stages, connect: TraceSpan | None, awaited: bool
) -> tuple[list[_Step], list[_Step]]:
    """The steps up to the new agent's reply: those on the critical path, and those beside it
    (a fresh session connecting while the new agent starts, or the other way round)."""
    critical: list[_Step] = []
    if stages.tool is not None:
        critical.append(_Step("tool_return", stages.began))
    if stages.on_exit is not None:
        critical.append(_Step("on_exit", stages.on_exit.end, stages.on_exit))
    if stages.old is not None and stages.answer is not None:
        # the drain synced the tool's output, then waited for the old agent's answer to it
        critical.append(_Step("drain", stages.answer.start))
        critical.append(_Step("tool_reply", stages.old.end, note=TOOL_REPLY_NOTE))
    elif stages.old is not None:
        critical.append(_Step("drain", stages.old.end, stages.old))
    new, on_enter = stages.new, stages.on_enter
    if new is not None:  # livekit closes the old activity, then starts the new one
        critical.append(_Step("close", new.start))
    set_up = [
        _Step(name, span.end, span)
        for name, span in (("session_update", new), ("on_enter", on_enter))
        if span is not None
    ]
    if connect is None:
        return critical + set_up, []
    joined = _Step(
        "connect",
        connect.end,
        livekit=connect.attributes.get(ACQUIRE_TIME),
        livekit_name="acquire_time",
        note=CONNECT_NOTE,
        start=connect.start,
    )
    if awaited or (new is not None and connect.end <= new.end):  # the update waited for it
        return [*critical, joined, *set_up], []
    if set_up and connect.end < set_up[-1].end:  # the set-up took longer: it gated the reply
        return critical + set_up, [joined]
    return [*critical, joined], set_up  # the reply waited for the connect


@dataclass
class _Step:
    """A phase by the moment it ends, and livekit's span of it (if any): chained on the
    critical path (``_chained``), or shown beside it from its own start."""

    name: str
    end: float
    span: TraceSpan | None = None
    livekit: float | None = None
    livekit_name: str | None = None
    note: str = ""
    start: float | None = None
    """where it began, for a step shown beside the critical path (default: its span's start)"""

    def __post_init__(self) -> None:
        if self.span is not None and self.livekit is None:
            self.livekit, self.livekit_name = self.span.end - self.span.start, self.span.name
        if self.span is not None and self.start is None:
            self.start = self.span.start

    def phase(self, start: float, end: float, truths: dict[str, float], critical: bool) -> Phase:
        return Phase(
            self.name,
            start,
            end,
            critical=critical,
            livekit=self.livekit,
            livekit_name=self.livekit_name,
            truth=truths.get(self.name),
            note=self.note,
        )

    def beside(self, start: float, truths: dict[str, float]) -> Phase:
        """As a phase beside the critical path, from ``start`` (its own, where it has one)."""
        return self.phase(start, self.end, truths, critical=False)


def _chained(start: float, steps: list[_Step], truths: dict[str, float]) -> list[Phase]:
    """The critical phases one after another from ``start``: each ends when its moment came,
    but never after a later one (an ``on_enter`` that awaited its reply ends, on the critical
    path, when it requested it) nor before the one before it."""
    ends = [step.end for step in steps]
    for i in range(len(ends) - 2, -1, -1):
        ends[i] = min(ends[i], ends[i + 1])
    phases, cursor = [], start
    for step, end in zip(steps, ends, strict=True):
        end = max(end, cursor)
        phases.append(step.phase(cursor, end, truths, critical=True))
        cursor = end
    return phases


def _reply_steps(reply: _Reply) -> Iterator[_Step]:
    if reply.requested is not None:
        yield _Step("reply_request", reply.requested)
    if reply.created is not None:
        yield _Step("reply_created", reply.created)
    first, name = (
        (reply.first_audio, "first_audio")
        if reply.first_audio is not None
        else (reply.first_text, "first_text")
    )
    if first is not None:
        yield _Step(
            name, first, livekit=reply.ttft, livekit_name="ttft" if reply.ttft is not None else None
        )
    if reply.playing is not None:
        yield _Step("playout", reply.playing)


def _handoff_event(
    update: TraceSpan, started: float, events: list[TraceEvent]
) -> TraceEvent | None:
    """The trace's ``handoff`` event of it: recorded as the new agent starts (on the events'
    clock, within ``_SLACK`` of livekit's span)."""
    found = min(
        (e for e in events if e.kind == "handoff" and e.data.get("from")),
        key=lambda e: abs(e.t - started),
        default=None,
    )
    if found is not None and update.start - _SLACK <= found.t <= update.end + _SLACK:
        return found
    return None


def _tool_reply_tokens(
    update: TraceSpan, stages: _Stages, events: list[TraceEvent], event: TraceEvent
) -> int | None:
    """The deltas of the old agent's answer to its tool's output that the drain waited for
    (the trace's message of it), or None if it waited for none."""
    if stages.answer is None:
        return None
    said = next(
        (
            e
            for e in events
            if e.kind == "agent_message"
            and e.data.get("source") == "tool_reply"
            and e.agent == event.data.get("from")
            and update.start - _SLACK <= e.t <= stages.started + _SLACK
        ),
        None,
    )
    return len(tokens(str(said.data.get("text") or ""))) if said is not None else 0


def _handing_tool(update: TraceSpan, spans: _Spans) -> TraceSpan | None:
    """The tool that returned the new agent: it ended in the turn still running when livekit
    began the handoff, last before it."""
    found = None
    for tool in spans.named("function_tool"):
        turn = spans.parent(tool)
        if (
            tool.end <= update.start
            and turn is not None
            and turn.name == "agent_turn"
            and turn.start <= update.start <= turn.end
            and (found is None or tool.end > found.end)
        ):
            found = tool
    return found


def _reply(
    update: TraceSpan,
    started: float,
    spans: _Spans,
    events: list[TraceEvent],
    event: TraceEvent | None,
) -> _Reply:
    """The new agent's first reply after the handoff: our ``realtime_response`` span of it
    and livekit's turn, else livekit's turn alone (a trace without our spans, a cascaded
    model)."""
    reply = _Reply()
    response = next((s for s in spans.named(RESPONSE_SPAN) if s.start >= started), None)
    label = update.attributes.get("lk.agent_label")
    turns = [
        s
        for s in spans.named("agent_turn")
        if s.start >= started and s.attributes.get("gen_ai.agent.name", label) == label
    ]
    if response is not None:
        marks = {e["name"]: e["t"] for e in response.events}
        reply.requested = response.start
        reply.created = marks.get(CREATED)
        reply.first_text, reply.first_audio = marks.get(FIRST_TEXT), marks.get(FIRST_AUDIO)
        answer = response.attributes.get(RESPONSE_ID)
        # livekit names the response on its span once the response's metrics came (they may
        # come after the span ended); else its turn is the first to start once it was created
        created = reply.created if reply.created is not None else response.start
        reply.turn = next(
            (t for t in turns if _inference_attribute(spans, t, RESPONSE_ID) == answer),
            next((t for t in turns if t.start >= created - _SLACK), None),
        )
    else:
        reply.turn = turns[0] if turns else None
        inference = spans.child(reply.turn, "realtime_inference")
        reply.created = inference.start if inference is not None else None
        # a chat model's: its request, and its first chunk ttft after (livekit's figure)
        request = spans.child(spans.child(reply.turn, "llm_node"), "llm_request")
        if request is not None:
            reply.requested, reply.ttft = request.start, _metric(request, "lk.llm_metrics")
            if reply.ttft is not None:
                reply.first_text = request.start + reply.ttft
    inference = spans.child(reply.turn, "realtime_inference")
    if inference is not None:
        reply.ttft = _metric(inference, "lk.realtime_model_metrics")
    speaking = spans.child(reply.turn, "agent_speaking")
    if speaking is not None:
        reply.playing = speaking.start
    elif event is not None:  # livekit's span of it missing: the trace's own state change
        reply.playing = next(
            (
                e.t
                for e in events
                if e.kind == "agent_state"
                and e.agent == event.data["to"]
                and e.data.get("new") == "speaking"
                and e.t >= (reply.created or started)
            ),
            None,
        )
    return reply


def _inference_attribute(spans: _Spans, turn: TraceSpan, name: str) -> Any:
    inference = spans.child(turn, "realtime_inference")
    return inference.attributes.get(name) if inference is not None else None


def _metric(span: TraceSpan, attribute: str, name: str = "ttft") -> float | None:
    """A figure of livekit's metrics that ``span`` carries as JSON (None where it says -1)."""
    raw = span.attributes.get(attribute)
    try:
        found = json.loads(raw).get(name) if isinstance(raw, str) else None
    except ValueError:
        return None
    return float(found) if isinstance(found, (int, float)) and found >= 0 else None


def _what_happened(
    event: TraceEvent | None, connect: TraceSpan | None
) -> tuple[str | None, str | None]:
    """The session (reused/fresh/none) and the context (copied/empty/own) as the handoff left
    them: the trace's reading of it, a fresh connection during it overruling the session."""
    session = event.data.get("session") if event is not None else None
    context = event.data.get("context") if event is not None else None
    if connect is not None:
        session = "fresh"
    return session, context


def _speech_id(turn: TraceSpan | None) -> str | None:
    found: Any = turn.attributes.get("lk.speech_id") if turn is not None else None
    return found if isinstance(found, str) else None
