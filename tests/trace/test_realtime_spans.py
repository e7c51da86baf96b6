"""The spans the trace adds for a realtime session: its connect and each response, from the
plugin's own events (fed here as the plugin emits them)."""

from __future__ import annotations

import pytest
from livekit.agents import metrics

from notebook_agents.trace import Trace
from notebook_agents.trace.livekit_spans import capture_spans_here
from notebook_agents.trace.realtime_spans import RealtimeSpans


def connected(acquire_time: float, request_id: str = "") -> metrics.RealtimeModelMetrics:
    return metrics.RealtimeModelMetrics(
        label="openai",
        request_id=request_id,
        timestamp=0.0,
        acquire_time=acquire_time,
        input_token_details=metrics.RealtimeModelMetrics.InputTokenDetails(),
        output_token_details=metrics.RealtimeModelMetrics.OutputTokenDetails(),
    )


def test_a_connection_and_responses_become_spans_with_their_moments() -> None:
    trace = Trace()
    release = capture_spans_here(trace)
    handlers = RealtimeSpans().handlers()
    sent, received = (
        handlers["openai_client_event_queued"],
        handlers["openai_server_event_received"],
    )
    try:
        handlers["metrics_collected"](connected(0.25))
        handlers["metrics_collected"](connected(0.0, request_id="resp_1"))  # a response's
        sent({"type": "response.create", "event_id": "ev_1"})
        metadata = {"client_event_id": "ev_1"}
        received({"type": "response.created", "response": {"id": "resp_1", "metadata": metadata}})
        received({"type": "response.output_audio_transcript.delta", "response_id": "resp_1"})
        received({"type": "response.output_audio.delta", "response_id": "resp_1"})
        received({"type": "response.output_audio.delta", "response_id": "resp_1"})
        received({"type": "response.done", "response": {"id": "resp_1"}})
        # one the server made on its own (its turn detection): nobody asked for it
        received({"type": "response.created", "response": {"id": "resp_2", "metadata": None}})
        received({"type": "response.done", "response": {"id": "resp_2"}})
    finally:
        release()
    connect, asked, unasked = trace.spans
    assert connect.name == "realtime_connect" and connect.scope == "notebook_agents"
    assert connect.end - connect.start == pytest.approx(0.25, abs=1e-3)
    assert connect.attributes["lk.connection.acquire_time"] == 0.25
    assert asked.name == unasked.name == "realtime_response"
    assert asked.attributes["gen_ai.response.id"] == "resp_1"
    moments = {e["name"]: e["t"] for e in asked.events}
    assert list(moments) == ["response.created", "first_text", "first_audio"]
    assert asked.start <= moments["response.created"] <= moments["first_text"]
    assert moments["first_text"] <= moments["first_audio"] <= asked.end
    assert [e["name"] for e in unasked.events] == ["response.created"]
    assert unasked.start == unasked.events[0]["t"]


def test_spans_of_a_released_capture_no_longer_reach_its_trace() -> None:
    trace = Trace()
    capture_spans_here(trace)()
    RealtimeSpans().handlers()["metrics_collected"](connected(0.1))
    assert trace.spans == []
