"""A handoff in a parallel tool-call batch. livekit/agents #5150 / #7320: with a sibling tool
that finishes after the handoff tool, the last output decided the swap and the handoff was
dropped (fixed by PR #7321: 1.8.9 keeps the handoff). #5990 as PR #6280 diagnoses it: a model
calling the same handoff tool twice in one turn makes livekit drop the handoff ("expected to
receive only one Agent"), and the caller is stranded with the old agent (1.8.9 still does)."""

from __future__ import annotations

import asyncio

from livekit.agents import Agent, function_tool

from ..emulator import ReplyContext, ToolCallReply, ToolCallsReply
from ..emulator.replies import Reply
from ._harness import Harness
from ._reading import described, handoffs_to, mark, problems_saying, said, tool_outputs
from .case import RaceCase, RaceRun, RaceVerdict, Scenario

SIBLING_S = 0.5
"""how much longer the sibling tool runs than the handoff tool (#7320's reproduction)"""
BATCHED = "route and save note"
TWICE = "route twice"


def batch_rule(ctx: ReplyContext) -> Reply | None:
    """The model's parallel calls: ``route`` with ``save_note``, or ``route`` twice."""
    if ctx.user_text == BATCHED:
        return ToolCallsReply((ToolCallReply("route", {}), ToolCallReply("save_note", {})))
    if ctx.user_text == TWICE:
        return ToolCallsReply((ToolCallReply("route", {}), ToolCallReply("route", {})))
    return None


def _batched(text: str) -> Scenario:
    async def scenario(harness: Harness) -> None:
        class Greeter(Agent):
            def __init__(self) -> None:
                super().__init__(instructions="You are the Greeter. You welcome callers.")

            async def on_enter(self) -> None:
                self.session.generate_reply()

        class Router(Agent):
            def __init__(self) -> None:
                super().__init__(instructions="You are the Router. You route callers.")

            @function_tool
            async def route(self) -> Agent:
                """Hand the caller to the greeter."""
                return Greeter()

            @function_tool
            async def save_note(self) -> str:
                """Save a note about the caller."""
                await asyncio.sleep(SIBLING_S)  # the agent's own work: it ends after the handoff
                return "saved"

        await harness.start(Router(), harness.model())
        await harness.say(text if harness.triggered else "route")

    return scenario


def _detect(run: RaceRun) -> RaceVerdict:
    """Dropped: the handoff tool returned the Greeter and no handoff to it followed."""
    routed = tool_outputs(run, "route")
    if not routed:
        return RaceVerdict(False, "the model never called the handoff tool")
    handoffs = handoffs_to(run, "Greeter", after=routed[0].t)
    refused = problems_saying(run, "expected to receive only one")
    batch = run.trace.of_kind("tool_output")
    evidence = tuple([described(e) for e in batch + handoffs] + [said(p) for p in refused])
    seqs = tuple(e.seq for e in batch + handoffs)
    if not handoffs:
        # where livekit dropped it: the batch's last output, when it decides the swap
        detail = "\n".join([described(batch[-1])] + [said(p) for p in refused])
        return RaceVerdict(
            True,
            f"the handoff tool ran in a batch of {len(batch)} and no handoff followed: the "
            "caller stays with the Router",
            evidence,
            seqs,
            (mark(batch[-1], "handoff dropped", detail),),
        )
    return RaceVerdict(
        False,
        f"the handoff happened from a batch of {len(batch)}",
        evidence,
        seqs,
        (mark(handoffs[0], "handoff kept", race=False),),
    )


PARALLEL_BATCH = RaceCase(
    name="parallel_batch",
    upstream="livekit/agents#5150, #7320",
    title="a handoff dropped when a sibling tool in its batch finishes later",
    in_livekit_1_8_9=False,
    scenario=_batched(BATCHED),
    detect=_detect,
    control="the handoff tool alone in its turn",
    rules=(batch_rule,),
)

DUPLICATE_HANDOFF = RaceCase(
    name="duplicate_handoff",
    upstream="livekit/agents#5990 (PR #6280)",
    title="a handoff dropped when the model calls the handoff tool twice in one turn",
    in_livekit_1_8_9=True,
    scenario=_batched(TWICE),
    detect=_detect,
    control="the handoff tool called once",
    rules=(batch_rule,),
)
