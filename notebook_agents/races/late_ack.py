"""The late tool-result ack of livekit/agents PR #5229's review: a handoff made before the
handoff tool's output was acked makes livekit's ``update_chat_ctx`` time out (5 s), and
livekit's context and the model's part."""

from __future__ import annotations

from livekit.agents import Agent, function_tool

from ._harness import Harness
from ._reading import described, handoffs_to, mark, mark_said, problems_saying, said
from .case import RaceCase, RaceRun, RaceVerdict

TIMED_OUT = ("update_chat_ctx timed out", "failed to update chat context")


async def _scenario(harness: Harness) -> None:
    class Greeter(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are the Greeter. You welcome callers.")

        @function_tool
        async def transfer_to_weather(self) -> Agent:
            """Hand the caller to the weather agent."""
            return Weather()

    class Weather(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are the weather agent. You tell the weather.")

        async def on_enter(self) -> None:
            self.session.generate_reply()

    await harness.start(Greeter(), harness.model())  # Weather shares the model: reused
    await harness.say("transfer to weather")


def _detect(run: RaceRun) -> RaceVerdict:
    timed_out = problems_saying(run, *TIMED_OUT)
    errors = [e for e in run.trace.of_kind("error") if any(p in str(e.data) for p in TIMED_OUT)]
    handoffs = handoffs_to(run, "Weather")
    evidence = tuple([said(p) for p in timed_out] + [described(e) for e in errors + handoffs])
    if timed_out or errors:
        where = mark(errors[0], "ack timed out") if errors else None
        return RaceVerdict(
            True,
            "the handoff went on before the tool output's ack: livekit's context sync timed "
            "out and its context lacks the output the model holds",
            evidence,
            tuple(e.seq for e in errors + handoffs),
            (where or mark_said(timed_out[0], "Greeter", "ack timed out"),),
        )
    return RaceVerdict(
        False,
        "the tool output was acked before the swap",
        evidence,
        marks=tuple(mark(e, "acked in time", race=False) for e in handoffs[:1]),
    )


LATE_TOOL_ACK = RaceCase(
    name="late_tool_ack",
    upstream="livekit/agents#5229 (review)",
    title="a handoff before the tool result's ack: update_chat_ctx times out",
    in_livekit_1_8_9=True,
    scenario=_scenario,
    detect=_detect,
    # past livekit's 5 s wait for the ack (realtime_model.py's update_chat_ctx timeout)
    trigger={"ack_delay_ms": 6000, "ack_delay_items": "function_call_output"},
    control="the ack comes at once",
    providers=("openai",),
    only_because="Gemini Live acknowledges no item, so there is no ack to hold back (the "
    "emulator refuses ack_delay_ms on it)",
)
