"""The trace's written schema: what each kind of event holds in its ``data``.

Events stay plain dicts on the wire (``TraceEvent.data``, ``to_record``, JSON Lines, the views'
traits); these TypedDicts name each kind's keys and their types, for type checkers, for
``check_event_data`` (a test holds every event of real sessions to them) and for
docs/trace-format.md (a test holds it to them too). Key names are the wire's: the views and
their JavaScript read them by string.
"""

# no `from __future__ import annotations`: the types below are evaluated, and a key such as
# `from` is no identifier, so the TypedDicts use the functional syntax
import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from livekit.agents import llm

# AgentState and UserState have no top-level export; they are the states livekit emits
from livekit.agents.voice.events import AgentState, UserState
from typing_extensions import NotRequired, TypedDict

from .._records import FieldError, converter, wrong
from ..modes import ContextMode, SessionMode

EventKind = Literal[
    "agent_state",
    "user_state",
    "user_transcript",
    "user_message",
    "agent_message",
    "tool_call",
    "tool_output",
    "handoff",
    "context_changed",
    "context_diverged",
    "context_converged",
    "barge_in",
    "metrics",
    "error",
    "closed",
]
"""what a ``TraceEvent`` records; its ``data`` is the TypedDict ``EVENT_DATA[kind]``"""
ErrorSource = Literal[
    "stt", "llm", "tts", "realtime", "session", "agent", "tool", "runner", "trace"
]
"""what failed: a model (speech recognition, LLM, speech synthesis, realtime), the session,
the agent's own code (a hook or a tool that raised), the runner's job, or the trace itself"""
SpeechSource = Literal["say", "generate_reply", "tool_reply"]
"""how the agent's speech came about: ``session.say``, a generated reply, a reply to a tool"""
SpeechPhase = Literal["on_enter", "turn", "on_exit"]
"""when the agent spoke: in its ``on_enter``, in a turn, in its ``on_exit``"""


class ChatItemData(TypedDict):
    id: str
    type: str
    role: NotRequired[llm.ChatRole]
    text: NotRequired[str]
    name: NotRequired[str]
    call_id: NotRequired[str]


"""A chat item as the trace shows it. ``type`` is livekit's (``message``, ``function_call``,
``function_call_output``, ...); a message has ``role`` and ``text``, a tool item ``name``,
``call_id`` and ``text`` (the call's arguments, or the output)."""


AgentStateName = AgentState | Literal["closing"]
"""livekit's agent states, and ``closing``: a VideoSDK session's agent between ``close()``
and ``closed`` (livekit's goes straight to ``closed``)"""


class AgentStateData(TypedDict):
    old: AgentStateName
    new: AgentStateName


class UserStateData(TypedDict):
    old: UserState
    new: UserState


class UserMessageData(TypedDict):
    text: str
    item_id: str
    metrics: dict[str, float]
    created_at: NotRequired[float]
    conditions: NotRequired[list[dict[str, dict[str, Any]]]]


"""``metrics``: the numbers of livekit's ``ChatMessage.metrics`` (per-turn latency such as
``end_of_turn_delay``, ``transcription_delay``; seconds, or Unix times for ``*_at``);
``created_at``: livekit's ``ChatMessage.created_at`` (Unix seconds): for typed text, when it
reached the session, where a typed turn's wait begins; ``conditions``: for words heard from
speech that crossed line conditions on the way (``notebook_agents.speech.Line``), those
conditions in their written form (``Line.to_records()``: ``[{"noise": {"snr_db": 10.0,
"kind": "babble", "seed": 0}}, {"telephone": {}}]``, ``Line.read`` reads it back), in the order
applied; absent for a clean line, typed text, and traces saved before it was kept"""


class UserTranscriptData(TypedDict):
    text: str
    final: bool


"""What speech recognition heard the user say: interim guesses (``final`` false, from a
streaming recognizer) and the final transcript of each stretch of speech."""


class AgentMessageData(TypedDict):
    text: str
    item_id: str
    source: SpeechSource
    phase: SpeechPhase
    interrupted: NotRequired[bool]
    metrics: dict[str, float]


"""``metrics`` as for user messages (``e2e_latency``, ``llm_node_ttft``, ``started_speaking_at``
...): only what livekit measured for this reply"""


class ToolCallData(TypedDict):
    name: str
    call_id: str
    arguments: str


class ToolOutputData(TypedDict):
    name: str
    call_id: str
    output: str
    is_error: bool


HandoffData = TypedDict(
    "HandoffData",
    {
        "from": str | None,
        "to": str | None,
        "from_id": NotRequired[str | None],
        "to_id": NotRequired[str | None],
        "to_class": NotRequired[str],
        "session": SessionMode | None,
        "context": ContextMode | None,
        "items_from": NotRequired[int],
        "items_to": NotRequired[int],
        "items_shared": NotRequired[int],
        "context_items": NotRequired[list[ChatItemData]],
        "kept_items": NotRequired[int],
        "livekit_context": NotRequired[ContextMode],
    },
)
"""The first agent's start is a handoff ``from`` None with ``session`` and ``context`` None
and its starting ``context_items``; a handoff between two agents has all keys but the last
two, which a reused session whose server keeps every turn (Gemini Live) adds: the old
agent's items the model kept that livekit's context lacks, and livekit's own reading of the
context when the model's (``context``) differs from it. ``from`` and ``to`` are the agents'
labels (``describe.agent_label``: the class's name unless livekit's id is the agent's own),
``from_id`` and ``to_id`` livekit's ids (``Agent.id``), ``to_class`` the class as
``module:qualname``; traces saved before the ids were kept lack them."""


class ContextChangedData(TypedDict):
    agent: str
    added: list[ChatItemData]
    removed: list[ChatItemData]


ModelSource = Literal["server", "plugin"]
"""where the model's side of a conversation was read: its server (an ``Emulator`` in this
process, or a ``ModelServer`` given), or the realtime plugin's view of it (from the acks)"""


class ContextDivergedData(TypedDict):
    agent: str
    message: str
    missing: list[ChatItemData]
    extra: list[ChatItemData]
    order: bool
    livekit: list[ChatItemData]
    model: list[ChatItemData]
    model_source: NotRequired[ModelSource]


class ContextConvergedData(TypedDict):
    agent: str
    items: int


class BargeInData(TypedDict):
    at: float
    began: float
    position: float
    interrupted: bool
    resumed: bool
    stopped: float | None
    stop_s: float | None
    played_s: float
    heard: str
    text: str | None
    item_id: str | None


"""A caller who spoke over the agent's reply on cue (``run_audio(..., at=)``), and what
livekit's interruption handling made of it; recorded once the reply has ended. ``at``: the
cue, seconds into the reply (0 for its first audio); ``began``: trace time the caller's audio
began, ``position`` seconds into the reply; ``interrupted``: livekit cut the reply;
``resumed``: livekit paused it on the caller's sound, heard no turn in it and resumed it (a
false interruption); ``stopped``: trace time the agent's audio stopped (paused or cut),
``stop_s`` the time it took from ``began`` (both null when it played on); ``played_s``:
seconds of the reply played in all; ``heard``: the reply as far as it was heard (livekit's
played-out transcript: the ``agent_message``'s text), ``text`` all of it as the model
generated it (livekit's ``llm_node`` span; null when no span has it), ``item_id`` the
message's (null when none was heard)."""


class ModelUsageData(TypedDict):
    type: str
    provider: str
    model: str
    counts: dict[str, float]


"""One model's usage so far, as livekit's ``session_usage_updated`` reports it: ``type``
(``llm_usage``, ``tts_usage``, ``stt_usage``, ...), and its counters that are not zero
(``input_tokens``, ``output_tokens``, ``audio_duration``, ... as livekit names them)."""


class MetricsData(TypedDict):
    usage: list[ModelUsageData]


"""The session's usage so far, per model; recorded each time it changes."""


class ErrorData(TypedDict):
    message: str
    type: str
    source: ErrorSource
    recoverable: bool
    tool: NotRequired[str]
    call_id: NotRequired[str]
    settings: NotRequired[list[str]]


"""``tool`` and ``call_id``: a tool that raised (source ``tool``), and which of its calls;
``settings``: a ``session.update`` the model refused (type ``SessionUpdateRejected``), the
settings it set, which the session runs without"""


class ClosedData(TypedDict):
    reason: str
    error: str | None


EVENT_DATA: dict[EventKind, Any] = {
    "agent_state": AgentStateData,
    "user_state": UserStateData,
    "user_transcript": UserTranscriptData,
    "user_message": UserMessageData,
    "agent_message": AgentMessageData,
    "tool_call": ToolCallData,
    "tool_output": ToolOutputData,
    "handoff": HandoffData,
    "context_changed": ContextChangedData,
    "context_diverged": ContextDivergedData,
    "context_converged": ContextConvergedData,
    "barge_in": BargeInData,
    "metrics": MetricsData,
    "error": ErrorData,
    "closed": ClosedData,
}
"""each kind -> the TypedDict of its ``data``"""


class SpanEventData(TypedDict):
    name: str
    t: float
    attributes: dict[str, Any]


"""Something a span noted at one moment (an exception, a stage of the job's dispatch):
``t`` on the trace's clock."""

SpanStatus = Literal["unset", "ok", "error"]
"""a span's status, as OpenTelemetry's ``StatusCode`` names it in lower case"""
SpanKindName = Literal["internal", "server", "client", "producer", "consumer"]
"""a span's kind, as OpenTelemetry's ``SpanKind`` names it in lower case"""


@dataclass(frozen=True, slots=True)
class TraceSpan:
    """One OpenTelemetry span livekit recorded for the session (``agent_turn``, ``llm_node``,
    ``update_agent``...): ``start`` and ``end`` on the trace's clock (seconds since t = 0),
    ids in hex as OTLP JSON writes them, ``attributes`` as livekit set them."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start: float
    end: float
    scope: str
    """the instrumentation scope that made it (``livekit-agents``)"""
    kind: SpanKindName
    """OpenTelemetry's ``SpanKind`` in lower case: ``internal``, ``client``..."""
    status: SpanStatus
    status_message: str | None
    attributes: dict[str, Any]
    events: list[SpanEventData]

    def to_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_event_data(kind: str, data: Any) -> None:
    """Raise ``FieldError`` (naming the key, what was expected and found) unless ``data`` is
    what ``kind``'s schema says: every required key, no other, each value of its type."""
    schema = EVENT_DATA.get(cast(EventKind, kind))
    if schema is None:
        raise FieldError(f"{kind!r} is no event kind (the kinds are {', '.join(EVENT_DATA)})")
    converter(schema)(data)


UNIX_NS_END = 2**64
"""OTLP carries times as unsigned 64-bit nanoseconds since 1970 (``fixed64``), so up to 2554:
https://github.com/open-telemetry/opentelemetry-proto/blob/v1.5.0/opentelemetry/proto/trace/v1/trace.proto"""
_ID_DIGITS = {"trace_id": 32, "span_id": 16, "parent_id": 16}
"""a span's ids and their length in hex digits"""


def unix_ns(started_at: float, t: float) -> int:
    """``t`` on the trace's clock as Unix nanoseconds, as OTLP writes times."""
    return round((started_at + t) * 1e9)


def check_time(started_at: float, t: float, name: str) -> None:
    """Raise ``FieldError`` (as field ``name``) unless ``t`` seconds after Unix time
    ``started_at`` is a time OTLP can carry."""
    if not 0 <= (started_at + t) * 1e9 < UNIX_NS_END:  # NaN and infinities fail too
        expected = f"a time from 1970 to 2554 (here Unix time {started_at + t:.6g}), as OTLP has"
        raise wrong(expected, t).under(name)


def check_span(span: TraceSpan, started_at: float) -> None:
    """Raise ``FieldError`` (naming the field) unless every export can carry ``span``: ids in
    hex as OpenTelemetry makes them (not all zero, its "no id"), times from 1970 to 2554, the
    end not before the start, attributes as OpenTelemetry's (livekit's always are)."""
    for name, digits in _ID_DIGITS.items():
        found = getattr(span, name)
        # an id in hex, as OTLP JSON writes ids: int(found, 16) would also take "0x", "_", " "
        if found is not None and not (
            re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", found) and found.strip("0")
        ):
            raise wrong(f"{digits} hex digits, not all zero (an OpenTelemetry id)", found).under(
                name
            )
    check_time(started_at, span.start, "start")
    check_time(started_at, span.end, "end")
    if span.end < span.start:
        raise FieldError(f"found {span.end!r}, before the span's start ({span.start!r})", ("end",))
    check_attributes(span.attributes, "attributes")
    for index, event in enumerate(span.events):
        try:
            check_time(started_at, event["t"], "t")
            check_attributes(event["attributes"], "attributes")
        except FieldError as e:
            raise e.under(index).under("events") from None


def check_attributes(attributes: dict[str, Any], name: str) -> None:
    """Raise ``FieldError`` unless each value is an OpenTelemetry attribute value: a string,
    number or boolean, or a list of one of these
    (https://opentelemetry.io/docs/specs/otel/common/#attribute)."""
    for key, value in attributes.items():
        if not (_attribute_scalar(value) or _attribute_list(value)):
            expected = "a string, number, boolean or a list of one of these (an OpenTelemetry "
            raise wrong(expected + "attribute)", value).under(key).under(name)


def _attribute_scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float))


def _attribute_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(_attribute_scalar(v) for v in value)
        and len({type(v) for v in value}) <= 1
    )
