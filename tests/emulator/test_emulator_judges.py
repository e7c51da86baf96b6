"""livekit's evals judges (``JudgeGroup``) against the emulator's Chat Completions, through the
real ``openai.LLM`` over 127.0.0.1: a verdict is the one a rule scripts, never a pass unscripted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from livekit.agents import llm
from livekit.agents.evals import (
    EvaluationResult,
    Evaluator,
    JudgeGroup,
    accuracy_judge,
    coherence_judge,
    conciseness_judge,
    handoff_judge,
    relevancy_judge,
    safety_judge,
    task_completion_judge,
    tool_use_judge,
)
from livekit.plugins import openai

from notebook_agents.emulator import (
    Emulator,
    Judgment,
    ReplyContext,
    TextReply,
    ToolCallReply,
    VerdictReply,
)
from notebook_agents.emulator.judging import UNSCRIPTED
from tests.conftest import API_KEY

INSTRUCTIONS = "You are the weather agent. Answer with the forecast."


@pytest.fixture
async def judge_llm(emulator: Emulator) -> AsyncIterator[openai.LLM]:
    model = openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")
    yield model
    await model.aclose()


async def evaluate(
    model: llm.LLM[Any], reference: llm.ChatContext | None = None
) -> EvaluationResult:
    """All eight built-in judges on ``conversation()``; it has a handoff, so each asks the model."""
    judges: list[Evaluator] = [
        task_completion_judge(),
        accuracy_judge(),
        tool_use_judge(),
        safety_judge(),
        relevancy_judge(),
        coherence_judge(),
        conciseness_judge(),
        handoff_judge(),
    ]
    return await JudgeGroup(llm=model, judges=judges).evaluate(conversation(), reference=reference)


def conversation() -> llm.ChatContext:
    """A weather call as ``session.history`` holds one: a handoff, the instructions, a tool."""
    chat = llm.ChatContext.empty()
    chat.insert(llm.AgentHandoff(old_agent_id="greeter", new_agent_id="weather"))
    chat.insert(llm.AgentConfigUpdate(instructions=INSTRUCTIONS))
    chat.add_message(role="user", content="What's the weather in Paris?")
    chat.insert(llm.FunctionCall(call_id="c1", name="lookup_weather", arguments='{"city":"Paris"}'))
    chat.insert(
        llm.FunctionCallOutput(
            call_id="c1", name="lookup_weather", output="It is sunny in Paris.", is_error=False
        )
    )
    chat.add_message(role="assistant", content="It is sunny in Paris.")
    return chat


async def test_unscripted_every_judge_fails_naming_the_fix(
    emulator: Emulator, judge_llm: openai.LLM
) -> None:
    result = await evaluate(judge_llm)
    assert len(result.judgments) == 8  # none errored, so none was dropped
    assert {j.verdict for j in result.judgments.values()} == {"fail"}
    assert not result.all_passed and not result.any_passed and not result.none_failed
    assert result.score == 0.0
    reason = result.judgments["accuracy"].reasoning
    assert reason == UNSCRIPTED.reason
    assert "VerdictReply" in reason and "openai.LLM(model=" in reason


async def test_scripted_verdicts_are_each_judges_and_see_its_criteria_and_the_conversation(
    emulator: Emulator, judge_llm: openai.LLM
) -> None:
    seen: list[Judgment] = []

    @emulator.settings.rules.add
    def grounded(ctx: ReplyContext) -> VerdictReply | None:
        if ctx.judgment is None:
            return None
        seen.append(ctx.judgment)
        if "accurate and grounded" in ctx.judgment.intent:
            sunny = "[function output: It is sunny in Paris.]" in ctx.judgment.transcript
            return VerdictReply("pass" if sunny else "fail", "matches the tool's output")
        if "concise" in ctx.judgment.intent:
            return VerdictReply("maybe", "hard to say")
        return VerdictReply("fail", "not this one")

    result = await evaluate(judge_llm)
    verdicts = {name: j.verdict for name, j in result.judgments.items()}
    assert verdicts.pop("accuracy") == "pass" and verdicts.pop("conciseness") == "maybe"
    assert set(verdicts.values()) == {"fail"}
    assert result.judgments["accuracy"].reasoning == "matches the tool's output"
    assert result.score == 1.5 / 8

    # the rule saw each judge's criteria and the conversation as livekit formats it
    assert len(seen) == 8
    for judgment in seen:
        assert judgment.tool == "submit_verdict"
        assert judgment.transcript.splitlines()[-4:] == [
            "user: What's the weather in Paris?",
            '[function call: lookup_weather({"city":"Paris"})]',
            "[function output: It is sunny in Paris.]",
            "assistant: It is sunny in Paris.",
        ]
    criteria = {j.instructions for j in result.judgments.values()}
    for judgment in seen:  # task completion's criteria go on with the agent's instructions
        assert any(judgment.intent.startswith(c) for c in criteria), judgment.intent
    (task,) = [j for j in seen if "completed its goal" in j.intent]
    assert task.intent.endswith(f"Agent Instructions:\n{INSTRUCTIONS}")


async def test_a_reference_conversation_is_not_part_of_the_transcript(
    emulator: Emulator, judge_llm: openai.LLM
) -> None:
    seen: list[Judgment] = []
    emulator.settings.rules.add(lambda ctx: seen.append(ctx.judgment) if ctx.judgment else None)
    reference = llm.ChatContext.empty()
    reference.add_message(role="assistant", content="Expect rain.")
    await evaluate(judge_llm, reference)
    assert seen and all("Expect rain" not in j.transcript for j in seen)
    assert all(j.transcript.endswith("assistant: It is sunny in Paris.") for j in seen)


async def test_rules_for_the_agent_never_answer_a_judge(
    emulator: Emulator, judge_llm: openai.LLM
) -> None:
    """A judge asks for its tool's call (tool_choice="required"): a rule answering in words or
    with another tool (written for the agent's turns) is passed over, and one that raises is a
    fail naming it, not an error the group would drop."""
    emulator.settings.rules.add(lambda ctx: TextReply("It is sunny."))
    emulator.settings.rules.add(lambda ctx: ToolCallReply("lookup_weather", {}))
    result = await evaluate(judge_llm)
    assert {j.reasoning for j in result.judgments.values()} == {UNSCRIPTED.reason}

    def broken(ctx: ReplyContext) -> VerdictReply:
        raise KeyError("verdict")

    emulator.settings.rules.add(broken)
    result = await evaluate(judge_llm)
    assert len(result.judgments) == 8 and not result.any_passed
    assert result.judgments["safety"].reasoning == (
        "The reply rule broken raised KeyError: 'verdict'. Fix it, or take it out of the "
        "ReplyRules: .remove(broken)."
    )
