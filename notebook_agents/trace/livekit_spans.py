"""livekit's own OpenTelemetry spans, captured per session into its ``Trace``.

livekit-agents instruments itself (``agent_turn``, ``llm_node``, ``update_agent``...) through
the provider given to ``livekit.agents.telemetry.set_tracer_provider``, or OpenTelemetry's
global one. We never replace a provider the user set: one span processor is added to it. Only
when none is set do we give livekit a provider of our own (not the global one, which can be
set once and is the user's to set). Spans reach the trace of the room whose job made them:
livekit creates them in the job's context, so ``get_job_context`` at a span's start says whose
it is; the job's own span (``job_entrypoint``) names its room, and any other span started
outside a job (a task livekit spawned without it) follows its parent. A session run outside
any job (the bench's) is captured by context instead: ``capture_spans_here``.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import weakref
from collections.abc import Callable

from livekit.agents import get_job_context, telemetry
from livekit.agents.telemetry import trace_types
from opentelemetry import context as otel_context
from opentelemetry import trace as trace_api
from opentelemetry.sdk import trace as trace_sdk

from .. import _livekit_internals as livekit
from .schema import SpanEventData, SpanKindName, SpanStatus, TraceSpan
from .trace import Trace

logger = logging.getLogger(__name__)

Sink = Callable[[trace_sdk.ReadableSpan], None]

_context_sink: contextvars.ContextVar[_ContextSink | None] = contextvars.ContextVar(
    "notebook_agents_span_sink", default=None
)
"""where the spans started in this context go (``capture_spans_here``), while it is open"""


class _ContextSink:
    """A trace's sink for the spans of one context, until closed (the context's tasks may
    outlive the capture, and still carry it)."""

    __slots__ = ("open", "sink")

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.open = True


class _JobRouter(trace_sdk.SpanProcessor):
    """Hands each ended span to the sink of the room whose job started it (or its parent's)."""

    def __init__(self) -> None:
        self.sinks: dict[str, Sink] = {}
        """room name -> where the spans of that room's job go"""
        self._open: dict[int, Sink] = {}
        """span id -> its sink, from the span's start to its end"""

    def on_start(
        self, span: trace_sdk.Span, parent_context: otel_context.Context | None = None
    ) -> None:
        here = _context_sink.get()
        sink = here.sink if here is not None and here.open else None
        if sink is None:
            job = get_job_context(required=False)
            room = job.job.room.name if job is not None else _named_room(span)
            sink = self.sinks.get(room) if room is not None else None
        if sink is None:
            parent = trace_api.get_current_span(parent_context).get_span_context()
            sink = self._open.get(parent.span_id) if parent.is_valid else None
        if sink is not None and span.context is not None:
            self._open[span.context.span_id] = sink

    def on_end(self, span: trace_sdk.ReadableSpan) -> None:
        if span.context is not None and (sink := self._open.pop(span.context.span_id, None)):
            sink(span)


def _named_room(span: trace_sdk.Span) -> str | None:
    room = (span.attributes or {}).get(trace_types.ATTR_ROOM_NAME)
    return room if isinstance(room, str) else None


_router = _JobRouter()
_lock = threading.Lock()
_joined: weakref.WeakSet[trace_sdk.TracerProvider] = weakref.WeakSet()
_own: trace_sdk.TracerProvider | None = None
"""the provider we gave livekit because none was set"""


def _provider() -> trace_sdk.TracerProvider | None:
    """The SDK provider livekit's spans go to, once it has one (ours if nobody set one);
    None for a provider that takes no span processor (a custom API-only one)."""
    global _own
    current = livekit.livekit_tracer_provider()
    if isinstance(current, trace_sdk.TracerProvider) and current is not _own:
        return current  # the user's, given to livekit
    found = trace_api.get_tracer_provider()
    if isinstance(found, trace_sdk.TracerProvider):
        if current is _own:  # the user set a global provider since: livekit's spans go there
            telemetry.set_tracer_provider(found)
        return found
    if current is _own or isinstance(current, trace_api.ProxyTracerProvider):
        if _own is None:
            _own = trace_sdk.TracerProvider()
            telemetry.set_tracer_provider(_own)
        return _own
    return None


def capture_spans(trace: Trace, room: str) -> Callable[[], None]:
    """Record the spans livekit makes for the job in room ``room`` in ``trace``, from now
    until the returned function is called (a later capture of the same room takes over)."""
    with _lock:
        _join_provider()
        _router.sinks[room] = sink = _sink(trace)

    def release() -> None:
        with _lock:
            if _router.sinks.get(room) is sink:
                del _router.sinks[room]

    return release


def capture_spans_here(trace: Trace) -> Callable[[], None]:
    """Record in ``trace`` the spans started from now on in this context and in the tasks it
    starts (a session run outside any job, as the bench runs one), until the returned function
    is called. Call it from the task that starts the session, before ``session.start``."""
    with _lock:
        _join_provider()
    here = _ContextSink(_sink(trace))
    token = _context_sink.set(here)

    def release() -> None:
        here.open = False
        # released from another context: closing the sink is enough
        with contextlib.suppress(ValueError):
            _context_sink.reset(token)

    return release


def _join_provider() -> None:
    """Our router on the provider livekit's spans go to (under ``_lock``)."""
    provider = _provider()
    if provider is None:
        logger.warning(
            "livekit's tracer provider %s takes no span processor: its spans are not in the trace",
            type(livekit.livekit_tracer_provider()).__name__,
        )
    elif provider not in _joined:
        provider.add_span_processor(_router)
        _joined.add(provider)


def _sink(trace: Trace) -> Sink:
    # the span is made when the trace's spans are read, not on the session's thread
    return lambda span: trace._span_ended(lambda: to_trace_span(span, trace))


def to_trace_span(span: trace_sdk.ReadableSpan, trace: Trace) -> TraceSpan:
    """``span`` as the trace keeps it: times on the trace's clock, ids in hex."""
    context = span.context
    assert context is not None  # an SDK span always has one
    started_ns = trace.started_at * 1e9

    def at(ns: int | None) -> float:
        return ((ns or 0) - started_ns) / 1e9

    events: list[SpanEventData] = [
        {"name": e.name, "t": at(e.timestamp), "attributes": _plain(e.attributes)}
        for e in span.events
    ]
    status: SpanStatus = span.status.status_code.name.lower()  # type: ignore[assignment]
    kind: SpanKindName = span.kind.name.lower()  # type: ignore[assignment]
    return TraceSpan(
        name=span.name,
        trace_id=trace_api.format_trace_id(context.trace_id),
        span_id=trace_api.format_span_id(context.span_id),
        parent_id=trace_api.format_span_id(span.parent.span_id) if span.parent else None,
        start=at(span.start_time),
        end=at(span.end_time),
        scope=span.instrumentation_scope.name if span.instrumentation_scope else "",
        kind=kind,
        status=status,
        status_message=span.status.description,
        attributes=_plain(span.attributes),
        events=events,
    )


def _plain(attributes: object) -> dict[str, object]:
    """OpenTelemetry attributes as JSON has them (its sequences are tuples)."""
    if not attributes:
        return {}
    items = dict(attributes)  # type: ignore[call-overload]
    return {k: list(v) if isinstance(v, tuple) else v for k, v in items.items()}
