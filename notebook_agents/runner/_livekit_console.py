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
"""

from __future__ import annotations

import http.client
import json
import os
import runpy
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.context import Context
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

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
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


def main() -> None:
    spans_address = sys.argv.pop(1)
    if not getattr(sys.flags, "safe_path", False):
        # the script's imports resolve as under `python -m`: from the current folder first,
        # not from this file's
        sys.path[0] = os.getcwd()
    provider = TracerProvider()
    exporter = _SpansToNotebook(spans_address)
    provider.add_span_processor(_AgentClassesToNotebook(spans_address))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=_BATCH_DELAY_MS))
    trace.set_tracer_provider(provider)
    runpy.run_module("livekit.agents", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
