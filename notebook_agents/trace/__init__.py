"""The trace: every event of a LiveKit ``AgentSession``, normalized, each exactly once.

``Trace`` records (``trace.py``, a facade over the pieces below); each kind's data has a written
schema (``schema.py``, and docs/trace-format.md for the JSON Lines file). The pieces, one job each:
``store`` (events in order, save and load), ``recorder`` (cheap capture on the session's thread,
events made later in order), ``delivery`` (subscribers on their own loop), ``reading`` (livekit's
session events), ``describe`` (livekit objects as plain data), ``patching`` (what the trace wraps
on agents and realtime sessions), ``model_side`` (livekit's context against the model's, as the
plugin sees it and, with a ``model_server``, as the model's server holds it), ``realtime_protocol``
(what a realtime session's own events say: its server session, the settings it was refused) and
``contexts`` (each agent's context rebuilt from the events).
"""

from .._deprecated import moved_names
from .delivery import DELIVERY_INTERVAL_S, Subscriber
from .describe import agent_label, describe_item, error_text
from .errors import TraceArgumentError, TraceAttachError
from .marks import TimelineMark
from .model_server import ModelServer
from .otlp import OTLPEndpointError, OTLPSendError
from .schema import (
    EVENT_DATA,
    AgentMessageData,
    AgentStateData,
    BargeInData,
    ChatItemData,
    ClosedData,
    ContextChangedData,
    ContextConvergedData,
    ContextDivergedData,
    ErrorData,
    ErrorSource,
    EventKind,
    HandoffData,
    MetricsData,
    ModelSource,
    ModelUsageData,
    SpanEventData,
    SpanStatus,
    SpeechPhase,
    SpeechSource,
    ToolCallData,
    ToolOutputData,
    TraceSpan,
    UserMessageData,
    UserStateData,
    UserTranscriptData,
    check_event_data,
)
from .store import TRACE_FORMAT, TraceEvent, TraceEvents, TraceFileError
from .trace import Trace

__all__ = [
    "DELIVERY_INTERVAL_S",
    "EVENT_DATA",
    "TRACE_FORMAT",
    "AgentMessageData",
    "AgentStateData",
    "BargeInData",
    "ChatItemData",
    "ClosedData",
    "ContextChangedData",
    "ContextConvergedData",
    "ContextDivergedData",
    "ErrorData",
    "ErrorSource",
    "EventKind",
    "HandoffData",
    "MetricsData",
    "ModelServer",
    "ModelSource",
    "ModelUsageData",
    "OTLPEndpointError",
    "OTLPSendError",
    "SpanEventData",
    "SpanStatus",
    "SpeechPhase",
    "SpeechSource",
    "Subscriber",
    "TimelineMark",
    "ToolCallData",
    "ToolOutputData",
    "Trace",
    "TraceArgumentError",
    "TraceAttachError",
    "TraceEvent",
    "TraceEvents",
    "TraceFileError",
    "TraceSpan",
    "UserMessageData",
    "UserStateData",
    "UserTranscriptData",
    "agent_label",
    "check_event_data",
    "describe_item",
    "error_text",
]


__getattr__ = moved_names(__name__, {"ModelTruth": ("notebook_agents.trace", "ModelServer")})
