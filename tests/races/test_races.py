"""Each handoff race runs offline against the emulator and its detector says whether it
happened: triggered, the outcome livekit-agents 1.8.9 shows; in its control run, never."""

from __future__ import annotations

import re

import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from notebook_agents.emulator import Emulator, ReplyRules, ToolCallReply, ToolCallsReply
from notebook_agents.emulator.replies import Reply, ReplyContext
from notebook_agents.races import RACES, RaceCase, RaceProvider, RaceRun, run_race
from notebook_agents.races.tool_batch import DUPLICATE_HANDOFF, PARALLEL_BATCH
from notebook_agents.races.tool_reply import WAITED
from notebook_agents.views import TimelineView
from tests.conftest import API_KEY

STILL_IN_1_8_9 = {
    "closing_session": True,
    "paused_handback": True,
    "tool_reply_race": False,
    "late_tool_ack": True,
    "parallel_batch": False,
    "duplicate_handoff": True,
    "run_vs_task": False,
}
"""measured on livekit-agents 1.8.9 (the installed one) on OpenAI; each case records it"""
ON_GEMINI = {**STILL_IN_1_8_9, "tool_reply_race": True}
"""on Gemini Live (livekit-plugins-google 1.8.9): the provider's own tool reply still races;
late_tool_ack runs on OpenAI only (Gemini acks no item)"""
del ON_GEMINI["late_tool_ack"]

MARKED = {
    ("closing_session", "openai"): [("Reception", "closing session used")],
    ("closing_session", "gemini"): [("Reception", "closing session used")],
    ("paused_handback", "openai"): [("Survey", "hand-back refused")],
    ("paused_handback", "gemini"): [("Survey", "hand-back refused")],
    ("tool_reply_race", "openai"): [("Bob", "Bob's own reply")],
    ("tool_reply_race", "gemini"): [
        ("Alice", "tool reply cut off"),
        ("Alice", "tool reply never came"),
    ],
    ("late_tool_ack", "openai"): [("Greeter", "ack timed out")],
    ("parallel_batch", "openai"): [("Greeter", "handoff kept")],
    ("parallel_batch", "gemini"): [("Greeter", "handoff kept")],
    ("duplicate_handoff", "openai"): [("Router", "handoff dropped")],
    ("duplicate_handoff", "gemini"): [("Router", "handoff dropped")],
    ("run_vs_task", "openai"): [("Intake", "run completed")],
    ("run_vs_task", "gemini"): [("Intake", "run completed")],
}
"""each triggered run's marks on its timeline: the lane and the chip's words (a race that
1.8.9 no longer has marks what shows it went right)"""

WAITS_OUT_LIVEKIT = {
    ("late_tool_ack", "openai"),
    ("tool_reply_race", "gemini"),
    ("parallel_batch", "gemini"),
    ("paused_handback", "gemini"),
}
"""runs in which one of livekit's own 5 s waits runs out (an ack, a tool's reply): 5-11 s
alone, so ``slow``"""

RUNS = [
    pytest.param(
        case, provider, marks=pytest.mark.slow if (name, provider) in WAITS_OUT_LIVEKIT else ()
    )
    for provider in ("openai", "gemini")
    for name, case in RACES.items()
    if provider == "openai" or "gemini" in case.providers
]


def test_every_case_says_what_1_8_9_shows() -> None:
    assert {name: case.in_livekit_1_8_9 for name, case in RACES.items()} == STILL_IN_1_8_9
    on_gemini = {n: c.happens_on("gemini") for n, c in RACES.items() if "gemini" in c.providers}
    assert on_gemini == ON_GEMINI


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("case", "provider"), RUNS, ids=lambda v: v.name if isinstance(v, RaceCase) else v
)
async def test_the_race_happens_as_in_1_8_9_and_never_in_its_control(
    case: RaceCase, provider: RaceProvider
) -> None:
    triggered = await run_race(case, provider=provider)
    assert triggered.verdict.happened is case.happens_on(provider), triggered.verdict
    assert triggered.verdict.evidence, "a verdict names what it read"
    shown = marked(triggered)
    assert [(lane, label) for lane, label, _ in shown] == MARKED[case.name, provider]
    assert {key for _, _, key in shown} == {"race" if triggered.verdict.happened else "no_race"}
    control = await run_race(case, triggered=False, provider=provider)
    assert not control.verdict.happened, control.verdict
    assert {key for _, _, key in marked(control)} == {"no_race"}


def marked(run: RaceRun) -> list[tuple[str, str, str]]:
    """The run's race marks as its timeline lays them out: (lane, chip, legend key), each at
    a moment on the timeline's axis, each keyed in the legend."""
    view = TimelineView(run.trace, run.latency, marks=run.verdict.marks)
    assert view.race_marks, f"{run.case.name}: nothing on the timeline shows the verdict"
    keys = {e["key"] for e in view.legend if e["group"] == "race"}
    assert view.first_t is not None and view.last_t is not None
    found = []
    for mark in view.race_marks:
        assert view.first_t <= mark["t"] <= view.last_t, mark
        assert mark["key"] in keys and mark["label"] in mark["detail"]
        found.append((view.lanes[mark["lane"]], mark["label"], mark["key"]))
    view.close()
    return found


async def test_the_paused_handback_is_refused_and_the_caller_stays_with_the_task() -> None:
    run = await run_race(RACES["paused_handback"])
    assert any("an activity is already running" in p.message for p in run.problems)
    handoffs = [(e.data["from"], e.data["to"]) for e in run.trace.of_kind("handoff")]
    # in, the refused hand-back (no event), then the task completed and resumed the desk
    assert handoffs == [(None, "FrontDesk"), ("FrontDesk", "Survey"), ("Survey", "FrontDesk")]
    (back,) = [e for e in run.trace.of_kind("tool_output") if e.data["name"] == "transfer_back"]
    assert back.seq in run.verdict.seqs
    # the refusal is marked between the handoff to the task and the task's end resuming the
    # desk (that later handoff is not the hand-back), and says so
    (refused,) = run.verdict.marks
    into, resumed = run.trace.of_kind("handoff")[1:]
    assert into.t < refused.t < resumed.t
    assert "an activity is already running" in refused.detail
    assert "until the task completes" in run.verdict.summary


async def test_the_closing_session_costs_the_fresh_handoff_a_round_trip() -> None:
    """1.8.9 syncs the handoff tool's output to the old session after update_agent and the
    drain waits for its ack: the drain lasts the emulator's round trip (100 ms)."""
    run = await run_race(RACES["closing_session"])
    (late,) = [w for w in run.wire if w.session == 0 and w.item_type == "function_call_output"]
    swap = next(s for s in run.trace.spans if s.name == "update_agent")
    drain = next(s for s in run.trace.spans if s.name == "drain_agent_activity")
    assert swap.start <= drain.start <= late.t < drain.end
    assert drain.end - drain.start >= 0.1
    assert [e.data["session"] for e in run.trace.of_kind("handoff")][-1] == "fresh"


async def test_one_detector_drops_a_duplicate_and_keeps_a_mixed_batch() -> None:
    """The parallel batch no longer drops the handoff in 1.8.9; the same detector fires on
    the duplicate batch, which still does, so a regression of #7320 would fail here."""
    assert PARALLEL_BATCH.detect is DUPLICATE_HANDOFF.detect
    mixed = await run_race(PARALLEL_BATCH)
    outputs = [e.data["name"] for e in mixed.trace.of_kind("tool_output")]
    assert sorted(outputs) == ["route", "save_note"]
    assert [e.data["to"] for e in mixed.trace.of_kind("handoff")][-1] == "Greeter"
    twice = await run_race(DUPLICATE_HANDOFF)
    assert [e.data["name"] for e in twice.trace.of_kind("tool_output")] == ["route", "route"]
    assert any("expected to receive only one" in p.message for p in twice.problems)


async def test_an_openai_only_case_asked_for_gemini_says_why() -> None:
    with pytest.raises(ValueError, match="Gemini Live acknowledges no item"):
        await run_race(RACES["late_tool_ack"], provider="gemini")


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_gemini_tool_reply_race_is_the_same_every_run_in_one_process() -> None:
    """The trigger pins the window: the model takes 300 ms to a first token (the Live API's,
    as users measure it), so Bob's instructions, which livekit sends on the reused session
    right after the tool's result, always interrupt the model's answer to it ("a message here
    will interrupt any current model generation", BidiGenerateContentClientContent). The reply
    the tool asked for is never made, session.run waits 5 s for it, and Bob's on_enter reply
    is Bob's own: the same verdict and evidence every run, the first or the third."""
    case = RACES["tool_reply_race"]
    verdicts = []
    for _ in range(3):
        run = await run_race(case, provider="gemini")
        (conversation,) = run.conversations  # one Live session throughout: reused
        texts = [(i["type"], i.get("role"), i.get("text")) for i in conversation]
        output = next(n for n, t in enumerate(texts) if t[0] == "function_call_output")
        # no answer: the next item is Bob's instructions, a model turn on the kept session
        assert texts[output + 1] == ("message", "assistant", "You are Bob. You handle billing.")
        assert not any("The tool returned" in str(t[2]) for t in texts)
        (bob,) = [e for e in run.trace.of_kind("agent_message") if e.agent == "Bob"]
        assert bob.data["phase"] == "on_enter"
        assert any(WAITED in p.message for p in run.problems)
        verdicts.append((run.verdict.happened, run.verdict.summary, _timeless(run)))
    assert verdicts[0][0] and "interrupted" in verdicts[0][1]
    assert verdicts == [verdicts[0]] * 3


def _timeless(run: RaceRun) -> tuple[str, ...]:
    """A verdict's evidence without its times (they differ by a few ms from run to run)."""
    return tuple(re.sub(r"t=[0-9.]+s ", "", line) for line in run.verdict.evidence)


async def test_gemini_closing_session_gets_the_tool_result_but_nothing_waits() -> None:
    run = await run_race(RACES["closing_session"], provider="gemini")
    swap = next(s for s in run.trace.spans if s.name == "update_agent")
    assert [w.type for w in run.wire if w.session == 0 and w.t >= swap.start] == ["toolResponse"]
    (closing, _) = run.conversations
    assert closing[-1]["role"] == "assistant"  # the model answered it on the closing session
    drain = next(s for s in run.trace.spans if s.name == "drain_agent_activity")
    assert drain.end - drain.start < 0.1  # no ack to wait for: less than the round trip


def two_calls(ctx: ReplyContext) -> Reply | None:
    return ToolCallsReply((ToolCallReply("a", {}), ToolCallReply("b", {"x": 1})))


async def test_chat_completions_answer_with_parallel_tool_calls() -> None:
    """A rule's parallel calls reach a Chat Completions client as one message's tool_calls,
    streamed and whole, with distinct ids."""
    tools: list[ChatCompletionFunctionToolParam] = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("a", "b")
    ]
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "go"}]
    with Emulator(rules=ReplyRules([two_calls])) as emulator:
        client = AsyncOpenAI(base_url=emulator.base_url(), api_key=API_KEY)
        whole = await client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=tools
        )
        calls = [c for c in whole.choices[0].message.tool_calls or [] if c.type == "function"]
        assert [(c.function.name, c.function.arguments) for c in calls] == [
            ("a", "{}"),
            ("b", '{"x":1}'),
        ]
        assert len({c.id for c in calls}) == 2
        assert whole.choices[0].finish_reason == "tool_calls"
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=tools, stream=True
        )
        streamed: dict[int, str] = {}
        async for chunk in stream:
            for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                if delta.function and delta.function.name:
                    streamed[delta.index] = delta.function.name
        assert streamed == {0: "a", 1: "b"}
        await client.close()
