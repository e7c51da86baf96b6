"""A simulated caller: a scenario with only ``instructions`` (LiveKit's persona format) played
against the running agent by a model of the user's, then its ``agent_expectations`` judged over
the whole call, as LiveKit's simulator does it (https://docs.livekit.io/testing/simulations/:
"An LLM follows the scenario's instructions (a persona and a goal for the simulated user) and
chats with your agent until the conversation reaches a natural end"; "the judge reads
``agent_expectations`` to decide whether the run passed").

LiveKit's simulator runs in LiveKit Cloud and does not publish its prompts: the caller's here
is written from that description. The caller model (any livekit ``LLM``, e.g. ``openai.LLM(
model=..., base_url=...)`` for any OpenAI-compatible service) has the prompt as its system
message, the agent's replies as the user's messages and its own lines as the assistant's, and
ends the call by calling the tool ``end_call``. Each of its lines is a typed turn of the runner
(``runner.run``), as a text-mode simulation's are. The judge is livekit's conversation judge
(the one its ``JudgeGroup`` judges are) with ``agent_expectations`` as its criteria.
"""

from __future__ import annotations

from typing import Any

from livekit.agents import APIError, RunResult
from livekit.agents.llm import LLM, ChatContext, ChatItem, ChatMessage, function_tool

from .. import _livekit_internals as livekit
from ..errors import NotebookAgentsError
from ..runner import AgentRunner, RunnerError, RunnerState
from ..runner._core import reply_text
from .results import CallEnd, Outcome, ScenarioResult, SimulatedCall
from .suite_file import ScriptedScenario, Turn

MAX_TURNS = 20
"""the caller's turns at most, by default: a call it has not ended by then stops there"""
END_CALL = "end_call"
"""the tool the caller model ends the call by"""
CALLER_PROMPT = (
    "You are the caller. You are talking with a voice AI agent, playing the person these "
    "instructions describe and pursuing their goals:\n\n{instructions}\n\n"
    "Say only what this caller says, one short turn at a time, in plain words as said on a "
    "call; never speak for the agent, whose words are the other side of the conversation. "
    "Give a detail when the agent asks for it. When the conversation has reached its natural "
    f"end (your goals met, or clearly not to be met), call {END_CALL}: words said with it are "
    "your last."
)
"""the caller model's system message; ``{instructions}`` is the scenario's, verbatim (a reply
rule recognises the caller's requests by them)"""


class CallerError(NotebookAgentsError, ValueError):
    """A simulated caller asked for in a way that cannot run: the message names the fix."""


@function_tool(name=END_CALL)
async def _end_call() -> None:
    """Hang up: the conversation has reached its natural end."""


def checked_max_turns(max_turns: int) -> int:
    """``max_turns`` if it is a count of turns; else ``CallerError``."""
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise CallerError(f"max_turns={max_turns!r}: give the caller's turns at most, e.g. 20")
    return max_turns


def checked_caller(caller_llm: object) -> LLM[Any] | None:
    """``caller_llm`` if it is a livekit ``LLM`` (or None); else ``CallerError``."""
    if caller_llm is None or isinstance(caller_llm, LLM):
        return caller_llm
    raise CallerError(
        f"caller_llm={caller_llm!r} is not a livekit LLM: give the model playing the caller, "
        'e.g. openai.LLM(model="gpt-4o-mini") (any OpenAI-compatible service by its base_url=)'
    )


def not_simulated(
    scenario: ScriptedScenario, caller_llm: LLM[Any] | None, judge_llm: LLM[Any] | None
) -> str:
    """Why a scenario with only ``instructions`` cannot be played here, or ""."""
    if caller_llm is None:
        return (
            "a simulated user plays it (`instructions`, as in LiveKit Cloud's simulator): give "
            "a model to play the caller, run_suite(..., caller_llm=openai.LLM(...)) or pytest "
            "--caller-model, or script its `turns:`"
        )
    if not scenario.scenario.agent_expectations:
        return (
            "nothing to check: give it `agent_expectations:` (what the agent must do, judged "
            "over the whole call)"
        )
    if judge_llm is None:
        return (
            "its `agent_expectations` are judged by a model: run it with one, "
            "run_suite(..., judge_llm=openai.LLM(...))"
        )
    return ""


async def play_call(
    runner: AgentRunner,
    scenario: ScriptedScenario,
    result: ScenarioResult,
    *,
    caller_llm: LLM[Any],
    judge_llm: LLM[Any],
    max_turns: int,
) -> None:
    """The call on ``runner`` (started and ready), then its judgment: into ``result``, whose
    outcome is the judge's verdict, or an error of the agent, the caller model or the judge."""
    call = result.call = SimulatedCall()
    caller = ChatContext.empty()
    caller.add_message(
        role="system", content=CALLER_PROMPT.format(instructions=scenario.scenario.instructions)
    )
    greeting = await runner.greeting()  # the caller hears the agent's greeting, if it greets
    conversation = _items(greeting)
    _heard(call, caller, greeting)
    while call.ended is None:
        try:
            line, hangs_up = await _next_line(caller_llm, caller)
        except APIError as e:
            result.outcome, result.reason = Outcome.ERROR, f"the caller model: {e.message}"
            return
        except CallerError as e:
            result.outcome, result.reason = Outcome.ERROR, f"the caller model: {e}"
            return
        if line and len(result.results) == max_turns:  # a line past the limit is not said
            call.ended = CallEnd.SCENARIO_COMPLETED if hangs_up else CallEnd.TURN_LIMIT
            break
        if line:
            try:
                run = await runner.run(line, timeout=Turn.timeout)
            except RunnerError as e:
                if runner.state is RunnerState.ENDED:  # it hung up before this line
                    call.ended = CallEnd.AGENT_ENDED
                    break
                result.outcome, result.turn = Outcome.ERROR, len(result.results)
                result.reason = f"turn {result.turn} ({line}): {e}"
                return
            call.lines.append(("caller", line))
            caller.add_message(role="assistant", content=line)
            conversation += [ChatMessage(role="user", content=[line]), *_items(run)]
            result.results.append(run)
            _heard(call, caller, run)
        if hangs_up:
            call.ended = CallEnd.SCENARIO_COMPLETED
        elif runner.state is RunnerState.ENDED:
            call.ended = CallEnd.AGENT_ENDED
    await _judge(result, call, conversation, scenario.scenario.agent_expectations, judge_llm)


async def _next_line(caller_llm: LLM[Any], caller: ChatContext) -> tuple[str, bool]:
    """The caller's next line ("" if none) and whether it hangs up with it."""
    said = await caller_llm.chat(chat_ctx=caller, tools=[_end_call]).collect()
    hangs_up = any(call.name == END_CALL for call in said.tool_calls)
    line = said.text.strip()
    if not line and not hangs_up:
        raise CallerError(
            f"it answered with neither a line nor a call of {END_CALL} (tool calls: "
            f"{[call.name for call in said.tool_calls]})"
        )
    return line, hangs_up


def _heard(call: SimulatedCall, caller: ChatContext, run: RunResult[Any]) -> None:
    """What the agent said in ``run``, to the caller (nothing when it said nothing)."""
    if reply := reply_text(run):
        call.lines.append(("agent", reply))
        caller.add_message(role="user", content=reply)


def _items(run: RunResult[Any]) -> list[ChatItem]:
    """What happened in ``run`` as chat items (messages, tool calls and outputs, handoffs)."""
    return [event.item for event in run.events]


async def _judge(
    result: ScenarioResult,
    call: SimulatedCall,
    conversation: list[ChatItem],
    expectations: str,
    judge_llm: LLM[Any],
) -> None:
    """livekit's judge of the whole call against ``expectations``: only "pass" passes."""
    judge = livekit.criteria_judge(expectations, name="agent_expectations")
    try:
        judged = await judge.evaluate(chat_ctx=ChatContext(conversation), llm=judge_llm)
    except APIError as e:
        result.outcome, result.reason = Outcome.ERROR, f"judging agent_expectations: {e.message}"
        return
    except ValueError as e:  # livekit's: the judge model gave no verdict
        result.outcome, result.reason = Outcome.ERROR, f"judging agent_expectations: {e}"
        return
    call.judgment = judged
    if not judged.passed:
        result.outcome = Outcome.FAILED
        result.expectation = expectations
        result.reason = f"agent_expectations judged {judged.verdict}: {judged.reasoning}"
