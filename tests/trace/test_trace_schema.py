"""The trace's written schema holds what real sessions record, and its documentation holds the
schema: every kind, every field."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from livekit.agents import AgentSession, MetricsCollectedEvent
from livekit.agents.metrics import LLMMetrics
from livekit.plugins import openai
from typing_extensions import get_type_hints, is_typeddict

from notebook_agents import NotebookRunner
from notebook_agents._records import FieldError
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from notebook_agents.trace import SpanEventData, Trace, TraceSpan
from notebook_agents.trace.describe import usage_data
from notebook_agents.trace.schema import EVENT_DATA, EventKind, check_event_data
from tests.conftest import API_KEY, MakeModel
from tests.runner.test_runner_voice import realtime_voice_server
from tests.trace.test_trace import (
    Alice,
    Bob,
    late_tool_results,
    recorded,
    traced,
    with_system_message,
)

DOC = Path(__file__).parents[2] / "docs" / "trace-format.md"


def test_every_kind_has_a_schema() -> None:
    assert set(EVENT_DATA) == set(get_args(EventKind))


@pytest.mark.slow
async def test_every_kind_real_sessions_record_holds_to_its_schema(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    traces: list[Trace] = []
    # handoffs (start, reused and copied, fresh), tools (one failing), an edit, usage, the
    # user going away, a response the model cancelled, an item it rejected, a runner failure
    # Bob's own connection: the model cancels his responses and rejects the items he sends
    faulty = emulator.base_url(cancel_responses=1, error_on="conversation.item.create")
    careless = openai.realtime.RealtimeModel(base_url=faulty, api_key=API_KEY, modalities=["text"])
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )
    alice = Alice(lambda alice: Bob(back=alice, model=careless, chat_ctx=alice.chat_ctx.copy()))
    session: AgentSession[None] = AgentSession(
        llm=model, vad=None, turn_handling={"turn_detection": "manual"}, user_away_timeout=0.1
    )
    trace = Trace(session)
    traces.append(trace)
    try:
        await session.start(alice)
        await recorded(trace, "user_state", count=1)  # both quiet: the user is away
        for text in ("get weather city=Paris", "lookup account please"):
            await session.run(user_input=text)
        await alice.update_chat_ctx(with_system_message(alice, "Be brief."))
        await session.run(user_input="please transfer to bob")
        await session.run(user_input="hello")  # cancelled, and rejected
        trace.record_failure("the job failed")
    finally:
        await session.aclose()
        await model.aclose()
        await careless.aclose()
    # the two sides parted by a late tool result, and together again once it came
    async with (
        late_tool_results(emulator, 5500) as late,
        traced(late, Alice(), parts=True) as (session, parted),
    ):
        traces.append(parted)
        await session.run(user_input="get weather city=Oslo")
        await recorded(parted, "context_converged", count=1)
    # a spoken turn to a realtime model that hears and speaks: what recognition heard; and
    # the caller speaking over its reply (no echo warm-up, which would not hear them)
    spoken = NotebookRunner(realtime_voice_server(emulator, aec_warmup_duration=None), audio=True)
    runners.append(spoken)
    spoken.start()
    await spoken.ready()
    question = asyncio.ensure_future(spoken.send_audio(synthesize("hello there")))
    await spoken.send_audio(synthesize("thank you"), at=0.5)
    await question
    traces.append(spoken.trace)

    events = [event for trace in traces for event in trace.events]
    for event in events:
        check_event_data(event.kind, event.data)
    assert {event.kind for event in events} == set(get_args(EventKind))
    errors = {(e.data["type"], e.data["source"]) for e in trace.of_kind("error")}
    assert errors >= {
        ("ResponseCancelled", "realtime"),
        ("ItemRejected", "realtime"),
        ("RunnerError", "runner"),
    }
    assert trace.of_kind("closed")[-1].data["reason"] == "error"


@pytest.mark.parametrize(
    ("kind", "data", "problem"),
    [
        ("closed", {"reason": "user_initiated"}, "error: missing, expected a string or null"),
        ("closed", {"reason": "x", "error": None, "why": 1}, "why: not a key"),
        ("tool_output", {"name": "f", "call_id": "c", "output": "", "is_error": 1}, "is_error"),
        ("handoff", {"from": None, "to": "A", "session": "reuse", "context": None}, "session"),
        ("context_changed", {"agent": "A", "added": [{"id": "i"}], "removed": []}, "added[0].type"),
        ("user_message", {"text": "hi", "item_id": "i", "metrics": {"e2e": "x"}}, "metrics.e2e"),
        ("colour", {}, "'colour' is no event kind"),
    ],
)
def test_data_outside_the_schema_is_refused_naming_the_key(
    kind: str, data: dict[str, Any], problem: str
) -> None:
    with pytest.raises(FieldError) as caught:
        check_event_data(kind, data)
    assert str(caught.value).startswith(problem)


async def test_metrics_are_the_sessions_usage_not_the_deprecated_metrics_event(
    models: MakeModel,
) -> None:
    async with traced(models(), Alice()) as (session, trace):
        await session.run(user_input="hello there")
        usage = usage_data(session.usage)
        # the deprecated session event: the trace no longer listens to it
        old = LLMMetrics(
            label="x", request_id="r", timestamp=0.0, duration=1.0, ttft=0.5, cancelled=False,
            completion_tokens=9, prompt_tokens=9, prompt_cached_tokens=0, total_tokens=18,
            tokens_per_second=9.0,
        )  # fmt: skip
        recorded_before = len(trace.of_kind("metrics"))
        session.emit("metrics_collected", MetricsCollectedEvent(metrics=old))
        assert len(trace.of_kind("metrics")) == recorded_before

    metrics = trace.of_kind("metrics")
    assert metrics[-1].data == {"usage": usage}
    (model,) = usage
    assert model["type"] == "llm_usage" and model["counts"]["output_tokens"] > 0
    # recorded when the usage changed only; it only grows
    assert all(before.data != after.data for before, after in itertools.pairwise(metrics))
    totals = [e.data["usage"][0]["counts"].get("output_tokens", 0) for e in metrics]
    assert totals == sorted(totals)


async def test_messages_carry_livekits_per_turn_metrics(models: MakeModel) -> None:
    async with traced(models(), Alice()) as (session, trace):
        await session.run(user_input="hello there")

    replies = {item.id: item for item in session.history.messages() if item.role == "assistant"}
    for event in trace.of_kind("agent_message"):
        reported = replies[event.data["item_id"]].metrics
        assert event.data["metrics"] == {
            name: value for name, value in reported.items() if isinstance(value, float)
        }
    assert "started_speaking_at" in trace.of_kind("agent_message")[-1].data["metrics"]


def test_the_format_doc_names_every_kind_and_every_field() -> None:
    sections = _sections(DOC.read_text(encoding="utf-8"))
    for kind, schema in EVENT_DATA.items():
        heading = f"`{kind}` ({schema.__name__})"
        assert heading in sections, f"docs/trace-format.md has no section {heading}"
    for schema in _typed_dicts(EVENT_DATA.values()):
        (section,) = [text for title, text in sections.items() if f"({schema.__name__})" in title]
        for key in get_type_hints(schema):
            assert f"| `{key}` |" in section, f"{schema.__name__}.{key} is not in the doc"
        documented = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
        assert set(documented) == set(get_type_hints(schema)), schema.__name__


def test_the_format_doc_names_every_field_of_a_span() -> None:
    sections = _sections(DOC.read_text(encoding="utf-8"))
    for schema, fields in (
        (TraceSpan, {f.name for f in dataclasses.fields(TraceSpan)}),
        (SpanEventData, set(get_type_hints(SpanEventData))),
    ):
        (section,) = [text for title, text in sections.items() if f"({schema.__name__})" in title]
        assert set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)) == fields


def _sections(text: str) -> dict[str, str]:
    """Each ``###`` heading -> the text under it, to the next heading."""
    parts = re.split(r"^### (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _typed_dicts(hints: Any) -> set[Any]:
    """The TypedDicts among ``hints`` and inside them (a list's items, a dict's values)."""
    found: set[Any] = set()
    for hint in hints:
        if is_typeddict(hint):
            found |= {hint} | _typed_dicts(get_type_hints(hint).values())
        else:
            found |= _typed_dicts(get_args(hint))
    return found
