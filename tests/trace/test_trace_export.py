"""``notebook-agents export`` and the trace's exports on files a user has: the Chrome file named
so that viewers which pick an importer by name read it, OTLP sent to a collector with
OpenTelemetry's own exporter, and a saved trace that no export can carry refused at load
with its file, line and field, never a traceback, never text dropped."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import json
import logging
import math
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from notebook_agents.__main__ import main
from notebook_agents.trace import TRACE_FORMAT, Trace
from notebook_agents.trace.otlp import OWN_SPAN
from tests.trace.test_trace_spans import parsed_otlp

STARTED_AT = 1_767_000_000.0
HEADER: dict[str, Any] = {"format": TRACE_FORMAT, "started_at": STARTED_AT}
STATE: dict[str, Any] = {
    "seq": 0,
    "t": 0.1,
    "kind": "agent_state",
    "agent": "Ada",
    "data": {"old": "initializing", "new": "listening"},
}
MESSAGE: dict[str, Any] = {
    "seq": 1,
    "t": 0.2,
    "kind": "user_message",
    "agent": "Ada",
    "data": {"text": "hi", "item_id": "i1", "metrics": {}},
}
SPAN: dict[str, Any] = {
    "name": "agent_turn",
    "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    "span_id": "00f067aa0ba902b7",
    "parent_id": None,
    "start": 0.1,
    "end": 0.4,
    "scope": "livekit-agents",
    "kind": "internal",
    "status": "unset",
    "status_message": None,
    "attributes": {"lk.agent_label": "ada"},
    "events": [],
}


def write_trace(
    path: Path,
    header: dict[str, Any] = HEADER,
    events: tuple[dict[str, Any], ...] = (STATE, MESSAGE),
    spans: tuple[dict[str, Any], ...] = (SPAN,),
) -> Path:
    lines = [header, *events, *({"span": s} for s in spans)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def nested(depth: int) -> str:
    """JSON text of a list ``depth`` lists deep."""
    return "[" * depth + "1" + "]" * depth


# -- the Chrome file's name -------------------------------------------------------------


def test_the_chrome_export_is_named_as_trace_event_viewers_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """speedscope took ``call.chrome.json`` for a list of Chrome DevTools events ("t.sort is
    not a function"): the file is ``call.chrome-trace.json``, which it reads by content."""
    saved = write_trace(tmp_path / "call.jsonl")
    assert main(["export", str(saved), "--format", "chrome"]) == 0
    written = tmp_path / "call.chrome-trace.json"
    assert capsys.readouterr().out.strip() == str(written)
    assert json.loads(written.read_text(encoding="utf-8"))["traceEvents"]


# -- files no export can carry: refused at load, one line naming file, line and field -------


def span_with(**changed: Any) -> dict[str, Any]:
    return {**SPAN, **changed}


BAD_FILES: dict[str, tuple[dict[str, Any], int, str]] = {
    # name: (write_trace's arguments, the line refused, what the error says)
    "a span id not in hex": (
        {"spans": (span_with(span_id="zzzzzzzzzzzzzzzz"),)},
        4,
        'span.span_id: found "zzzzzzzzzzzzzzzz", expected 16 hex digits',
    ),
    "a span id in Python's hex notation": (
        {"spans": (span_with(span_id="0x0f067aa0ba902b"),)},
        4,
        "span.span_id: found",
    ),
    "a trace id too long": (
        {"spans": (span_with(trace_id="ab" * 17),)},
        4,
        "span.trace_id: found",
    ),
    "a parent id not in hex": (
        {"spans": (span_with(parent_id="root"),)},
        4,
        'span.parent_id: found "root", expected 16 hex digits',
    ),
    "an all-zero trace id": (
        {"spans": (span_with(trace_id="0" * 32),)},
        4,
        "span.trace_id: found",
    ),
    "an unknown span kind": (
        {"spans": (span_with(kind="sideways"),)},
        4,
        "span.kind: found \"sideways\", expected one of 'internal'",
    ),
    "a span starting past 2554": (
        {"spans": (span_with(start=1e300, end=1e300),)},
        4,
        "span.start: found 1e+300",
    ),
    "a span starting before 1970": (
        {"spans": (span_with(start=-2e9),)},
        4,
        "span.start: found -2000000000.0",
    ),
    "a span ending before it starts": (
        {"spans": (span_with(start=0.4, end=0.1),)},
        4,
        "span.end: found 0.1, before the span's start (0.4)",
    ),
    "a span event past 2554": (
        {"spans": (span_with(events=[{"name": "e", "t": 1e30, "attributes": {}}]),)},
        4,
        "span.events[0].t: found 1e+30",
    ),
    "a span attribute no OpenTelemetry attribute can be": (
        {"spans": (span_with(attributes={"lk.deep": [[1]]}),)},
        4,
        "span.attributes.lk.deep: found [[1]], expected a string, number, boolean or a list",
    ),
    "an event past 2554": ({"events": (STATE, {**MESSAGE, "t": 1e300})}, 3, "t: found 1e+300"),
    "a start time past 2554": ({"header": {**HEADER, "started_at": 1e300}}, 1, "started_at"),
    "an agent state without its new state": (
        {"events": ({**STATE, "data": {"old": "idle"}}, MESSAGE)},
        2,
        "data.new: missing, expected one of",
    ),
    "an agent state that is no state": (
        {"events": ({**STATE, "data": {"old": "idle", "new": {"state": "idle"}}}, MESSAGE)},
        2,
        'data.new: found {"state": "idle"}, expected one of',
    ),
}


@pytest.mark.parametrize("export_format", ["otlp", "chrome"])
@pytest.mark.parametrize("case", list(BAD_FILES))
def test_export_refuses_a_file_no_export_can_carry_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, export_format: str
) -> None:
    arguments, line, problem = BAD_FILES[case]
    saved = write_trace(tmp_path / "bad.jsonl", **arguments)
    assert main(["export", str(saved), "--format", export_format]) == 2
    (error,) = capsys.readouterr().err.splitlines()
    assert error.startswith(f"notebook-agents export: cannot read {saved}: {saved}:{line}: ")
    assert problem in error
    assert not list(tmp_path.glob("bad.*.json"))


def test_export_refuses_json_nested_past_what_python_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = write_trace(tmp_path / "deep.jsonl")
    with saved.open("a", encoding="utf-8") as out:
        out.write('{"span": {"attributes": {"deep": ' + nested(100_000) + "}}}\n")
    assert main(["export", str(saved)]) == 2
    (error,) = capsys.readouterr().err.splitlines()
    assert f"{saved}:5: nested deeper than" in error


@pytest.mark.parametrize("written", [TRACE_FORMAT, "notebook-agents.trace/1"])
def test_load_checks_the_states_and_keeps_other_data_as_written_within_a_depth(
    tmp_path: Path, written: str
) -> None:
    """The agent's and the user's states, which every export and view draws, are held to the
    schema (the same in every format); other kinds' data load as written (a format 1 file's
    predate the schema), but none nested deeper than an export's JSON writer can write."""
    header = {"format": written, "started_at": STARTED_AT}
    as_written = {**MESSAGE, "data": {"text": "hi", "item_id": "i1"}}  # format 1: no metrics
    assert Trace.load(write_trace(tmp_path / "call.jsonl", header, (STATE, as_written), ()))
    stateless = {**STATE, "data": {"old": "idle"}}
    with pytest.raises(ValueError, match=r"call\.jsonl:2: data\.new: missing"):
        Trace.load(write_trace(tmp_path / "call.jsonl", header, (stateless,), ()))
    deep = write_trace(tmp_path / "deep.jsonl", header, (), ())
    with deep.open("a", encoding="utf-8") as out:
        line = json.dumps({**MESSAGE, "data": {"text": "@"}}).replace('"@"', nested(900))
        out.write(line + "\n")
    with pytest.raises(ValueError, match=r"deep\.jsonl:2: data\.text: nested deeper than 64"):
        Trace.load(deep)


# -- text an export cannot encode as it is: kept, never dropped -----------------------------


def otlp_spans(text: str) -> dict[str, Span]:
    request = parsed_otlp(text)
    return {
        span.name: span
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }


def attributes(owner: Any) -> dict[str, Any]:
    """An OTLP span's or event's attributes as plain values."""
    found: dict[str, Any] = {}
    for pair in owner.attributes:
        kind = pair.value.WhichOneof("value")
        found[pair.key] = getattr(pair.value, kind) if kind else None
    return found


def test_a_lone_surrogate_is_kept_escaped_in_otlp_and_as_is_in_chrome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A message holding a lone surrogate (JSON's ``\\ud800``, which a recognizer or a model can
    send) lost its whole text in OTLP, exit 0: protobuf strings are UTF-8, which has no
    surrogates. OTLP carries it as the six characters ``\\ud800``; Chrome JSON keeps it."""
    said = {**MESSAGE, "data": {**MESSAGE["data"], "text": "caf\ud800 ok"}}
    odd_span = span_with(name="tts\udc00", attributes={"lk.key\ud800": "v\udfff"})
    saved = write_trace(tmp_path / "call.jsonl", events=(STATE, said), spans=(odd_span,))
    with caplog.at_level(logging.WARNING):
        assert main(["export", str(saved)]) == 0
        assert main(["export", str(saved), "--format", "chrome", "--out", "-"]) == 0
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    spans = otlp_spans((tmp_path / "call.otlp.json").read_text(encoding="utf-8"))
    message = spans[OWN_SPAN].events[1]
    assert attributes(message)["data.text"] == "caf\\ud800 ok"
    assert attributes(spans["tts\\udc00"]) == {"lk.key\\ud800": "v\\udfff"}
    chrome = json.loads(capsys.readouterr().out.splitlines()[-1])
    instants = [e for e in chrome["traceEvents"] if e["ph"] == "i"]
    assert instants[0]["args"]["text"] == "caf\ud800 ok"


def test_a_number_otlp_cannot_carry_goes_as_its_json_text(tmp_path: Path) -> None:
    """An integer past 64 bits (a count, in an event's data) was dropped with a log line."""
    handoff = {
        "seq": 1,
        "t": 0.2,
        "kind": "handoff",
        "agent": "Bea",
        "data": {
            "from": "Ada",
            "to": "Bea",
            "session": "reused",
            "context": "copied",
            "items_from": 2**70,
            "items_to": 3,
            "items_shared": 3,
        },
    }
    saved = write_trace(tmp_path / "call.jsonl", events=(STATE, handoff))
    spans = otlp_spans(Trace.load(saved).to_otlp_json())
    found = attributes(spans[OWN_SPAN].events[1])
    assert found["data.items_from"] == str(2**70) and found["data.items_to"] == 3


def test_a_number_json_has_no_word_for_goes_to_chrome_as_text(tmp_path: Path) -> None:
    """Python's JSON writes NaN and Infinity, which a span attribute or a measurement can be,
    as bare words no browser's ``JSON.parse`` reads: the Chrome file was no JSON to a viewer."""
    heard = {**MESSAGE, "data": {**MESSAGE["data"], "metrics": {"transcription_delay": math.nan}}}
    unsure = span_with(attributes={"lk.transcript_confidence": math.inf})
    saved = tmp_path / "call.jsonl"
    saved.write_text(
        "".join(json.dumps(line) + "\n" for line in (HEADER, STATE, heard, {"span": unsure})),
        encoding="utf-8",
    )
    trace = Trace.load(saved)

    def refuse(word: str) -> None:
        raise ValueError(f"{word} is no JSON")

    chrome = json.loads(trace.to_chrome_json(), parse_constant=refuse)
    args = [e["args"] for e in chrome["traceEvents"] if e.get("args", {}).get("seq") == 1]
    assert args[0]["metrics"] == {"transcription_delay": "NaN"}
    (turn,) = [e for e in chrome["traceEvents"] if e["ph"] == "b"]
    assert turn["args"]["lk.transcript_confidence"] == "Infinity"
    json.loads(trace.to_otlp_json(), parse_constant=refuse)


# -- OTLP to a collector --------------------------------------------------------------------


@dataclass
class Collector:
    """A local OTLP/HTTP endpoint: what it received, decoded with opentelemetry-proto."""

    url: str
    answer: int
    received: list[ExportTraceServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def spans(self) -> list[Span]:
        return [
            span
            for request in self.received
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


@contextlib.contextmanager
def collector(answer: int = 200) -> Iterator[Collector]:
    """An OTLP/HTTP collector on 127.0.0.1 (a free port) answering each export with
    ``answer``; protobuf bodies only, as OTLP/HTTP's default encoding is."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            encoding = self.headers.get("Content-Encoding")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            assert self.headers["Content-Type"] == "application/x-protobuf"
            got.paths.append(self.path)
            got.headers.append(dict(self.headers))
            got.received.append(ExportTraceServiceRequest.FromString(body))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(got.answer)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got = Collector(f"http://127.0.0.1:{server.server_address[1]}", answer)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        serving.join()


def test_send_otlp_delivers_every_span_of_the_export_to_a_collector(tmp_path: Path) -> None:
    trace = Trace.load(write_trace(tmp_path / "call.jsonl"))
    with collector() as got:
        assert trace.send_otlp(got.url) == 2
    assert got.paths == ["/v1/traces"]
    sent = {span.name: span for span in got.spans()}
    assert sent == otlp_spans(trace.to_otlp_json())
    assert sent["agent_turn"].span_id.hex() == SPAN["span_id"]
    assert [e.name for e in sent[OWN_SPAN].events] == ["agent_state", "user_message"]


def test_export_to_a_collector_sends_to_its_traces_path_or_the_one_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare base URL gets OTLP/HTTP's ``/v1/traces``; a URL with a path is the endpoint as
    is (MLflow's ``/v1/traces``, a proxy's own path); headers come from OpenTelemetry's
    variables, as every OTLP exporter reads them."""
    saved = write_trace(tmp_path / "call.jsonl")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-mlflow-experiment-id=7")
    with collector() as got:
        assert main(["export", str(saved), "--to", got.url]) == 0
        assert capsys.readouterr().out.strip() == f"sent 2 spans to {got.url}/v1/traces"
        assert main(["export", str(saved), "--to", f"{got.url}/api/otel"]) == 0
    assert got.paths == ["/v1/traces", "/api/otel"]
    assert all(h["x-mlflow-experiment-id"] == "7" for h in got.headers)
    assert len(got.spans()) == 4
    assert not list(tmp_path.glob("call.*.json"))  # sent, not written


def test_export_to_a_collector_that_refuses_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = write_trace(tmp_path / "call.jsonl")
    with collector(answer=400) as got:
        assert main(["export", str(saved), "--to", got.url]) == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"notebook-agents export: cannot send to {got.url}/v1/traces: ")
    assert "400" in error


def test_export_to_nothing_listening_gives_up_within_its_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = write_trace(tmp_path / "call.jsonl")
    with collector() as got:
        closed = got.url  # the port is free again once the collector is gone
    assert main(["export", str(saved), "--to", closed, "--timeout", "0.5"]) == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"notebook-agents export: cannot send to {closed}/v1/traces: ")


@pytest.mark.parametrize("url", ["127.0.0.1:4318", "ftp://127.0.0.1:4318", "http://"])
def test_export_to_a_url_that_is_no_http_endpoint_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    saved = write_trace(tmp_path / "call.jsonl")
    assert main(["export", str(saved), "--to", url]) == 2
    (error,) = capsys.readouterr().err.splitlines()
    assert "http://HOST:PORT" in error
