"""What a trace says happened, computed once: the agents in order of appearance, each one's
state over time, the handoffs and each new agent's bring-up, the stretches with no events, who
spoke when and how long the caller waited, and where each turn's wait went.

Engine side (no views, no widgets): the views draw from it, notebook 03 measures bring-ups with
it, and it reads a loaded trace as well as a live one. ``TraceAnalysis`` takes events (and
livekit's spans) one at a time, so a live view updates it as they arrive;
``TraceAnalysis(trace)`` reads a whole trace, on its clock and with its spans (so does
``TraceAnalysis(trace.events)``: a trace's event list carries both; ``TraceAnalysis.of``).

The caller's wait is defined here, once: from the end of the caller's speech (livekit's
``stopped_speaking_at``, where ``lk.e2e_latency`` counts from), or from the moment typed text
reached the session, to the first audio out (the agent's state turning ``speaking``; the first
text when there is no audio). ``Speech.first_audio_s`` and each turn's ``Breakdown`` use it.
A reply can begin before livekit's VAD has ended the speech it answers (a realtime model's
server heard the end first): its wait is then livekit's own ``e2e_latency`` for it, counted
from where the VAD put the end once it did (``Speech.overlapped``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from .._table import Table
from ..modes import UNKNOWN_MODE, mode_label
from ..trace import Trace, TraceEvent, TraceEvents, TraceSpan
from .clock import is_number, on_trace_clock, speech_ended_at, text_sent_at
from .phases.model import Breakdown
from .phases.table import PhaseRow, phase_rows, phase_table
from .phases.turns import split_turns

IDLE_AFTER = 3.0
"""seconds without any event after which a stretch counts as idle (views shorten it)"""
WAITING_STATES = ("listening", "idle")
"""agent states that wait on the caller: only then is a quiet stretch idle (a long quiet
``thinking`` is the agent or its model being slow, which is worth seeing at full length)"""
SPOKEN_METRICS = frozenset({"started_speaking_at", "stopped_speaking_at"})
"""what livekit measures of a user message that was spoken (a typed one has neither)"""

Prompt = Literal["speech", "text", "handoff"]
"""what an agent's speech answered: the caller's speech, their typed text, or a handoff no one
asked for"""


@dataclass(frozen=True, slots=True)
class Span:
    """``agent`` in ``state`` from ``start`` to ``end`` (trace seconds)."""

    agent: str
    start: float
    end: float
    state: str


class Opened(NamedTuple):
    """The span still open: ``agent`` in ``state`` since ``start``."""

    agent: str
    start: float
    state: str


@dataclass(frozen=True, slots=True)
class Handoff:
    """The session moving to ``target``; ``source`` None: the first agent starting."""

    seq: int
    t: float
    source: str | None
    target: str
    session: str | None
    """``reused``, ``fresh`` or ``none`` (no realtime model); None for the first agent"""
    context: str | None
    """``copied``, ``empty`` or ``own``; None for the first agent"""

    @property
    def mode(self) -> str:
        """``"reused+copied"``, as the bench names and colours it; ``"unknown"`` when the trace
        does not say (an agent in another process)."""
        if self.source is not None and self.context is None:
            return UNKNOWN_MODE
        return mode_label(self.session, self.context or "")

    @property
    def label(self) -> str:
        """``"reused · copied"``; empty for the first agent."""
        return handoff_label(
            {"from": self.source, "session": self.session, "context": self.context}
        )


@dataclass(frozen=True, slots=True)
class BringUp:
    """From a handoff to the new agent's first words: what a caller waits through."""

    handoff: Handoff
    end: float

    @property
    def agent(self) -> str:
        return self.handoff.target

    @property
    def start(self) -> float:
        return self.handoff.t

    @property
    def seconds(self) -> float:
        return self.end - self.handoff.t


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch longer than the idle threshold with no event at all, between two events,
    while the agent waited on the caller (or no agent was active)."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Speech:
    """Someone speaking from ``start`` to ``end`` (trace seconds): the user (to ``agent``, the
    active one) or ``agent``, with what was said."""

    speaker: Literal["user", "agent"]
    agent: str
    start: float
    end: float
    text: str = ""
    """the user's final transcript; the agent's reply as far as it was heard"""
    first_audio_s: float | None = None
    """an agent's: how long the caller waited for its first audio (or text), from the end of
    the caller's speech it answers (a handoff in between included; after a barge-in, the end
    of the speech that cut the agent short), from the caller's typed text reaching the
    session, else from an unasked handoff to it (a reply begun before livekit's VAD ended the
    speech it answers: see ``overlapped``); None when it spoke unprompted: nothing was said
    since its last speech began but talk-over (the caller spoke over it and did not cut it
    short), or it resumed after a false interruption. With the trace's ``started_at`` the
    caller's speech ends where livekit's VAD put it (``stopped_speaking_at``: the wait is
    ``lk.e2e_latency`` as the trace saw it); without it, where the VAD said so, its
    ``min_silence_duration`` later, and a typed turn's wait starts at the user's message."""
    interrupted: bool = False
    """an agent's reply the user spoke over (barge-in): ``text`` is what was heard"""
    answers: Prompt | None = None
    """an agent's: what its ``first_audio_s`` counts from (None with it)"""
    overlapped: bool = False
    """an agent's reply that began while livekit still had the caller speaking: a turn was
    taken from their speech (a realtime model's server heard its end) before livekit's own
    VAD ended it. Its ``first_audio_s`` counts from where that VAD put the end of the speech,
    as livekit's ``e2e_latency`` on the reply's message does (the caller's speech ends there
    too); until the message says it, or if it never does, 0.0: the reply came while the
    caller was, as far as the trace knew, still speaking."""

    @property
    def seconds(self) -> float:
        return self.end - self.start


class TraceAnalysis:
    """Lanes, state spans, handoffs, bring-ups, idle gaps, speech and turns of events fed in
    order (and of livekit's spans, for the turns' phases).

    The agent state is the session's: a handoff ends the old agent's span and starts the new
    agent's in the same state. A bring-up ends at the new agent's first words: its state
    turning ``speaking``, or its first message if that comes first; a handoff after which its
    agent never spoke (another handoff or the end came first) has none, nor has the first agent.
    ``started_at`` (the trace's) puts livekit's wall-clock times on the trace's clock: without
    it the caller's wait is measured from later moments (see ``Speech.first_audio_s``). A
    ``Trace``, or its ``events``, brings its own clock and spans.
    """

    def __init__(
        self,
        events: Trace | Iterable[TraceEvent] = (),
        idle_after: float = IDLE_AFTER,
        *,
        started_at: float | None = None,
        spans: Iterable[TraceSpan] | None = None,
    ) -> None:
        if isinstance(events, Trace):
            events = events.events
        if isinstance(events, TraceEvents):  # a trace's: on its clock, beside its spans
            started_at = events.started_at if started_at is None else started_at
            spans = events.spans if spans is None else spans
        self.idle_after = idle_after
        self.started_at = started_at
        """the trace's wall-clock time of t = 0 (``Trace.started_at``)"""
        self.events: list[TraceEvent] = []
        """every event taken, in order"""
        self.livekit_spans: list[TraceSpan] = list(spans or ())
        """livekit's OpenTelemetry spans taken (``Trace.spans``), for the turns' phases"""
        self.lanes: list[str] = []
        """agents in order of first appearance"""
        self.spans: list[Span] = []
        """closed spans, in time order (the open one is ``open_span``)"""
        self.handoffs: list[Handoff] = []
        self.bring_ups: list[BringUp] = []
        self.gaps: list[Gap] = []
        self.speech: list[Speech] = []
        """user and agent speech, in the order each ended"""
        self.start: float | None = None
        """the first event's time"""
        self.end: float | None = None
        """the last event's time"""
        self._lane_of: dict[str, int] = {}
        self.opened: Opened | None = None
        """the span still open (``open_span`` gives it its end so far)"""
        self._state = "initializing"
        self._arriving: Handoff | None = None
        self._speaking: dict[str, Speech] = {}
        """speaker -> the speech still open"""
        self._prompt: _Prompt | None = None
        """what the next agent speech answers: the caller's speech, else an unasked handoff"""
        self._over: float | None = None
        """the open user speech began over the agent speech that started then"""
        self._overlapped = False
        """an agent speech started while the open user speech went on: it answered that
        speech (whose end was recorded late) or spoke over it; either way no later one does"""
        self._unsaid = False
        """the last agent speech's words have not come yet"""
        self._paused = False
        """the last agent speech stopped while the caller spoke, before its words came: livekit
        paused it on a possible false interruption, and the next one may be it resuming"""
        self._said: tuple[float, bool] | None = None
        """the start of the last agent speech that got its words, and whether it was cut"""
        self._turn_taken = False
        """a spoken turn was taken from the open user speech: livekit's VAD lags the model's"""
        self._early: float | None = None
        """the start of the last agent speech, if it began over the caller's open speech with
        nothing else to answer and its words have not come: they may say it answered it"""
        self._user_ends_at: float | None = None
        """where livekit's VAD put the end of the open user speech, known before it says so"""
        for event in events:
            self.add(event)

    @classmethod
    def of(cls, trace: Trace, idle_after: float = IDLE_AFTER) -> TraceAnalysis:
        """A whole trace, live or loaded: its events, its spans and its clock (as
        ``TraceAnalysis(trace)``)."""
        return cls(trace, idle_after)

    def add_span(self, span: TraceSpan) -> None:
        """Take a span livekit ended (``Trace.spans`` lists them as they end)."""
        self.livekit_spans.append(span)

    @property
    def speaking(self) -> list[Speech]:
        """The speech still going on (its ``end`` is its start until it ends)."""
        return list(self._speaking.values())

    def turns(self) -> list[Breakdown]:
        """Each turn's wait split into phases (``turn_phases``), so far."""
        return split_turns(self)

    def phase_rows(self) -> list[PhaseRow]:
        """``turns()`` as rows, one per phase per turn and one for each wait."""
        return phase_rows(self.turns())

    def phase_table(self) -> Table[PhaseRow]:
        """``turns()`` as a table: text with ``str()``, HTML in a notebook."""
        return phase_table(self.turns())

    def lane(self, agent: str) -> int:
        """``agent``'s lane, added after the others on first sight."""
        if agent not in self._lane_of:
            self._lane_of[agent] = len(self.lanes)
            self.lanes.append(agent)
        return self._lane_of[agent]

    @property
    def open_span(self) -> Span | None:
        """The span still open, up to the last event so far."""
        if self.opened is None or self.end is None:
            return None
        agent, start, state = self.opened
        return Span(agent, start, self.end, state)

    @property
    def waiting(self) -> bool:
        """Whether the session waits on the caller now (a quiet stretch from here is idle)."""
        return self.opened is None or self.opened.state in WAITING_STATES

    def state_spans(self) -> list[Span]:
        """Every span, the open one ending at the last event; none of zero length."""
        last = self.open_span
        return self.spans + ([last] if last is not None and last.end > last.start else [])

    def add(self, event: TraceEvent) -> None:
        """Take the next event (in recording order)."""
        self.events.append(event)
        if self.end is not None and event.t - self.end > self.idle_after and self.waiting:
            self.gaps.append(Gap(self.end, event.t))
        self.start = event.t if self.start is None else self.start
        self.end = event.t if self.end is None else max(self.end, event.t)
        if event.agent:
            self.lane(event.agent)
        arriving = self._arriving
        if arriving is not None and event.agent == arriving.target and _first_words(event):
            self.bring_ups.append(BringUp(arriving, event.t))
            self._arriving = None
        if event.kind in _SPEECH_KINDS:
            self._follow_speech(event)
        if event.kind == "agent_state":
            self._state = event.data["new"]
            current = self.opened.agent if self.opened else None
            self._switch(event.agent or current, event.t)
        elif event.kind == "handoff" and event.data.get("to"):
            handoff = _handoff(event)
            self.handoffs.append(handoff)
            if handoff.source:
                self.lane(handoff.source)
            self.lane(handoff.target)
            self._switch(handoff.target, event.t)
            self._arriving = handoff if handoff.source else None
            if handoff.source and self._prompt is None:  # an agent handing over unasked
                self._prompt = _Prompt(event.t, None, "handoff")
        elif event.kind == "closed":
            self._switch(None, event.t)
            self._arriving = None

    def _follow_speech(self, event: TraceEvent) -> None:
        """Open and close speech on user and agent state; give it its words."""
        data, agent = event.data, event.agent or ""
        if event.kind in ("user_state", "agent_state"):
            speaker: Literal["user", "agent"] = "user" if event.kind == "user_state" else "agent"
            if data["new"] == "speaking" and speaker not in self._speaking:
                waited = self._agent_began(event.t) if speaker == "agent" else _UNPROMPTED
                if speaker == "user":
                    self._user_began()
                self._speaking[speaker] = Speech(
                    speaker, agent, event.t, event.t, "", waited.first_audio_s,
                    answers=waited.answers, overlapped=waited.overlapped,
                )  # fmt: skip
            elif data["old"] == "speaking" and speaker in self._speaking:
                opened = self._speaking.pop(speaker)
                end = event.t
                if speaker == "user" and self._user_ends_at is not None:
                    end, self._user_ends_at = min(end, self._user_ends_at), None
                self.speech.append(dataclasses.replace(opened, end=end))
                if speaker == "user":
                    self._user_ended(end)
                else:  # stopped while the caller speaks, not yet done: paused, not cut
                    self._paused = "user" in self._speaking and self._unsaid
        elif event.kind == "user_transcript" and data["final"]:
            self._give_words("user", data["text"], False)
        elif event.kind == "agent_message":
            said = self._give_words("agent", data["text"], bool(data.get("interrupted")))
            if said is not None and said == self._early:
                self._answered_early(said, data.get("metrics") or {})
        elif event.kind == "user_message":
            self._user_message(event)

    def _agent_began(self, t: float) -> _Waited:
        """An agent speech starts at ``t``: how long the caller waited for it and what it
        answers, if it answers."""
        prompt, resumed, taken = self._prompt, self._paused, self._turn_taken
        self._prompt, self._paused, self._unsaid, self._turn_taken = None, False, True, False
        self._early = None
        if "user" in self._speaking:
            self._overlapped = True
            if prompt is None and not resumed:
                # livekit's VAD has not ended the caller's speech: this answers it if a turn
                # was taken from it (else its message's e2e_latency will say so)
                self._early = t
                return _Waited(0.0, "speech", overlapped=True) if taken else _UNPROMPTED
        if prompt is None or resumed:
            return _UNPROMPTED
        return _Waited(t - prompt.end, prompt.kind)

    def _answered_early(self, start: float, metrics: Mapping[str, Any]) -> None:
        """The words of the agent speech that began at ``start``, before livekit's VAD ended
        the caller's speech, came with livekit's figures: if they say it answered that speech
        (its ``e2e_latency``, from the end of speech the VAD put there), the caller waited
        that long and their speech ended there."""
        self._early = None
        e2e, first_frame = metrics.get("e2e_latency"), metrics.get("started_speaking_at")
        if not is_number(e2e):
            return
        ended = on_trace_clock(
            first_frame - e2e if is_number(first_frame) else None, self.started_at
        )
        waited = max(0.0, e2e if ended is None else start - ended)
        self._replace_speech(
            "agent", start, first_audio_s=waited, answers="speech", overlapped=True
        )
        if ended is None:
            return
        caller = self._speaking.get("user")
        if caller is not None and caller.start <= ended:
            self._user_ends_at = ended  # the speech it answered is still open: the VAD lags
        else:
            self._user_stopped_at(ended)

    def _replace_speech(self, speaker: str, start: float, **fields: Any) -> None:
        """Set ``fields`` of ``speaker``'s speech that began at ``start`` (open or ended)."""
        opened = self._speaking.get(speaker)
        if opened is not None and opened.start == start:
            self._speaking[speaker] = dataclasses.replace(opened, **fields)
            return
        for i in range(len(self.speech) - 1, -1, -1):
            said = self.speech[i]
            if said.speaker == speaker and said.start == start:
                self.speech[i] = dataclasses.replace(said, **fields)
                return

    def _user_message(self, event: TraceEvent) -> None:
        """A spoken message says where the caller's speech ended (``speech_ended_at``); a
        typed one is what the next agent speech answers, from when it reached the session."""
        data = event.data
        metrics = data.get("metrics") or {}
        if SPOKEN_METRICS & metrics.keys():
            ended = speech_ended_at(metrics, self.started_at)
            if ended is not None:
                self._user_stopped_at(ended)
            # taken while livekit's VAD still hears the caller: the model's server ended it
            self._turn_taken = "user" in self._speaking
        elif self._prompt is None or self._prompt.kind != "speech":  # not a spoken turn's
            sent = text_sent_at(data, self.started_at)
            self._prompt = _Prompt(event.t if sent is None else min(sent, event.t), None, "text")

    def _user_stopped_at(self, t: float) -> None:
        """The caller's last speech really ended at ``t``, before the VAD said so: it and the
        wait for what answers it end and start there."""
        for i in range(len(self.speech) - 1, -1, -1):
            said = self.speech[i]
            if said.speaker == "user":
                if said.start <= t < said.end:
                    self.speech[i] = dataclasses.replace(said, end=t)
                    prompt = self._prompt
                    if prompt is not None and prompt.kind == "speech" and prompt.end == said.end:
                        self._prompt = prompt._replace(end=t)
                return

    def _user_began(self) -> None:
        agent = self._speaking.get("agent")
        self._over, self._overlapped = (agent.start if agent else None), False
        self._turn_taken = False

    def _user_ended(self, t: float) -> None:
        """The caller stopped at ``t``: what the next agent speech answers, unless an agent
        speech began meanwhile, or the caller only talked over one that went on uncut."""
        over = self._over
        if self._overlapped or (over is not None and self._said == (over, False)):
            return
        self._prompt = _Prompt(t, over, "speech")

    def _agent_said(self, start: float, interrupted: bool) -> None:
        """The words of the agent speech that began at ``start`` came: whether it was cut."""
        self._said, self._unsaid, self._paused = (start, interrupted), False, False
        prompt = self._prompt
        if prompt is not None and prompt.over == start and not interrupted:
            self._prompt = None  # the caller talked over it: it went on, nothing to answer

    def _give_words(self, speaker: str, text: str, interrupted: bool) -> float | None:
        """The words of ``speaker``'s open speech, else of their last one still without: the
        start of the speech they went to, if any."""
        if speaker in self._speaking:
            opened = self._speaking[speaker]
            self._speaking[speaker] = dataclasses.replace(
                opened, text=text, interrupted=interrupted
            )
            if speaker == "agent":
                self._agent_said(opened.start, interrupted)
            return opened.start
        for i in range(len(self.speech) - 1, -1, -1):
            said = self.speech[i]
            if said.speaker == speaker:
                if not said.text:
                    self.speech[i] = dataclasses.replace(said, text=text, interrupted=interrupted)
                    if speaker == "agent":
                        self._agent_said(said.start, interrupted)
                    return said.start
                return None
        return None

    def _switch(self, agent: str | None, t: float) -> None:
        """End the open span at ``t``; ``agent``'s starts there in the session's state."""
        opened = self.opened
        if opened is not None and t > opened.start:
            self.spans.append(Span(opened.agent, opened.start, t, opened.state))
        self.opened = Opened(agent, t, self._state) if agent else None


class _Waited(NamedTuple):
    """What an agent speech answers, as it begins: ``Speech``'s fields of the same names."""

    first_audio_s: float | None
    answers: Prompt | None
    overlapped: bool = False


_UNPROMPTED = _Waited(None, None)


class _Prompt(NamedTuple):
    """What an agent speech may answer: a stretch of the caller's speech, or a handoff."""

    end: float
    """when it ended: the caller's wait for the answer counts from here"""
    over: float | None
    """the start of the agent speech the caller began speaking over (a barge-in if it was
    cut short, talk-over if it went on)"""
    kind: Prompt


_SPEECH_KINDS = frozenset(
    {"user_state", "agent_state", "user_transcript", "agent_message", "user_message"}
)


def _handoff(event: TraceEvent) -> Handoff:
    data = event.data
    return Handoff(
        event.seq, event.t, data.get("from"), data["to"], data.get("session"), data.get("context")
    )


def _first_words(event: TraceEvent) -> bool:
    speaking = event.kind == "agent_state" and event.data.get("new") == "speaking"
    return speaking or event.kind == "agent_message"


def bring_ups(events: Iterable[TraceEvent]) -> list[BringUp]:
    """How long each agent handed to took to say its first words (see ``TraceAnalysis``)."""
    return TraceAnalysis(events).bring_ups


def handoff_label(data: Mapping[str, Any]) -> str:
    """A handoff event's ``"reused · copied"`` (``"cascaded · copied"`` without a realtime
    session): how it left the session and the chat context; ``"mode unknown"`` when the trace
    does not say (an agent in another process: the protocol reports neither); empty for the
    first agent."""
    context = data.get("context")
    if context:
        return mode_label(data.get("session"), context).replace("+", " · ")
    return "mode unknown" if data.get("from") is not None else ""


def milliseconds(seconds: float) -> str:
    """``"231 ms"``, or ``"4.2 ms"`` under ten: a bring-up as the views write it."""
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"
