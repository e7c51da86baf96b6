"""livekit/agents #6313: ``session.run()`` racing an ``AgentTask`` handoff. The first agent's
``on_enter`` reply calls a tool that awaits an ``AgentTask``; nothing watched that handoff, so
the first ``session.run()`` ended mid-transition and the next one failed with "cannot schedule
new speech, the speech scheduling is draining/pausing" (a hang on 1.6.1). Fixed by PR #6315
(the run watches the tasks driving the handoff); 1.8.9 runs both turns."""

from __future__ import annotations

from livekit.agents import Agent, AgentTask, function_tool

from ._harness import Harness
from ._reading import handoffs_to, in_time_order, mark, mark_said, problems_saying
from .case import RaceCase, RaceRun, RaceVerdict

FAILED = ("cannot schedule new speech", "session.run(")


async def _scenario(harness: Harness) -> None:
    class Consent(AgentTask[bool]):
        def __init__(self) -> None:
            super().__init__(instructions="You are the Consent check. You ask for consent.")

        async def on_enter(self) -> None:
            self.session.generate_reply()

        @function_tool
        async def consent_given(self) -> None:
            """The caller consents."""
            self.complete(True)

    class Intake(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are the Intake. You register callers.")

        async def on_enter(self) -> None:
            # a reply that predates any run: its tool starts the AgentTask handoff
            self.session.generate_reply(user_input="ask consent")

        @function_tool
        async def ask_consent(self) -> str:
            """Ask the caller for consent."""
            given = await Consent()
            return f"consent: {given}"

    await harness.start(Intake(), harness.model())  # no capture_run: #6313's setup
    await harness.say("hello")  # while the handoff to the Consent task is under way
    await harness.say("consent given")


def _detect(run: RaceRun) -> RaceVerdict:
    failed = problems_saying(run, *FAILED)
    handoffs = handoffs_to(run, "Consent") + handoffs_to(run, "Intake", after=0.001)
    answers = [e for e in run.trace.of_kind("agent_message") if "hello" in e.data["text"]]
    evidence = in_time_order(failed, answers + handoffs)
    seqs = tuple(e.seq for e in answers + handoffs)
    if failed:
        where = handoffs[-1].agent if handoffs and handoffs[-1].agent else "Intake"
        return RaceVerdict(
            True,
            "a session.run() raced the AgentTask handoff and failed",
            evidence,
            seqs,
            (mark_said(failed[0], where, "run failed"),),
        )
    return RaceVerdict(
        False,
        "both runs completed across the AgentTask handoff and back",
        evidence,
        seqs,
        tuple(mark(e, "run completed", race=False) for e in answers[:1]),
    )


RUN_VS_TASK = RaceCase(
    name="run_vs_task",
    upstream="livekit/agents#6313",
    title="session.run() racing an AgentTask handoff started in on_enter",
    in_livekit_1_8_9=False,
    scenario=_scenario,
    detect=_detect,
    trigger={"rtt_ms": 100},
    control="no latency: the handoff settles before the next turn",
)
