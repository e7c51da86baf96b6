"""A trace as OTLP JSON: what Jaeger, Langfuse, Phoenix and OpenTelemetry collectors read; and
spans that came as OTLP (an agent in another process sends livekit's: ``spans_of_otlp``).

livekit's spans go out as they were recorded; our events ride on one span of their own,
``notebook_agents.trace``, each an OTLP span event named by its kind, under livekit's session
span when there is one (so a viewer shows them in one trace). Encoded with OpenTelemetry's own
OTLP encoder and protobuf's JSON mapping, not by hand; read with OpenTelemetry's protobuf types.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.proto.trace.v1.trace_pb2 import Status as SpanStatusPb
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .schema import SpanStatus, TraceSpan
from .store import TraceEvent

if TYPE_CHECKING:  # the trace calls this module
    from .trace import Trace

OWN_SPAN = "notebook_agents.trace"
"""the span our events ride on"""
SERVICE = "notebook-agents"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def to_otlp_json(trace: Trace) -> str:
    """``trace`` (livekit's spans and our events) as an OTLP/JSON ``ExportTraceServiceRequest``,
    the body an OTLP/HTTP collector takes at ``/v1/traces``."""
    resource = Resource({"service.name": SERVICE})  # no random instance id: exports repeat
    spans = [_readable(span, trace.started_at, resource) for span in trace.spans]
    events = trace.events
    if events:
        spans.append(_own_span(trace, events, resource))
    request = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return json.dumps(_hex_ids(request))


def spans_of_otlp(request: bytes, started_at: float) -> list[TraceSpan]:
    """The spans of an OTLP/HTTP protobuf ``ExportTraceServiceRequest`` (what an exporter posts
    to ``/v1/traces``) as a trace keeps them: on the clock of a trace started at ``started_at``
    (time.time()), as ``livekit_spans.to_trace_span`` keeps the kernel's. Raises protobuf's
    ``DecodeError`` for anything else."""
    spans: list[TraceSpan] = []
    for resource_spans in ExportTraceServiceRequest.FromString(request).resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            spans.extend(_trace_span(span, scope, started_at) for span in scope_spans.spans)
    return spans


def _trace_span(span: Span, scope: str, started_at: float) -> TraceSpan:
    def at(ns: int) -> float:
        return (ns - started_at * 1e9) / 1e9

    kind = Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower()
    code = SpanStatusPb.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_")
    status: SpanStatus = code.lower()  # type: ignore[assignment]
    return TraceSpan(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        start=at(span.start_time_unix_nano),
        end=at(span.end_time_unix_nano),
        scope=scope,
        kind=kind,
        status=status,
        status_message=span.status.message or None,
        attributes=_values(span.attributes),
        events=[
            {"name": e.name, "t": at(e.time_unix_nano), "attributes": _values(e.attributes)}
            for e in span.events
        ],
    )


def _values(attributes: Sequence[KeyValue]) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in attributes}


def _value(value: AnyValue) -> Any:
    """An OTLP attribute value as Python has it (a list for an array, as the kernel's)."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return _values(value.kvlist_value.values)
    return getattr(value, which) if which is not None else None


def _ns(started_at: float, t: float) -> int:
    return round((started_at + t) * 1e9)


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def _readable(span: TraceSpan, started_at: float, resource: Resource) -> ReadableSpan:
    parent = _context(span.trace_id, span.parent_id) if span.parent_id else None
    return ReadableSpan(
        name=span.name,
        context=_context(span.trace_id, span.span_id),
        parent=parent,
        resource=resource,
        attributes=_attributes(span.attributes),
        events=[
            Event(e["name"], _attributes(e["attributes"]), _ns(started_at, e["t"]))
            for e in span.events
        ],
        kind=SpanKind[span.kind.upper()],
        status=Status(StatusCode[span.status.upper()], span.status_message),
        start_time=_ns(started_at, span.start),
        end_time=_ns(started_at, span.end),
        instrumentation_scope=InstrumentationScope(span.scope),
    )


def _own_span(trace: Trace, events: Sequence[TraceEvent], resource: Resource) -> ReadableSpan:
    """Our events on one span, under livekit's outermost span when the trace has one (a trace
    saved mid-call has not: it ended after the save), in livekit's trace either way. Its ids
    come from the trace's start time, so a saved and loaded trace exports the same."""
    roots = [s for s in trace.spans if s.parent_id is None]
    root = min(roots, key=lambda s: s.start) if roots else None
    digest = hashlib.sha256(repr(trace.started_at).encode()).hexdigest()
    trace_id = trace.spans[0].trace_id if trace.spans else digest[:32]
    start = min(events[0].t, root.start) if root is not None else events[0].t
    return ReadableSpan(
        name=OWN_SPAN,
        context=_context(trace_id, digest[32:48]),
        parent=_context(root.trace_id, root.span_id) if root is not None else None,
        resource=resource,
        events=[Event(e.kind, _event_attributes(e), _ns(trace.started_at, e.t)) for e in events],
        start_time=_ns(trace.started_at, start),
        end_time=_ns(trace.started_at, events[-1].t),
        instrumentation_scope=InstrumentationScope("notebook_agents"),
    )


def _event_attributes(event: TraceEvent) -> dict[str, Any]:
    found = {"seq": event.seq, **({"agent": event.agent} if event.agent else {})}
    return found | {f"data.{k}": v for k, v in _attributes(event.data).items()}


def _attributes(values: dict[str, Any]) -> dict[str, Any]:
    """OTLP attribute values are scalars or lists of one scalar type: anything else (a chat
    item, a dict of metrics) goes as its JSON text."""
    return {k: v if _scalar_or_list(v) else json.dumps(v, default=str) for k, v in values.items()}


def _scalar_or_list(value: Any) -> bool:
    if isinstance(value, (str, bool, int, float)):
        return True
    return (
        isinstance(value, list)
        and len({type(v) for v in value}) == 1
        and isinstance(value[0], (str, bool, int, float))
    )


def _hex_ids(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping writes bytes
    as base64 (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)."""
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in _ID_FIELDS else _hex_ids(v)
            for k, v in node.items()
        }
    return node
