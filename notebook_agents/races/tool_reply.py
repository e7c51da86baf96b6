"""livekit/agents PR #4746, the third race: the provider's automatic reply to the handoff
tool races the swap. Gemini Live answers a tool output by itself, and on a reused session that
reply leaks into the new agent's ``on_enter`` reply. OpenAI Realtime makes no reply of its own
(livekit asks for it: the plugin's ``auto_tool_reply_generation`` is False), and livekit's
tool reply is the old agent's, made before the swap completes: on OpenAI it does not leak."""

from __future__ import annotations

from livekit.agents import Agent, function_tool

from ._harness import Harness
from ._reading import described
from .case import RaceCase, RaceRun, RaceVerdict

TOOL_REPLY = "Transferring you to Bob."
BOB = "You are Bob."


class Bob(Agent):
    def __init__(self) -> None:
        super().__init__(instructions=f"{BOB} You handle billing.")

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Alice(Agent):
    def __init__(self, with_reply: bool) -> None:
        super().__init__(instructions="You are Alice. You greet callers.")
        self._with_reply = with_reply

    @function_tool
    async def transfer_to_bob(self) -> Agent | tuple[Agent, str]:
        """Hand the caller to Bob for billing."""
        # a tool output the model is to answer: the reply that may race the swap
        return (Bob(), TOOL_REPLY) if self._with_reply else Bob()


async def _scenario(harness: Harness) -> None:
    # Bob shares Alice's model: the session is reused (Gemini: add the same tool objects)
    await harness.start(Alice(with_reply=harness.triggered), harness.model())
    await harness.say("transfer to bob")


def _detect(run: RaceRun) -> RaceVerdict:
    messages = run.trace.of_kind("agent_message")
    entering = [e for e in messages if e.agent == "Bob" and e.data.get("phase") == "on_enter"]
    tool_replies = [e for e in messages if e.data.get("source") == "tool_reply"]
    leaked = [
        e for e in entering if TOOL_REPLY in e.data["text"] or not e.data["text"].startswith(BOB)
    ]
    evidence = tuple(described(e) for e in tool_replies + entering)
    seqs = tuple(e.seq for e in tool_replies + entering)
    if leaked or len(entering) > 1:
        return RaceVerdict(
            True,
            "the reply to the handoff tool leaked into Bob's on_enter reply",
            evidence,
            seqs,
        )
    who = ", ".join(f"{e.agent}'s" for e in tool_replies) or "no"
    return RaceVerdict(
        False, f"Bob's on_enter reply is Bob's own ({who} tool reply apart)", evidence, seqs
    )


TOOL_REPLY_RACE = RaceCase(
    name="tool_reply_race",
    upstream="livekit/agents#4746",
    title="the reply to the handoff tool races the swap into the new agent's reply",
    in_livekit_1_8_9=False,  # on OpenAI; Gemini Live still leaks (measured in a prototype)
    scenario=_scenario,
    detect=_detect,
    trigger={"rtt_ms": 100},
    control="the handoff tool returns the agent alone: no reply to race",
    # the Gemini case joins ("gemini") with the Gemini Live emulator: its own reply leaks
    providers=("openai",),
)
