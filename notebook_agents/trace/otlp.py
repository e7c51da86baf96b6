"""A trace as OTLP: written as JSON (what Jaeger, Langfuse, Phoenix, MLflow and OpenTelemetry
collectors read) or sent to a collector; and spans that came as OTLP (an agent in another
process sends livekit's: ``spans_of_otlp``).

livekit's spans go out as they were recorded; our events ride on one span of their own,
``notebook_agents.trace``, each an OTLP span event named by its kind, under livekit's session
span when there is one (so a viewer shows them in one trace). Encoded with OpenTelemetry's own
OTLP encoder and protobuf's JSON mapping, and sent with its own OTLP/HTTP exporter, not by
hand; read with OpenTelemetry's protobuf types.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.proto.trace.v1.trace_pb2 import Status as SpanStatusPb
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..errors import NotebookAgentsError
from .schema import SpanKindName, SpanStatus, TraceSpan, unix_ns
from .store import TraceEvent

if TYPE_CHECKING:  # the trace calls this module
    from .trace import Trace

OWN_SPAN = "notebook_agents.trace"
"""the span our events ride on"""
SERVICE = "notebook-agents"
TRACES_PATH = "/v1/traces"
"""where an OTLP/HTTP collector takes traces, below the base URL it is given"""
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_INT64 = range(-(2**63), 2**63)
"""the integers an OTLP attribute carries (``int_value`` is an int64)"""


class OTLPSendError(NotebookAgentsError):
    """The collector did not take the spans; the message says what it or the network said."""


class OTLPEndpointError(NotebookAgentsError, ValueError):
    """An endpoint that is no OTLP/HTTP URL (``--to``, ``send_otlp(endpoint)``), refused before
    anything is sent: the message shows the URL to give."""


def to_otlp_json(trace: Trace) -> str:
    """``trace`` (livekit's spans and our events) as an OTLP/JSON ``ExportTraceServiceRequest``,
    the body an OTLP/HTTP collector takes at ``/v1/traces``."""
    request = json_format.MessageToDict(
        encode_spans(readable_spans(trace)), use_integers_for_enums=True
    )
    return json.dumps(_hex_ids(request))


def send_otlp(
    trace: Trace,
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> int:
    """Send ``trace`` (what ``to_otlp_json`` writes) to an OTLP/HTTP collector with
    OpenTelemetry's own exporter, in protobuf; returns how many spans it took.

    ``endpoint``: the collector's base URL (``http://127.0.0.1:4318``, sent to its
    ``/v1/traces``) or, with a path, its traces URL as is (MLflow's
    ``http://127.0.0.1:5000/v1/traces``). ``headers`` add to those OpenTelemetry's variables
    set (``OTEL_EXPORTER_OTLP_HEADERS``); ``timeout`` (seconds, retries included) defaults to
    ``OTEL_EXPORTER_OTLP_TIMEOUT``, else 10. ``OTLPEndpointError`` (a ``ValueError``) for a
    URL that is no HTTP endpoint, ``OTLPSendError`` when the collector does not take the spans.
    """
    url = traces_url(endpoint)
    spans = readable_spans(trace)
    exporter = OTLPSpanExporter(endpoint=url, headers=headers, timeout=timeout)
    failures = _Failures()
    # the exporter says why it failed only in its log (retries, then the status and reason)
    exporter_log = logging.getLogger(OTLPSpanExporter.__module__)
    exporter_log.addHandler(failures)
    try:
        result = exporter.export(spans)
    finally:
        exporter_log.removeHandler(failures)
        exporter.shutdown()  # type: ignore[no-untyped-call]  # closes its HTTP session
    if result is not SpanExportResult.SUCCESS:
        raise OTLPSendError(f"cannot send to {url}: {failures.reason()}")
    return len(spans)


def traces_url(endpoint: str) -> str:
    """The URL traces go to: a base URL gets ``/v1/traces``, one with a path is used as is, as
    OpenTelemetry's exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
    (https://opentelemetry.io/docs/specs/otel/protocol/exporter/#endpoint-urls-for-otlphttp)."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OTLPEndpointError(
            f"{endpoint!r} is no OTLP/HTTP endpoint: give the collector's URL, "
            f"http://HOST:PORT (sent to its {TRACES_PATH}) or its full traces URL"
        )
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path=TRACES_PATH))
    return endpoint


class _Failures(logging.Handler):
    """The exporter's log records of this thread's send (another thread may send at once)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())

    def reason(self) -> str:
        """The first retry's reason (what went wrong) and the last word (why it stopped)."""
        if not self.messages:
            return "the collector did not take the spans"
        said = [self.messages[0]] if len(self.messages) > 1 else []
        return "; ".join(message.rstrip(".") for message in [*said, self.messages[-1]])


def readable_spans(trace: Trace) -> list[ReadableSpan]:
    """livekit's spans and the span of our events, as OpenTelemetry's exporters take them."""
    resource = Resource({"service.name": SERVICE})  # no random instance id: exports repeat
    spans = [_readable(span, trace.started_at, resource) for span in trace.spans]
    events = trace.events
    if events:
        spans.append(_own_span(trace, events, resource))
    return spans


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

    # OTLP: an unspecified kind is read as internal
    named = Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower()
    kind: SpanKindName = "internal" if named == "unspecified" else named  # type: ignore[assignment]
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
        name=_text(span.name),
        context=_context(span.trace_id, span.span_id),
        parent=parent,
        resource=resource,
        attributes=_attributes(span.attributes),
        events=[
            Event(_text(e["name"]), _attributes(e["attributes"]), unix_ns(started_at, e["t"]))
            for e in span.events
        ],
        kind=SpanKind[span.kind.upper()],
        status=Status(
            StatusCode[span.status.upper()],
            _text(span.status_message) if span.status_message is not None else None,
        ),
        start_time=unix_ns(started_at, span.start),
        end_time=unix_ns(started_at, span.end),
        instrumentation_scope=InstrumentationScope(_text(span.scope)),
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
        events=[
            Event(e.kind, _event_attributes(e), unix_ns(trace.started_at, e.t)) for e in events
        ],
        start_time=unix_ns(trace.started_at, start),
        end_time=unix_ns(trace.started_at, events[-1].t),
        instrumentation_scope=InstrumentationScope("notebook_agents"),
    )


def _event_attributes(event: TraceEvent) -> dict[str, Any]:
    found = {"seq": event.seq, **({"agent": event.agent} if event.agent else {})}
    return _attributes(found) | {f"data.{k}": v for k, v in _attributes(event.data).items()}


def _attributes(values: dict[str, Any]) -> dict[str, Any]:
    """Values as OTLP attributes carry them: a string, boolean, 64-bit integer or float, or a
    list of one of these, its text as protobuf can hold it (``_text``); anything else (a chat
    item, a dict of metrics, a larger integer) as its JSON text, rather than the encoder
    dropping it with a log line."""
    return {_text(k): _attribute(v) for k, v in values.items()}


def _attribute(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if _scalar(value):
        return value
    if isinstance(value, list) and value and len({type(v) for v in value}) == 1:
        if isinstance(value[0], str):
            return [_text(v) for v in value]
        if all(_scalar(v) for v in value):
            return value
    return json.dumps(value, default=str)


def _scalar(value: Any) -> bool:
    return isinstance(value, (bool, float)) or (isinstance(value, int) and value in _INT64)


def _text(value: str) -> str:
    """``value`` as a protobuf string holds it (UTF-8, which has no surrogates): a lone
    surrogate, which JSON text and a Python string can hold, as its escape (the six
    characters ``\\ud800``), not dropped; any other text unchanged."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


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
