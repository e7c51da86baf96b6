"""livekit's own OpenTelemetry spans in the runner's trace: captured per runner beside a
user's tracer provider, saved and loaded, and exported as OTLP JSON and Chrome trace events."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, telemetry
from livekit.plugins import openai
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from notebook_agents import NotebookRunner
from notebook_agents import _livekit_internals as livekit
from notebook_agents.__main__ import main
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from notebook_agents.trace import Trace, TraceSpan, livekit_spans
from notebook_agents.trace.chrome import TURN_SPANS, to_chrome_trace
from notebook_agents.trace.livekit_spans import to_trace_span
from notebook_agents.trace.otlp import OWN_SPAN, spans_of_otlp, to_otlp_json
from tests.conftest import API_KEY, started
from tests.handoff_agents import Concierge
from tests.runner.test_runner import production_server
from tests.runner.test_runner_voice import voice_server

CONVERSATION = "gen_ai.conversation.id"


def cascaded_server(emulator: Emulator) -> AgentServer:
    """A typed agent on the Chat Completions LLM (no realtime model)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        llm = openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")
        session: AgentSession[None] = AgentSession(llm=llm)
        await session.start(agent=Agent(instructions="You are Cy."), room=ctx.room)

    return server


async def finished(runners: list[NotebookRunner], server: AgentServer, *turns: str) -> Trace:
    """The trace of a runner that took ``turns`` and stopped (every span has ended)."""
    runner = await started(runners, NotebookRunner(server))
    for text in turns:
        await runner.send_text(text)
    runner.stop()
    return runner.trace


def names(trace: Trace) -> list[str]:
    return [span.name for span in trace.spans]


def conversations(trace: Trace) -> set[Any]:
    return {span.attributes.get(CONVERSATION) for span in trace.spans}


async def test_a_typed_turn_to_a_realtime_model_records_livekits_spans(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    trace = await finished(runners, production_server(emulator), "what is 2 plus 3")
    found = names(trace)
    for name in ("job_entrypoint", "agent_session", "agent_turn", "realtime_inference"):
        assert name in found
    (turn,) = [s for s in trace.spans if s.name == "agent_turn"]
    (inference,) = [s for s in trace.spans if s.name == "realtime_inference"]
    assert inference.parent_id == turn.span_id and turn.start <= inference.start < inference.end
    # on one clock, in livekit's order: the user's message (livekit's own time for it: the
    # events' times are when the trace heard them, later by however loaded the machine is),
    # then the turn, its inference, and the reply heard from it
    (asked,) = trace.of_kind("user_message")
    (said,) = trace.of_kind("agent_message")
    asked_at = asked.data["created_at"] - trace.started_at
    assert asked_at <= turn.start <= inference.start < said.t and asked.t < said.t
    assert len(conversations(trace)) == 1 and None not in conversations(trace)


async def test_a_typed_turn_to_an_llm_records_its_node_and_request_spans(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    trace = await finished(runners, cascaded_server(emulator), "what is 2 plus 3")
    by_name = {span.name: span for span in trace.spans}
    assert {"agent_turn", "llm_node", "llm_request"} <= set(by_name)
    assert by_name["llm_node"].parent_id == by_name["agent_turn"].span_id


@pytest.fixture
def users_provider() -> Iterator[InMemorySpanExporter]:
    """A provider the user gave livekit, exporting to memory; livekit's own put back after."""
    before = livekit.livekit_tracer_provider()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.set_tracer_provider(provider)
    yield exporter
    telemetry.set_tracer_provider(before)
    provider.shutdown()


async def test_a_users_tracer_provider_still_receives_livekits_spans(
    emulator: Emulator, runners: list[NotebookRunner], users_provider: InMemorySpanExporter
) -> None:
    provider = livekit.livekit_tracer_provider()
    trace = await finished(runners, production_server(emulator), "hello")
    assert livekit.livekit_tracer_provider() is provider  # theirs, not replaced
    theirs = {
        format(s.context.span_id, "016x"): s.name for s in users_provider.get_finished_spans()
    }
    ours = {span.span_id: span.name for span in trace.spans}
    assert "agent_turn" in ours.values() and ours.items() <= theirs.items()


async def test_spans_that_come_as_otlp_are_kept_as_the_kernels_are(
    emulator: Emulator, runners: list[NotebookRunner], users_provider: InMemorySpanExporter
) -> None:
    # what an agent in another process posts (AgentProcess's receiver reads it)
    trace = await finished(runners, production_server(emulator), "transfer to weather")
    sent = users_provider.get_finished_spans()
    assert any(span.events for span in sent) and any(span.parent for span in sent)
    posted = encode_spans(sent).SerializeToString()
    received = spans_of_otlp(posted, trace.started_at)
    kept = [to_trace_span(span, trace) for span in sent]
    # the same spans; OTLP groups them by instrumentation scope
    assert sorted(received, key=lambda s: s.span_id) == sorted(kept, key=lambda s: s.span_id)


async def test_two_runners_at_once_keep_their_spans_apart(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    one = await started(runners, NotebookRunner(production_server(emulator, "You are Ada.")))
    two = await started(runners, NotebookRunner(production_server(emulator, "You are Bo.")))
    await one.send_text("hello")
    await two.send_text("hello")
    await two.send_text("what is 1 plus 1")
    one.stop()
    two.stop()
    assert names(one.trace).count("agent_turn") == 1
    assert names(two.trace).count("agent_turn") == 2
    assert names(one.trace).count("agent_session") == names(two.trace).count("agent_session") == 1
    assert len(conversations(one.trace)) == len(conversations(two.trace)) == 1
    assert conversations(one.trace) != conversations(two.trace)
    assert not {s.span_id for s in one.trace.spans} & {s.span_id for s in two.trace.spans}


async def test_a_turns_spans_are_made_into_trace_spans_only_when_read(
    emulator: Emulator, runners: list[NotebookRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the session's thread a span's end is only kept: made into a ``TraceSpan`` (its
    attributes and events copied, its ids formatted) when the trace's spans are read, as the
    trace makes its events."""
    made: list[str] = []

    def counted(span: Any, trace: Trace) -> TraceSpan:
        made.append(span.name)
        return to_trace_span(span, trace)

    monkeypatch.setattr(livekit_spans, "to_trace_span", counted)
    runner = await started(runners, NotebookRunner(production_server(emulator)))
    await runner.send_text("hello")
    assert made == []
    assert "agent_turn" in names(runner.trace)
    assert made == names(runner.trace)  # each once, in the order they ended


async def test_spans_survive_save_and_load_and_export_the_same(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    trace = await finished(runners, production_server(emulator), "hello")
    loaded = Trace.load(trace.save(tmp_path / "trace.jsonl"))
    assert loaded.spans == trace.spans and loaded.events == trace.events
    assert loaded.to_otlp_json() == trace.to_otlp_json() == to_otlp_json(trace)
    assert loaded.to_chrome_json() == trace.to_chrome_json()
    assert to_chrome_trace(loaded) == to_chrome_trace(trace)


def parsed_otlp(text: str) -> ExportTraceServiceRequest:
    """OTLP JSON read back with the protobuf message type; its hex ids (the OTLP JSON
    encoding) turned back into the base64 protobuf's JSON mapping reads for bytes."""

    def ids_as_base64(node: Any) -> Any:
        if isinstance(node, list):
            return [ids_as_base64(v) for v in node]
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in ("traceId", "spanId", "parentSpanId")
                else ids_as_base64(v)
                for k, v in node.items()
            }
        return node

    return json_format.ParseDict(ids_as_base64(json.loads(text)), ExportTraceServiceRequest())


async def test_otlp_json_holds_livekits_spans_and_our_events(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    trace = Trace.load(
        (await finished(runners, production_server(emulator), "hi")).save(tmp_path / "trace.jsonl")
    )
    request = parsed_otlp(to_otlp_json(trace))
    spans = {
        span.name: span
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    assert set(spans) == {*names(trace), OWN_SPAN}
    own = spans[OWN_SPAN]
    assert [e.name for e in own.events] == [e.kind for e in trace.events]
    # ours sits in livekit's trace, under the job's span
    assert own.parent_span_id == spans["job_entrypoint"].span_id
    assert own.trace_id == spans["job_entrypoint"].trace_id == spans["agent_turn"].trace_id
    turn = next(s for s in trace.spans if s.name == "agent_turn")
    assert spans["agent_turn"].span_id.hex() == turn.span_id
    assert spans["agent_turn"].end_time_unix_nano - spans["agent_turn"].start_time_unix_nano == (
        pytest.approx((turn.end - turn.start) * 1e9, abs=1e3)
    )
    ids = json.loads(to_otlp_json(trace))["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(ids["traceId"]) == 32 and len(ids["spanId"]) == 16  # hex, as OTLP JSON has it


async def test_a_trace_saved_mid_call_exports_in_livekits_one_trace(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    """Saved before ``stop()`` (the job's span still open), ours was a root in a trace of its
    own: two trace ids in one export."""
    runner = await started(runners, NotebookRunner(production_server(emulator)))
    await runner.send_text("hi")
    saved = Trace.load(runner.trace.save(tmp_path / "live.jsonl"))
    runner.stop()
    assert "job_entrypoint" not in names(saved)
    request = parsed_otlp(to_otlp_json(saved))
    exported = [
        span
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert {span.trace_id for span in exported} == {bytes.fromhex(saved.spans[0].trace_id)}


def span(name: str, span_id: str, start: float, end: float, parent: str | None) -> TraceSpan:
    return TraceSpan(
        name=name,
        trace_id="0" * 31 + "1",
        span_id=span_id,
        parent_id=parent,
        start=start,
        end=end,
        scope="livekit-agents",
        kind="internal",
        status="unset",
        status_message=None,
        attributes={},
        events=[],
    )


def nested(slices: list[dict[str, Any]]) -> bool:
    """Any two slices are apart or one holds the other."""
    for a in slices:
        for b in slices:
            a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
            if a is not b and a0 < b0 < a1 < b1:
                return False
    return True


def test_chrome_trace_nests_slices_per_lane_and_overlapping_turns_are_async() -> None:
    trace = Trace()
    for made in (
        span("agent_session", "a" * 16, 0.0, 3.0, None),
        span("user_turn", "b" * 16, 0.5, 1.5, "a" * 16),
        span("agent_turn", "c" * 16, 1.2, 2.5, "a" * 16),  # the user speaks on into it
        span("llm_node", "d" * 16, 1.3, 2.0, "c" * 16),
        span("tts_node", "e" * 16, 1.6, 2.4, "c" * 16),  # overlaps llm_node: another lane
    ):
        trace._add_span(made)
    trace._record("user_message", {"text": "hi", "item_id": "i", "metrics": {}}, "Ada")
    events = to_chrome_trace(trace)["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    lanes = {e["tid"] for e in slices}
    assert {e["name"] for e in slices} == {"agent_session", "llm_node", "tts_node"}
    assert len(lanes) == 2 and all(nested([e for e in slices if e["tid"] == t]) for t in lanes)
    named = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert lanes | {e["tid"] for e in events if e["ph"] == "i"} <= named
    begins = {e["id"]: e for e in events if e["ph"] == "b"}
    ends = {e["id"]: e for e in events if e["ph"] == "e"}
    assert {e["name"] for e in begins.values()} == TURN_SPANS and begins.keys() == ends.keys()
    assert all(ends[i]["ts"] > begins[i]["ts"] and ends[i]["cat"] == "turn" for i in begins)
    assert [e["name"] for e in events if e["ph"] == "i"] == ["user_message"]


def test_the_export_command_writes_both_formats_beside_a_saved_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = Trace()
    trace._add_span(span("agent_turn", "c" * 16, 0.1, 0.4, None))
    trace._record("user_message", {"text": "hi", "item_id": "i", "metrics": {}}, "Ada")
    saved = trace.save(tmp_path / "run.jsonl")
    loaded = Trace.load(saved)
    assert main(["export", str(saved)]) == 0
    written = tmp_path / "run.otlp.json"
    assert capsys.readouterr().out.strip() == str(written)
    assert written.read_text(encoding="utf-8") == to_otlp_json(loaded)
    parsed_otlp(written.read_text(encoding="utf-8"))
    assert main(["export", str(saved), "--format", "chrome", "--out", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == to_chrome_trace(loaded)
    assert main(["export", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    # a folder that is not there: said in a line, not a traceback
    assert main(["export", str(saved), "--out", str(tmp_path / "no" / "x.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.slow  # the export command's process
def test_export_to_a_reader_that_stops_early_ends_quietly(tmp_path: Path) -> None:
    """``--out - | head -c 1``: a BrokenPipeError traceback before."""
    trace = Trace()
    for n in range(200):
        trace._record("user_message", {"text": "hi" * 50, "item_id": f"i{n}", "metrics": {}}, "A")
    saved = trace.save(tmp_path / "run.jsonl")
    command = [sys.executable, "-m", "notebook_agents", "export", str(saved), "--out", "-"]
    export = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert export.stdout is not None and export.stdout.read(1)
    export.stdout.close()  # the reader is gone
    _, err = export.communicate(timeout=60)
    assert export.returncode == 0 and b"Traceback" not in err, err.decode()


GLOBAL_PROVIDER_LATER = """
import asyncio, json, sys
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from tests.runner.test_runner import production_server

async def turn(emulator):
    runner = NotebookRunner(production_server(emulator))
    runner.start()
    await runner.ready()
    await runner.send_text("hello")
    runner.stop()
    return [span.span_id for span in runner.trace.spans if span.name == "agent_turn"]

async def main():
    with Emulator() as emulator:
        before = await turn(emulator)  # nobody set a provider: ours
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace_api.set_tracer_provider(provider)  # the user's, set globally, once
        after = await turn(emulator)
    theirs = [format(s.context.span_id, "016x") for s in exporter.get_finished_spans()]
    print(json.dumps({"before": before, "after": after, "theirs": theirs}))

asyncio.run(main())
"""


@pytest.mark.slow  # a process of its own
def test_a_global_provider_set_later_gets_livekits_spans_and_we_still_capture() -> None:
    """OpenTelemetry's global provider can be set once per process: in a process of its own."""
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", GLOBAL_PROVIDER_LATER],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert len(found["before"]) == len(found["after"]) == 1
    assert found["after"][0] in found["theirs"] and found["before"][0] not in found["theirs"]


def handoff_server(emulator: Emulator) -> AgentServer:
    """The Concierge hands over to Billing on a text realtime model (the session reused)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
        session: AgentSession[None] = AgentSession(llm=model)
        await session.start(agent=Concierge(), room=ctx.room)

    return server


def children(trace: Trace, parent: TraceSpan) -> list[str]:
    return [s.name for s in trace.spans if s.parent_id == parent.span_id]


async def test_a_handoff_records_livekits_update_agent_span_with_its_stages(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    trace = await finished(runners, handoff_server(emulator), "transfer to billing")
    assert [(h.data["from"], h.data["to"]) for h in trace.of_kind("handoff")][-1] == (
        "Concierge",
        "Billing",
    )
    (update,) = [s for s in trace.spans if s.name == "update_agent"]
    assert update.attributes["lk.previous_agent_label"] == "concierge"
    assert update.attributes["lk.agent_label"] == "billing"
    stages = children(trace, update)
    assert {"drain_agent_activity", "start_agent_activity"} <= set(stages)
    handed = trace.of_kind("handoff")[-1]
    assert update.start - 0.05 < handed.t < update.end + 0.05


@pytest.mark.slow
async def test_a_spoken_turn_records_its_turn_spans_with_livekits_own_figures(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    await runner.send_audio(synthesize("what is two plus three"))
    runner.stop()
    trace = runner.trace
    by_name = {s.name: s for s in trace.spans}
    assert {"user_turn", "eou_detection", "agent_turn", "llm_node", "tts_node"} <= set(by_name)
    (heard,) = trace.of_kind("user_message")
    (said,) = trace.of_kind("agent_message")
    # the spans carry the figures livekit put on the messages
    user_turn, agent_turn = by_name["user_turn"], by_name["agent_turn"]
    assert (
        user_turn.attributes["lk.end_of_turn_delay"] == heard.data["metrics"]["end_of_turn_delay"]
    )
    assert agent_turn.attributes["lk.e2e_latency"] == said.data["metrics"]["e2e_latency"]
    assert by_name["tts_node"].parent_id == agent_turn.span_id
