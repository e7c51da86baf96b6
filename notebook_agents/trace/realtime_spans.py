"""What livekit measures of a realtime session but makes no span of, as spans of our own.

livekit's ``realtime_inference`` span starts once a response exists (``response.created``) and
its connection's time (``RealtimeModelMetrics.acquire_time``) is only a metric: where a handoff's
wait goes between the request and the reply, or in a fresh session's connect, no span says.
Each realtime session the trace watches adds two, through livekit's tracer provider (so they
reach the runner's trace and a user's exporter beside livekit's):

- ``realtime_connect``: the websocket connect, from its start to the connection acquired;
- ``realtime_response``: a response from ``response.create`` leaving the client (or, for one
  the server made itself, ``response.created``) to ``response.done``, with span events
  ``response.created``, ``first_text`` and ``first_audio`` when they arrived.

On the session's thread each handler only reads the clock and a few fields; a span is made
once per connection and once per response, when it is complete.
"""

from __future__ import annotations

import time
from typing import Any

from livekit.agents import get_job_context, metrics
from livekit.agents.telemetry import trace_types
from opentelemetry import trace as trace_api

from .. import _livekit_internals as livekit
from .tap import Handler

SCOPE = "notebook_agents"
"""the instrumentation scope of the spans the trace adds"""
CONNECT_SPAN = "realtime_connect"
RESPONSE_SPAN = "realtime_response"
RESPONSE_ID = "gen_ai.response.id"
"""the response's id (OpenTelemetry's GenAI conventions), as livekit's
``lk.realtime_model_metrics`` names it ``request_id``"""
ACQUIRE_TIME = "lk.connection.acquire_time"
CONNECTION_REUSED = "lk.connection.reused"
CREATED, FIRST_TEXT, FIRST_AUDIO = "response.created", "first_text", "first_audio"

_FIRST_OF: dict[str, str] = {
    "response.output_text.delta": FIRST_TEXT,
    "response.output_audio_transcript.delta": FIRST_TEXT,
    "response.output_audio.delta": FIRST_AUDIO,
    # the GA API's older names, which the plugin still accepts
    "response.text.delta": FIRST_TEXT,
    "response.audio_transcript.delta": FIRST_TEXT,
    "response.audio.delta": FIRST_AUDIO,
}
"""a content delta -> the moment its first one marks"""


class _Response:
    __slots__ = ("events", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.events: dict[str, int] = {}
        """moment -> when (ns since the epoch, as OpenTelemetry times spans)"""


class RealtimeSpans:
    """One realtime session's connections and responses, made into spans as they complete."""

    def __init__(self) -> None:
        self._requested: dict[str, int] = {}
        """``response.create`` event ids sent and not answered yet -> when they left"""
        self._responses: dict[str, _Response] = {}
        """responses created and not done yet, by id"""

    def handlers(self) -> dict[str, Handler]:
        """The realtime session's events to listen to, and their handlers."""
        return {
            "openai_client_event_queued": self._sent,
            "openai_server_event_received": self._received,
            "metrics_collected": self._metrics,
        }

    def _sent(self, event: dict[str, Any]) -> None:
        # emitted just before the plugin writes the event to its websocket: when it left
        if event.get("type") == "response.create" and (event_id := event.get("event_id")):
            self._requested[event_id] = time.time_ns()

    def _received(self, event: dict[str, Any]) -> None:
        kind = event.get("type", "")  # every server event passes here: one lookup for most
        first = _FIRST_OF.get(kind)
        if first is not None:
            response = self._responses.get(event.get("response_id", ""))
            if response is not None and first not in response.events:
                response.events[first] = time.time_ns()
        elif kind == "response.created":
            self._created(event.get("response") or {})
        elif kind == "response.done":
            done = event.get("response") or {}
            answer = str(done.get("id"))
            response = self._responses.pop(answer, None)
            if response is not None:
                _response_span(answer, response, time.time_ns())

    def _created(self, body: dict[str, Any]) -> None:
        now = time.time_ns()
        # the plugin's request names itself in the response's metadata; a response the server
        # made on its own (its turn detection) was asked for by nobody: it starts here
        asked = (body.get("metadata") or {}).get("client_event_id")
        response = _Response(self._requested.pop(asked, now) if asked else now)
        response.events[CREATED] = now
        if body.get("id"):
            self._responses[body["id"]] = response

    def _metrics(self, ev: object) -> None:
        # the plugin reports each connection acquired as metrics of no response, right after
        # its websocket connected (``acquire_time``: how long that took)
        if (
            isinstance(ev, metrics.RealtimeModelMetrics)
            and not ev.request_id
            and ev.acquire_time > 0
        ):
            end = time.time_ns()
            span = _tracer().start_span(
                CONNECT_SPAN,
                start_time=end - round(ev.acquire_time * 1e9),
                attributes={
                    **_conversation(),
                    ACQUIRE_TIME: ev.acquire_time,
                    CONNECTION_REUSED: ev.connection_reused,
                },
            )
            span.end(end_time=end)


def _response_span(response_id: str, response: _Response, end: int) -> None:
    span = _tracer().start_span(
        RESPONSE_SPAN,
        start_time=response.start,
        attributes={**_conversation(), RESPONSE_ID: response_id},
    )
    for name, at in response.events.items():
        span.add_event(name, timestamp=at)
    span.end(end_time=end)


def _conversation() -> dict[str, str]:
    """``gen_ai.conversation.id`` as livekit puts it on each of its spans: the job's room."""
    job = get_job_context(required=False)
    sid = job.job.room.sid if job is not None else None
    return {trace_types.ATTR_GEN_AI_CONVERSATION_ID: sid} if sid else {}


def _tracer() -> trace_api.Tracer:
    """Our tracer on the provider livekit's spans go to now (it may change: a user's, set later)."""
    return livekit.livekit_tracer_provider().get_tracer(SCOPE)
