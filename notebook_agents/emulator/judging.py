"""A judge's request, as livekit's judges send it, and the verdict the emulator answers with.

livekit judges by a Chat Completions request that offers one tool with
``tool_choice="required"`` and reads the verdict from the call's arguments:

* ``ChatMessageAssert.judge(llm, intent=)`` (livekit/agents/voice/run_result.py) offers
  ``check_intent(success: bool, reason: str)``; ``success=false`` raises
  ``Judgement failed: {reason}``.
* every judge of a ``JudgeGroup`` (livekit/agents/evals/judge.py ``_judge_with_llm``) offers
  ``submit_verdict(verdict: "pass" | "fail" | "maybe", reasoning: str)``.

The emulator cannot judge. It answers with the verdict a rule scripts (``VerdictReply``) or,
unscripted, with a failing one whose reason names the fix. Never with an error:
``JudgeGroup.evaluate`` drops a judge that raises, and ``all_passed`` of no judgments is True
(livekit/agents/evals/evaluation.py), so an error would count as a pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .errors import ReplyError

if TYPE_CHECKING:
    from .replies import ToolSpec

Verdict = Literal["pass", "fail", "maybe"]
"""livekit's ``evals.Verdict``; ``RunResult``'s judge passes only on "pass"."""

_VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "maybe")


@dataclass(frozen=True)
class VerdictReply:
    """A rule's answer to a judge (``ctx.judgment`` is set): ``"pass"``, ``"fail"`` or
    ``"maybe"``, and the reason the judge reports."""

    verdict: Verdict
    reason: str = "scripted by a ReplyRules rule"

    def __post_init__(self) -> None:
        if self.verdict not in _VERDICTS:
            raise ReplyError(
                f"VerdictReply's verdict is {self.verdict!r}; use 'pass', 'fail' or 'maybe'."
            )


UNSCRIPTED = VerdictReply(
    "fail",
    "The emulator does not judge, so this verdict is a fail. Script one: a ReplyRules rule "
    "that returns VerdictReply('pass' or 'fail', reason) when ctx.judgment is set; or judge "
    "with a real model: openai.LLM(model='gpt-4o-mini') with OPENAI_API_KEY set.",
)


@dataclass(frozen=True)
class Judgment:
    """What a judge asks the model: does ``transcript`` (the message, or the conversation as
    livekit formats it) meet ``intent`` (the intent, or the judge's criteria)?"""

    intent: str
    transcript: str
    tool: str
    """the tool the verdict is given through: ``check_intent`` or ``submit_verdict``"""

    def arguments(self, reply: VerdictReply) -> dict[str, Any]:
        """The judge tool's arguments that say ``reply``."""
        if self.tool == "check_intent":
            # run_result.py's prompt: "Be strict": anything but a pass is success=False
            return {"success": reply.verdict == "pass", "reason": reply.reason}
        return {"verdict": reply.verdict, "reasoning": reply.reason}


# the judge's tool and the parameters livekit parses its verdict from
_JUDGE_TOOLS = {"check_intent": {"success", "reason"}, "submit_verdict": {"verdict", "reasoning"}}

# run_result.py: "...intent.\n\nIntent:\n{intent}\n\nMessage:\n{msg_content}"
_INTENT_PROMPT = re.compile(r"\nIntent:\n(?P<intent>.*?)\n\nMessage:\n(?P<transcript>.*)\Z", re.S)
# evals/judge.py: "[Criteria: ]{criteria}\n\n[Agent Instructions:...\n\n]Conversation:\n{...}"
# then "\n\nReference:\n..." and/or "\n\nEvaluate if the conversation meets the criteria."
_CONVERSATION = "\n\nConversation:\n"
_AFTER_CONVERSATION = re.compile(
    r"\n\n(?:Reference:\n.*|Evaluate if the conversation meets the criteria\.)\Z", re.S
)


def judgment_of(user_text: str | None, tools: Sequence[ToolSpec]) -> Judgment | None:
    """The judgment a request asks for: it offers only livekit's judge tool; else None."""
    if user_text is None or len(tools) != 1:
        return None
    (tool,) = tools
    properties = tool.parameters.get("properties") or {}
    if _JUDGE_TOOLS.get(tool.name) != set(properties):
        return None
    if tool.name == "check_intent":
        if match := _INTENT_PROMPT.search(user_text):
            return Judgment(match["intent"], match["transcript"], tool.name)
    elif _CONVERSATION in user_text:
        criteria, conversation = user_text.split(_CONVERSATION, 1)
        transcript = _AFTER_CONVERSATION.sub("", conversation)
        return Judgment(criteria.removeprefix("Criteria: ").strip(), transcript, tool.name)
    return Judgment(user_text, "", tool.name)  # a prompt of another shape: all of it
