"""Runs livekit's CLI as ``python -m livekit.agents`` does, the agent's spans sent to the notebook.

    python _livekit_console.py SPANS_ADDRESS console agent.py --connect-addr HOST:PORT

livekit-agents traces itself through OpenTelemetry's global tracer provider until the script
sets one of its own (``telemetry.set_tracer_provider``, which it then keeps: no spans come
here); by default none is set, and livekit makes none from ``OTEL_*`` variables. This sets the
global one to an SDK provider whose spans go in batches, as OTLP/HTTP protobuf, to the
notebook's receiver at SPANS_ADDRESS (127.0.0.1), which adds them to the ``AgentProcess``'s
trace: its turns and handoffs split into phases, as a kernel session's.

They are encoded by OpenTelemetry's own OTLP encoder and posted with ``http.client``, not by
the OTLP exporter, which would also take the user's ``OTEL_EXPORTER_OTLP_*`` settings (headers,
certificates, compression) and any HTTP proxy, all meant for their own collector. Run by path,
without importing notebook-agents: the script's process stays the script's.

livekit's protocol reports an agent by its id alone; the trace names agents by their class as
a kernel session's does. So as each agent starts (the spans ``start_agent_activity`` and
``update_agent`` begin, before livekit reports the handoff), its class is posted to the
notebook's receiver (``AGENTS_PATH``), once per agent, and the start waits for the answer (on
127.0.0.1, a millisecond; ``_CLASS_TIMEOUT_S`` at most): the notebook knows the class before
the handoff's report, which comes after it.

Marks go with the spans, for the notebook to find out whether and when the agent greets, as
livekit's run of the session's start knows it (the protocol reports nothing while a realtime
reply is generated): each speech the session creates (``speech_created``) and its end (with
how many messages it added), and the moments the agent's loop has come round after the session
started and after an ``on_enter`` returned: a speech either of them started has been created by
then (synchronously, before the loop took anything else up). They are spans of their own scope
(``MARKS_SCOPE``), which the notebook reads and does not keep.

The console starts in livekit's own text mode (``AgentsConsole.console_mode``, what the
console's text toggle sets): the session starts with no audio in or out, as a notebook
runner's offline session does. The notebook turns audio off as soon as it answers anyway, and
a session that started with it on generated its first speech as audio: an agent without a TTS
failed its greeting ("tts_node called but no TTS node is available") or not, by whether that
speech began before or after the notebook answered.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import runpy
import sys
from collections.abc import Sequence

from livekit.agents import ChatMessage, SpeechCreatedEvent
from livekit.agents.cli import AgentsConsole
from livekit.agents.voice import SpeechHandle
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

SPANS_PATH = "/v1/traces"
"""where OTLP/HTTP takes spans"""
AGENTS_PATH = "/notebook-agents/agent-class"
"""where an agent's class is posted: JSON ``{"id": livekit's id, "class": "module:qualname"}``"""
_STARTS_AGENT = ("start_agent_activity", "update_agent")
"""livekit's spans that begin as an agent starts, before its handoff is reported (the first
agent's activity; a handoff), with ``lk.agent_label`` (its id)"""
_CLASS_TIMEOUT_S = 1.0
_BATCH_DELAY_MS = 100
"""how long a span waits for others to go with it: a turn's phases show right after it"""
_POST_TIMEOUT_S = 5.0
MARKS_SCOPE = "notebook-agents-console"
"""the instrumentation scope of the marks (not livekit's spans)"""
SPEECH_CREATED = "speech_created"
"""the session created a speech (attribute ``speech_id``)"""
SPEECH_DONE = "speech_done"
"""a speech is done (``speech_id``, and ``messages``: how many it added)"""
START_OVER = "start_over"
"""the session has started, and the speeches the entrypoint made right after are created"""
ON_ENTER_OVER = "on_enter_over"
"""an ``on_enter`` returned, and the speeches it started are created"""


class _SpansToNotebook(SpanExporter):
    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self._host, self._port = host, int(port)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        body = encode_spans(spans).SerializeToString()
        connection = http.client.HTTPConnection(self._host, self._port, timeout=_POST_TIMEOUT_S)
        try:
            connection.request("POST", SPANS_PATH, body, {"Content-Type": "application/x-protobuf"})
            accepted = connection.getresponse().status == 200
        except OSError:  # the notebook has stopped listening: the spans have nowhere to go
            return SpanExportResult.FAILURE
        finally:
            connection.close()
        return SpanExportResult.SUCCESS if accepted else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Nothing held between exports."""


class _AgentClassesToNotebook(SpanProcessor):
    """Posts each agent's class to the notebook as it starts (see the module's docstring)."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self._host, self._port = host, int(port)
        self._sent: set[tuple[str, str]] = set()

    def on_start(self, span: Span, parent_context: context.Context | None = None) -> None:
        if span.name not in _STARTS_AGENT:
            return
        # imported here, once livekit runs: livekit's tracer reads the global provider as it is
        # imported, so not before main() has set ours
        from livekit.agents import get_job_context
        from livekit.agents.telemetry.trace_types import ATTR_AGENT_LABEL

        try:  # the agent's start must never fail for the trace's sake
            agent = get_job_context().primary_session.current_agent
            if (span.attributes or {}).get(ATTR_AGENT_LABEL) != agent.id:
                return
            said = (agent.id, f"{type(agent).__module__}:{type(agent).__qualname__}")
            if said not in self._sent:
                self._post(said)
                self._sent.add(said)
        except Exception:
            return

    def _post(self, said: tuple[str, str]) -> None:
        body = json.dumps({"id": said[0], "class": said[1]})
        connection = http.client.HTTPConnection(self._host, self._port, timeout=_CLASS_TIMEOUT_S)
        try:
            connection.request("POST", AGENTS_PATH, body, {"Content-Type": "application/json"})
            connection.getresponse().read()
        finally:
            connection.close()


class _GreetingMarks(SpanProcessor):
    """Marks the session's speeches, its start's end and each ``on_enter``'s, with spans of
    ``MARKS_SCOPE``: livekit's spans start and end on the agent's loop, so these are made there
    (the session's events, through livekit's public ``AgentsConsole.io_session``, once it has
    taken the console's I/O: before its first agent's activity starts)."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer(MARKS_SCOPE)
        self._watching = False

    def on_start(self, span: Span, parent_context: context.Context | None = None) -> None:
        if self._watching:
            return
        console = AgentsConsole.get_instance()
        if console.io_acquired:
            self._watching = True
            console.io_session.on("speech_created", self._speech_created)

    def on_end(self, span: ReadableSpan) -> None:
        over = {"session_start": START_OVER, "on_enter": ON_ENTER_OVER}.get(span.name)
        if over is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not ended on a loop: nothing it started is still to come
            self._mark(over)
        else:
            loop.call_soon(self._mark, over)

    def _speech_created(self, event: SpeechCreatedEvent) -> None:
        speech = event.speech_handle
        self._mark(SPEECH_CREATED, speech_id=speech.id)
        speech.add_done_callback(self._speech_done)

    def _speech_done(self, speech: SpeechHandle) -> None:
        said = [
            i for i in speech.chat_items if isinstance(i, ChatMessage) and i.role == "assistant"
        ]
        self._mark(SPEECH_DONE, speech_id=speech.id, messages=len(said))

    def _mark(self, name: str, **attributes: str | int) -> None:
        self._tracer.start_span(name, context.Context(), attributes=attributes).end()


def main() -> None:
    spans_address = sys.argv.pop(1)
    if not getattr(sys.flags, "safe_path", False):
        # the script's imports resolve as under `python -m`: from the current folder first,
        # not from this file's
        sys.path[0] = os.getcwd()
    provider = TracerProvider()
    provider.add_span_processor(_GreetingMarks(provider))
    exporter = _SpansToNotebook(spans_address)
    provider.add_span_processor(_AgentClassesToNotebook(spans_address))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=_BATCH_DELAY_MS))
    trace.set_tracer_provider(provider)
    AgentsConsole.get_instance().console_mode = "text"
    runpy.run_module("livekit.agents", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
