"""livekit/agents PR #4746, the first race: after ``update_agent`` starts the swap, the old
agent's code goes on using its realtime session, which the swap is closing (a fresh handoff:
the new agent has a model of its own). livekit 1.8.9 still syncs the handoff tool's output to
the old session after ``update_agent`` (agent_activity.py, the realtime tool path has no
early return); the drain waits for it, so on OpenAI it costs the handoff a round trip. On
Gemini the toolResponse reaches the closing session too (the model answers it there), but
nothing waits for it."""

from __future__ import annotations

from livekit.agents import NOT_GIVEN, Agent, function_tool, llm

from ._harness import Harness
from ._reading import described, handoffs_to, mark, tool_outputs
from .case import RaceCase, RaceMark, RaceRun, RaceVerdict

USES = (
    "conversation.item.create",
    "conversation.item.delete",
    "response.create",
    "clientContent",
    "toolResponse",
    "realtimeInput",
)
"""client events (OpenAI) and messages (Gemini) that use a session, not the plugin's own
bookkeeping on close"""


async def _scenario(harness: Harness) -> None:
    class Billing(Agent):
        def __init__(self, model: llm.RealtimeModel | None) -> None:
            super().__init__(
                instructions="You are Billing. You handle invoices.", llm=model or NOT_GIVEN
            )

        async def on_enter(self) -> None:
            self.session.generate_reply()

    class Reception(Agent):
        def __init__(self, billing_model: llm.RealtimeModel) -> None:
            super().__init__(instructions="You are the Reception. You route callers.")
            self._billing_model = billing_model

        @function_tool
        async def transfer_to_billing(self) -> Agent:
            """Hand the caller to billing."""
            return Billing(self._billing_model)  # its own model: the Reception's session closes

    reception = Reception(harness.model())
    await harness.start(reception, harness.model())
    if harness.triggered:
        await harness.say("transfer to billing")
    else:
        # the same swap with nothing of the old agent's left to send: made from outside a tool
        harness.session.update_agent(Billing(harness.model()))
        await harness.swap_failure()  # the swap's end (it raises nothing)


def _detect(run: RaceRun) -> RaceVerdict:
    swaps = [s for s in run.trace.spans if s.name == "update_agent"]
    handoff_tool = tool_outputs(run, "transfer_to_billing")
    if not swaps:
        return RaceVerdict(False, "no handoff happened")
    # update_agent() is called right after the tool's output is recorded, before its span
    began = min([swaps[0].start] + [e.t for e in handoff_tool])
    old = run.wire[0].session if run.wire else 0
    late = [w for w in run.wire if w.session == old and w.t >= began and w.type in USES]
    handoffs = handoffs_to(run, "Billing")
    drains = [s for s in run.trace.spans if s.name == "drain_agent_activity"]
    evidence = tuple(
        [described(e) for e in handoff_tool]
        + [f"t={began:.3f}s update_agent: the swap begins"]
        + [f"t={w.t:.3f}s the old session sent {w.type} ({w.item_type or '-'})" for w in late]
        + [f"drain_agent_activity {1000 * (d.end - d.start):.0f} ms" for d in drains]
        + [described(e) for e in handoffs]
    )
    seqs = tuple(e.seq for e in handoff_tool + handoffs)
    if late:
        # the wire is no trace event: the mark is the first late send, in the old agent's lane
        sent = "\n".join(f"t={w.t:.3f}s sent {w.type} ({w.item_type or '-'})" for w in late)
        detail = f"update_agent began the swap at t={began:.3f}s; then on the closing session:\n"
        where = handoff_tool[0].agent if handoff_tool and handoff_tool[0].agent else "Reception"
        return RaceVerdict(
            True,
            f"the old agent sent {len(late)} event(s) to its closing realtime session after "
            "update_agent (the handoff waited for them)",
            evidence,
            seqs,
            (RaceMark(late[0].t, where, "closing session used", detail + sent),),
        )
    return RaceVerdict(
        False,
        "the closing session was left alone after update_agent",
        evidence,
        seqs,
        tuple(mark(e, "closing session left alone", race=False) for e in handoffs[:1]),
    )


CLOSING_SESSION = RaceCase(
    name="closing_session",
    upstream="livekit/agents#4746",
    title="the old agent keeps using its closing realtime session after update_agent",
    in_livekit_1_8_9=True,
    scenario=_scenario,
    detect=_detect,
    trigger={"rtt_ms": 100},
    control="the same fresh handoff by session.update_agent, outside a tool, no latency",
)
