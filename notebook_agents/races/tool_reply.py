"""livekit/agents PR #4746, the third race: the provider's automatic reply to the handoff tool
races the swap. Gemini Live answers a tool result by itself (``BLOCKING`` tools, the default),
and livekit 1.8.9 sends that result on the session the new agent reuses, then at once the new
agent's instructions on it; it waits for the answer on the old agent, which no longer gets
the session's generations. The answer is lost whichever way the race goes:

- the model starts answering later than livekit sends Bob's instructions (the service's
  case: its first token takes hundreds of ms, livekit sends them ~1 ms after the result).
  Bob's instructions interrupt the answer ("a message here will interrupt any current model
  generation", ai.google.dev/api/live BidiGenerateContentClientContent): the reply the tool
  asked for is never made and ``session.run`` waits 5 s for it. The triggered case pins
  this window: 100 ms RTT and the model's first token 300 ms after its request;
- a model that answers within that ~1 ms (an instant one: no server time) gets its answer to
  livekit while Bob's ``on_enter`` reply is pending, and google's plugin takes it for that
  reply (realtime_api.py ``_start_new_generation``): it leaks into Bob's reply, or Bob's own
  reply, right behind it, interrupts it unheard; with no latency the draining old agent
  skips it ("skipping new realtime generation"). This window is livekit's own work between
  two sends, not a latency: no emulator setting holds a run in it, and the detector reads
  it as the race as well.

OpenAI Realtime makes no reply of its own (livekit asks the old agent for it before the swap):
there it does not race."""

from __future__ import annotations

from typing import Any

from livekit.agents import Agent, function_tool, llm

from ..emulator.gemini_live import genai_types
from ._harness import Harness
from ._reading import described, mark, mark_said, problems_saying, said, tool_outputs
from .case import RaceCase, RaceRun, RaceVerdict

TOOL_REPLY = "Transferring you to Bob."
HANDOFF_TOOL = "transfer_to_bob"
WAITED = "timed out waiting for realtime auto tool reply"
BOB = "You are Bob. You handle billing."


async def _scenario(harness: Harness) -> None:
    class Bob(Agent):
        def __init__(self, tools: list[llm.Tool | llm.Toolset]) -> None:
            # Alice's tool objects: livekit keeps a Gemini session only for the same tools
            super().__init__(instructions=BOB, tools=tools)

        async def on_enter(self) -> None:
            self.session.generate_reply()

    class Alice(Agent):
        def __init__(self, with_reply: bool) -> None:
            super().__init__(instructions="You are Alice. You greet callers.")
            self._with_reply = with_reply

        @function_tool
        async def transfer_to_bob(self) -> Agent | tuple[Agent, str]:
            """Hand the caller to Bob for billing."""
            bob = Bob(list(self.tools))  # the same model and tools: the session is reused
            # a tool output the model is to answer: the reply that may race the swap
            return (bob, TOOL_REPLY) if self._with_reply else bob

    options: dict[str, Any] = {}
    if harness.provider == "gemini" and not harness.triggered:
        # livekit's own advice: a NON_BLOCKING tool's result that wants no reply (the agent
        # alone) goes SILENT, and Gemini makes no answer of its own
        options["tool_behavior"] = genai_types().Behavior.NON_BLOCKING
    await harness.start(Alice(with_reply=harness.triggered), harness.model(**options))
    await harness.say("transfer to bob")


def _model_answer(run: RaceRun) -> dict[str, Any] | None:
    """The model's answer to the handoff tool's result: the assistant message that follows
    the tool's output in the model's conversation, before the next agent's turn (Bob's
    instructions, which google's plugin sends as a model turn, are not the model's)."""
    for conversation in run.conversations:
        after_output = False
        for item in conversation:
            if item["type"] == "function_call_output" and item.get("call_id") in _calls(run):
                after_output = True
            elif after_output and item["type"] == "message" and _text(item) != BOB:
                return item if item["role"] == "assistant" else None
    return None


def _text(item: dict[str, Any]) -> str:
    return str(item.get("text") or "")  # Emulator.conversations() gives a message's text


def _calls(run: RaceRun) -> set[str]:
    return {str(e.data.get("call_id")) for e in tool_outputs(run, HANDOFF_TOOL)}


def _detect(run: RaceRun) -> RaceVerdict:
    messages = run.trace.of_kind("agent_message")
    entering = [e for e in messages if e.agent == "Bob" and e.data.get("phase") == "on_enter"]
    bobs = [e for e in messages if e.agent == "Bob"]
    answer = _model_answer(run)
    text = _text(answer) if answer else ""
    heard = [e for e in messages if answer and e.data["text"] == text]
    waited = problems_saying(run, WAITED, "skipping new realtime generation")
    evidence = tuple(
        [described(e) for e in tool_outputs(run, HANDOFF_TOOL)]
        + [
            f"the model answered the tool's result: {text!r}"
            if answer
            else "the model made no answer of its own to the tool's result (a reply below to "
            "it is one livekit asked for)"
        ]
        + [described(e) for e in messages]
        + [said(p) for p in waited]
    )
    seqs = tuple(e.seq for e in messages)
    into_bob = [e for e in entering if TOOL_REPLY in e.data["text"]]
    if into_bob or len(entering) > 1:
        return RaceVerdict(
            True,
            "the reply to the handoff tool leaked into Bob's on_enter reply",
            evidence,
            seqs,
            (mark((into_bob or entering)[0], "tool reply in on_enter"),),
        )
    handed = tool_outputs(run, HANDOFF_TOOL)
    if answer and not any(e.agent == "Alice" for e in heard):
        where = (
            "took the place of Bob's on_enter reply (Bob's came as an unrequested turn)"
            if bobs and not entering
            else "was skipped by the draining Alice"
        )
        return RaceVerdict(
            True,
            f"the model's own answer to the handoff tool raced the swap and {where}: the "
            "caller never heard it, the model keeps it",
            evidence,
            seqs,
            tuple(mark(e, "tool reply lost", f"{text!r} {where}") for e in handed[:1]),
        )
    asked = any(e.data.get("output") for e in handed)
    if asked and not answer and (never := problems_saying(run, WAITED)):
        return RaceVerdict(
            True,
            "Bob's instructions, sent on the reused session right after the handoff tool's "
            "result, interrupted the model's answer to it: the reply the tool asked for was "
            "never made, and session.run waited for it on Alice",
            evidence,
            seqs,
            # where it was asked for (Bob's instructions follow within a millisecond), and
            # where livekit gave up waiting for it
            (
                *[mark(e, "tool reply cut off") for e in handed[:1]],
                mark_said(never[0], "Alice", "tool reply never came"),
            ),
        )
    who = "Alice's" if heard else "no"
    by_alice = [e for e in heard if e.agent == "Alice"]
    shown = [mark(e, "tool reply by Alice", race=False) for e in by_alice[:1]] or [
        mark(e, "Bob's own reply", race=False) for e in entering[:1]
    ]
    return RaceVerdict(
        False,
        f"Bob's on_enter reply is Bob's own ({who} tool reply apart)",
        evidence,
        seqs,
        tuple(shown),
    )


TOOL_REPLY_RACE = RaceCase(
    name="tool_reply_race",
    upstream="livekit/agents#4746",
    title="the model's own reply to the handoff tool races the swap and is lost",
    in_livekit_1_8_9=False,
    differs_on={"gemini": True},
    scenario=_scenario,
    detect=_detect,
    # the Live API's first token takes ~300 ms (users measure it so: discuss.google.dev
    # "Gemini Live Native latency increases over session", "Initial latency: ~300ms"), far
    # longer than livekit takes to send Bob's instructions after the tool's result
    trigger={"rtt_ms": 100, "first_token_ms": 300},
    control="the handoff tool returns the agent alone: no reply to race (on Gemini with "
    "NON_BLOCKING tools, so its result goes SILENT)",
)
