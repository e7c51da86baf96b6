"""livekit/agents PR #4746, the second race: handing back to an agent whose activity an
``AgentTask`` paused. livekit starts a new activity for it instead of resuming the paused
one, and refuses: "cannot start agent: an activity is already running"."""

from __future__ import annotations

from livekit.agents import Agent, AgentTask, function_tool

from ._harness import Harness
from ._reading import described, handoffs_to, mark, mark_said, problems_saying, said, tool_outputs
from .case import RaceCase, RaceRun, RaceVerdict

REFUSED = "an activity is already running"


async def _scenario(harness: Harness) -> None:
    class Survey(AgentTask[str]):
        def __init__(self, front: Agent) -> None:
            super().__init__(instructions="You are the Survey. You ask one question.")
            self._front = front

        async def on_enter(self) -> None:
            self.session.generate_reply()

        @function_tool
        async def transfer_back(self) -> Agent:
            """Hand the caller back to the front desk."""
            return self._front  # the agent the task paused: its activity still exists

        @function_tool
        async def finish_survey(self) -> None:
            """End the survey."""
            self.complete("done")

    class FrontDesk(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are the Front desk. You route callers.")
            self.survey: Survey | None = None

        @function_tool
        async def take_survey(self) -> str:
            """Run the caller through the survey."""
            self.survey = Survey(self)
            answer = await self.survey  # pauses this agent's activity until the task completes
            return f"survey: {answer}"

    front = FrontDesk()
    await harness.start(front, harness.model())
    await harness.say("take survey")
    if harness.triggered:
        await harness.say("transfer back")
        await harness.swap_failure()
        # the refused swap left the session naming the FrontDesk while the Survey runs: a
        # completed Survey would then not resume it (livekit ignores a task whose agent
        # changed) and the call would hang. Naming the Survey again restarts it
        assert front.survey is not None
        harness.session.update_agent(front.survey)
        await harness.swap_failure()  # the same error: the new swap awaits the failed one
    # completing the Survey resumes the FrontDesk, whose tool awaits it
    await harness.say("finish survey")


def _detect(run: RaceRun) -> RaceVerdict:
    refused = problems_saying(run, REFUSED)
    handed_back = tool_outputs(run, "transfer_back")
    after = handed_back[0].t if handed_back else 0.0
    back = handoffs_to(run, "FrontDesk", after=after) if handed_back else []
    evidence = tuple([described(e) for e in handed_back + back] + [said(p) for p in refused])
    seqs = tuple(e.seq for e in handed_back)
    if refused or (handed_back and not back):
        where = (handed_back[0].agent or "Survey") if handed_back else "Survey"
        marks = (
            mark_said(refused[0], where, "hand-back refused")
            if refused
            else mark(handed_back[0], "hand-back dropped")
        )
        return RaceVerdict(
            True,
            "the hand-back to the paused FrontDesk was refused (a new activity for an agent "
            "whose paused one still exists): the caller stays with the Survey until the task "
            "completes, when livekit resumes the paused FrontDesk",
            evidence,
            seqs,
            (marks,),
        )
    resumed = handoffs_to(run, "FrontDesk", after=0.001)
    return RaceVerdict(
        False,
        "the FrontDesk took the caller back",
        evidence,
        seqs,
        tuple(mark(e, "FrontDesk back", race=False) for e in resumed[-1:]),
    )


PAUSED_HANDBACK = RaceCase(
    name="paused_handback",
    upstream="livekit/agents#4746",
    title="handing back to an agent an AgentTask paused",
    in_livekit_1_8_9=True,
    scenario=_scenario,
    detect=_detect,
    control="the task completes instead (livekit resumes the paused agent)",
)
