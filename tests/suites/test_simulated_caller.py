"""A scenario with only ``instructions`` (LiveKit's persona format) played by a simulated caller:
a model of the user's (here the emulator, its lines scripted by a reply rule that recognises
the caller's prompt) speaks to the agent turn by turn until it ends the call or ``max_turns``,
then the scenario's ``agent_expectations`` are judged over the whole call by ``judge_llm`` (a
scripted verdict that reads the call). The agents are a clinic written here as a user writes
one: a receptionist who hands off to an appointments desk that books."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    JobContext,
    RunContext,
    SimulationContext,
    function_tool,
)
from livekit.agents.beta.tools import EndCallTool
from livekit.plugins import openai

from notebook_agents.emulator import Emulator, ReplyContext, TextReply, ToolCallReply, VerdictReply
from notebook_agents.suites import CallEnd, CallerError, Outcome, load_suite, run_suite
from notebook_agents.suites.simulated_caller import END_CALL, MAX_TURNS
from tests.conftest import API_KEY
from tests.plugin_run import LIVEKIT_SERVER, pytest_in_subprocess

ROOT = Path(__file__).resolve().parents[2]


class Reception(Agent):
    def __init__(self) -> None:
        super().__init__(
            instructions="You are the clinic's receptionist. Send callers who want an "
            "appointment to the appointments desk; end the call when they are done.",
            tools=[EndCallTool()],
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def transfer_to_appointments(self, context: RunContext[None]) -> Agent:
        """Transfer the caller to the appointments desk."""
        return Appointments()


class Appointments(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the appointments desk. Book check-ups.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def book_appointment(self, context: RunContext[None], day: str) -> str:
        """Book a check-up.

        Args:
            day: The day of the check-up.
        """
        return f"Booked for {day}."


def clinic_server(base_url: str, seen: list[str] | None = None) -> AgentServer:
    """The clinic's server, its model on ``base_url``; ``seen`` gets each job's scenario as it
    starts and its verdict as it ends, when ``on_simulation_end`` vetoes as its ``userdata``
    says."""

    async def on_simulation_end(simulation: SimulationContext) -> None:
        if seen is not None:
            seen.append(f"ended: {simulation.simulator_verdict.success}")
        if veto := simulation.userdata().get("veto"):
            simulation.fail(str(veto))

    server = AgentServer()

    @server.rtc_session(on_simulation_end=on_simulation_end)
    async def entrypoint(ctx: JobContext) -> None:
        if seen is not None:
            simulation = ctx.simulation_context()
            seen.append(f"started: {simulation.scenario.label if simulation else ''}")
        model = openai.realtime.RealtimeModel(
            base_url=base_url, api_key=API_KEY, modalities=["text"]
        )
        await AgentSession(llm=model).start(agent=Reception(), room=ctx.room)

    return server


SUITE = """
name: Clinic
scenarios:
  - label: books a check-up
    instructions: A patient who wants a check-up on Monday.
    agent_expectations: The agent books the caller's check-up on Monday.
  - label: cancels an appointment
    instructions: A patient who wants to cancel an appointment.
    agent_expectations: The agent cancels the caller's appointment.
"""
"""LiveKit's persona scenarios: no `turns:`, a simulated caller plays them"""

CALLERS = {
    "A patient who wants a check-up on Monday.": [
        "I'd like a check-up, please transfer me to appointments.",
        "book appointment day=Monday",
    ],
    "A patient who wants to cancel an appointment.": ["Please cancel my appointment."],
    "A patient who never hangs up.": ["Are you still there?"] * 100,
    "A patient who is done.": ["That's all, thank you, end call.", "Hello? Are you there?"],
}
"""each persona's lines, said in turn; then it ends the call"""
SOUGHT = {
    "The agent books the caller's check-up on Monday.": "[function output: Booked for Monday.]",
    "The agent cancels the caller's appointment.": "[function call: cancel_appointment",
    "The agent answers the caller.": "\nassistant: ",
    "The agent ends the call when the caller is done.": "[function call: end_call(",
}
"""what the scripted judge looks for in the call, by the expectations it is to judge"""


def scripted_caller(ctx: ReplyContext) -> TextReply | ToolCallReply | None:
    """The caller model's reply: a request with the caller's prompt (the persona in it, the
    ``end_call`` tool offered) gets the persona's next line, then the end of the call."""
    persona = next((p for p in CALLERS if p in ctx.instructions), None)
    if persona is None or END_CALL not in {tool.name for tool in ctx.tools}:
        return None  # the agent's request, or a judge's
    said = sum(turn.role == "assistant" for turn in ctx.history)
    lines = CALLERS[persona]
    return TextReply(lines[said]) if said < len(lines) else ToolCallReply(END_CALL, {})


def scripted_judge(ctx: ReplyContext) -> VerdictReply | None:
    """A judge's verdict from the call it is given: a pass if what the expectations want is
    in it."""
    if ctx.judgment is None:
        return None
    sought = SOUGHT[ctx.judgment.intent]
    met = sought in ctx.judgment.transcript
    return VerdictReply("pass" if met else "fail", f"{sought!r} {'is' if met else 'is not'} there")


@pytest.fixture
def scripted(emulator: Emulator, no_livekit_env: None) -> Emulator:
    emulator.settings.rules.add(scripted_caller)
    emulator.settings.rules.add(scripted_judge)
    return emulator


@pytest.fixture
async def chat_model(emulator: Emulator) -> AsyncIterator[Callable[[], openai.LLM]]:
    """Makes livekit's OpenAI LLMs on the emulator (a caller's, a judge's); closes them after."""
    made: list[openai.LLM] = []

    def make() -> openai.LLM:
        made.append(openai.LLM(base_url=emulator.base_url(), api_key=API_KEY))
        return made[-1]

    yield make
    for model in made:
        await model.aclose()


async def test_a_persona_scenario_is_played_by_the_caller_and_judged_over_the_call(
    scripted: Emulator, chat_model: Callable[[], openai.LLM], tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SUITE)
    seen: list[str] = []
    suite = await run_suite(
        path,
        lambda: clinic_server(scripted.base_url(), seen),
        caller_llm=chat_model(),
        judge_llm=chat_model(),
    )

    booked, cancelled = suite
    assert seen == [  # a simulation job each; on_simulation_end has the judge's verdict
        "started: books a check-up",
        "ended: True",
        "started: cancels an appointment",
        "ended: False",
    ]
    assert booked.outcome is Outcome.PASSED, booked.reason
    assert booked.call is not None and booked.call.ended is CallEnd.SCENARIO_COMPLETED
    assert booked.call.judgment is not None and booked.call.judgment.verdict == "pass"
    # the emulator's caller speaks as the emulator does: the prompt's first sentence first
    monday = CALLERS["A patient who wants a check-up on Monday."]
    assert [text for who, text in booked.call.lines if who == "caller"] == [
        f"You are the caller. {line}" for line in monday
    ]
    # the agent greeted, handed off, booked: its tool and handoff ran on the caller's turns
    greeting = "You are the clinic's receptionist. How can I help you?"
    assert booked.call.lines[0] == ("agent", greeting)
    assert len(booked.results) == 2
    booked.results[0].expect.contains_agent_handoff(new_agent_type=Appointments)
    booked.results[1].expect.contains_function_call(
        name="book_appointment", arguments={"day": "Monday"}
    )
    # the transcript is the trace's: every line said, as the session had it
    assert booked.trace is not None
    said = [
        ("caller" if e.kind == "user_message" else "agent", e.data["text"])
        for e in booked.trace.events
        if e.kind in ("user_message", "agent_message")
    ]
    assert said == booked.call.lines
    assert [e.data["to"] for e in booked.trace.events if e.kind == "handoff"] == [
        "Reception",
        "Appointments",
    ]

    # the same caller, a goal the agent cannot meet: the judge's fail, with its reason
    assert cancelled.outcome is Outcome.FAILED
    assert cancelled.expectation == "The agent cancels the caller's appointment."
    assert cancelled.reason == (
        "agent_expectations judged fail: '[function call: cancel_appointment' is not there"
    )
    assert cancelled.call is not None and cancelled.call.ended is CallEnd.SCENARIO_COMPLETED
    assert len(cancelled.results) == 1


async def test_a_caller_that_does_not_hang_up_stops_at_max_turns_and_is_judged(
    scripted: Emulator, chat_model: Callable[[], openai.LLM], tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: chatty\n    instructions: A patient who never hangs up.\n"
        "    agent_expectations: The agent answers the caller.\n"
    )
    (chatty,) = await run_suite(
        path,
        lambda: clinic_server(scripted.base_url()),
        caller_llm=chat_model(),
        judge_llm=chat_model(),
        max_turns=3,
    )
    assert chatty.call is not None and chatty.call.ended is CallEnd.TURN_LIMIT
    assert len(chatty.results) == 3
    assert [who for who, _ in chatty.call.lines] == ["agent", *["caller", "agent"] * 3]
    assert chatty.outcome is Outcome.PASSED  # judged as it stands


HUNG_UP = """
scenarios:
  - label: the agent hangs up
    instructions: A patient who is done.
    agent_expectations: The agent ends the call when the caller is done.
    userdata: {veto: the receptionist hung up}
  - label: a scripted call the agent hangs up
    userdata: {veto: the receptionist hung up}
    turns:
      - user: That's all, thank you, end call.
        expect: ['contains_function_call(name="end_call")']
"""
"""calls livekit's EndCallTool ends: on_simulation_end still has its say (here, a veto)"""


async def test_a_call_the_agent_hangs_up_ends_there_and_on_simulation_end_has_its_say(
    scripted: Emulator, chat_model: Callable[[], openai.LLM], tmp_path: Path
) -> None:
    """Before, the caller's next line found the session ended: an error, not a call's end;
    and on_simulation_end could not run once the agent's job had ended with the call."""
    path = tmp_path / "scenarios.yaml"
    path.write_text(HUNG_UP)
    seen: list[str] = []
    simulated, scripted_call = await run_suite(
        path,
        lambda: clinic_server(scripted.base_url(), seen),
        caller_llm=chat_model(),
        judge_llm=chat_model(),
    )
    assert simulated.call is not None and simulated.call.ended is CallEnd.AGENT_ENDED
    assert [who for who, _ in simulated.call.lines] == ["agent", "caller", "agent"]
    assert simulated.call.judgment is not None and simulated.call.judgment.verdict == "pass"
    for hung_up in (simulated, scripted_call):  # the judge's pass, then the server's veto
        assert hung_up.simulator_verdict is not None and hung_up.simulator_verdict.success
        assert hung_up.outcome is Outcome.FAILED, hung_up.reason
        assert hung_up.reason == "on_simulation_end: the receptionist hung up"
    assert seen == [
        "started: the agent hangs up",
        "ended: True",
        "started: a scripted call the agent hangs up",
        "ended: True",
    ]


def mute_caller(ctx: ReplyContext) -> ToolCallReply | None:
    """A caller model that answers with a tool it was not offered, saying nothing."""
    if "A patient who says nothing." not in ctx.instructions:
        return None
    return ToolCallReply("hold_music", {})


@pytest.mark.parametrize(
    ("model", "rule", "reason"),
    [
        (
            "no-such-model",
            None,
            "the caller model: Error code: 404 - The model `no-such-model` does not exist",
        ),
        (
            "gpt-4o-mini",
            mute_caller,
            "the caller model: it answered with neither a line nor a call of end_call "
            "(tool calls: ['hold_music'])",
        ),
    ],
)
async def test_a_caller_model_that_fails_or_says_nothing_is_the_scenarios_error(
    scripted: Emulator,
    chat_model: Callable[[], openai.LLM],
    model: str,
    rule: Callable[[ReplyContext], ToolCallReply | None] | None,
    reason: str,
) -> None:
    if rule is not None:
        scripted.settings.rules.add(rule)
    caller = openai.LLM(base_url=scripted.base_url(), api_key=API_KEY, model=model)
    suite = load_suite(
        {
            "scenarios": [
                {
                    "label": "done",
                    "instructions": "A patient who says nothing.",
                    "agent_expectations": "The agent ends the call when the caller is done.",
                }
            ]
        }
    )
    try:
        (done,) = await run_suite(
            suite,
            lambda: clinic_server(scripted.base_url()),
            caller_llm=caller,
            judge_llm=chat_model(),
        )
    finally:
        await caller.aclose()
    assert done.outcome is Outcome.ERROR
    assert done.reason.startswith(reason), done.reason
    assert done.call is not None and done.call.ended is None and done.call.judgment is None


async def test_a_judge_model_that_fails_is_the_scenarios_error_never_a_verdict(
    scripted: Emulator, chat_model: Callable[[], openai.LLM]
) -> None:
    judge = openai.LLM(base_url=scripted.base_url(), api_key=API_KEY, model="no-such-judge")
    suite = load_suite(
        {
            "scenarios": [
                {
                    "label": "done",
                    "instructions": "A patient who is done.",
                    "agent_expectations": "The agent ends the call when the caller is done.",
                }
            ]
        }
    )
    try:
        (done,) = await run_suite(
            suite,
            lambda: clinic_server(scripted.base_url()),
            caller_llm=chat_model(),
            judge_llm=judge,
        )
    finally:
        await judge.aclose()
    assert done.outcome is Outcome.ERROR
    assert done.reason.startswith("judging agent_expectations: Error code: 404 - The model")
    assert done.call is not None and done.call.ended is CallEnd.AGENT_ENDED
    assert done.call.judgment is None


async def test_without_a_caller_or_a_judge_a_persona_scenario_is_not_runnable(
    scripted: Emulator, chat_model: Callable[[], openai.LLM], tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SUITE)
    seen: list[str] = []

    def server() -> AgentServer:
        return clinic_server(scripted.base_url(), seen)

    without_caller = await run_suite(path, server, judge_llm=chat_model())
    assert [s.outcome for s in without_caller] == [Outcome.NOT_RUNNABLE] * 2
    assert "simulated user" in without_caller.scenarios[0].reason
    assert "caller_llm=" in without_caller.scenarios[0].reason
    without_judge = await run_suite(path, server, caller_llm=chat_model())
    assert [s.outcome for s in without_judge] == [Outcome.NOT_RUNNABLE] * 2
    assert "judge_llm=" in without_judge.scenarios[0].reason
    unexpecting = load_suite({"scenarios": [{"label": "a", "instructions": "A patient."}]})
    (nothing,) = await run_suite(
        unexpecting, server, caller_llm=chat_model(), judge_llm=chat_model()
    )
    assert nothing.outcome is Outcome.NOT_RUNNABLE and "agent_expectations:" in nothing.reason
    assert seen == []  # nothing ran, nothing passed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"caller_llm": "gpt-4o-mini"}, "is not a livekit LLM"),
        ({"max_turns": 0}, "max_turns=0: give the caller's turns at most"),
    ],
)
async def test_a_caller_asked_for_wrongly_is_refused_before_anything_runs(
    scripted: Emulator, tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SUITE)
    seen: list[str] = []
    with pytest.raises(CallerError, match=message):
        await run_suite(path, lambda: clinic_server(scripted.base_url(), seen), **options)
    assert seen == []


CONFTEST = """
import os

import pytest

from tests.suites.test_simulated_caller import clinic_server


@pytest.fixture
def agent_server():
    return lambda: clinic_server(os.environ["CLINIC_MODEL_URL"])


@pytest.fixture
def judge_llm(caller_llm):  # the caller's model judges too
    return caller_llm
"""
"""a project's conftest.py: its agent on the model service the test gives; its judge, the
caller's model (``--caller-model``)"""


@pytest.mark.slow
async def test_pytest_plays_the_caller_of_its_option_with_run_suites_verdicts(
    scripted: Emulator, chat_model: Callable[[], openai.LLM], tmp_path: Path
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    suite = tmp_path / "scenarios.yaml"
    suite.write_text(SUITE)
    caller = ("--caller-model", "gpt-4o-mini", "--caller-base-url", scripted.base_url())
    verdicts = []
    for max_turns in (None, 1):
        model = chat_model()  # judging too, as the conftest's judge is pytest's caller model
        ran = await run_suite(
            suite,
            lambda: clinic_server(scripted.base_url()),
            caller_llm=model,
            judge_llm=model,
            max_turns=max_turns or MAX_TURNS,  # pytest's default is run_suite's
        )
        verdicts.append({s.label: s.outcome.value for s in ran})
        option = () if max_turns is None else ("--caller-max-turns", str(max_turns))
        assert outcomes_under_pytest(tmp_path, scripted, *caller, *option) == verdicts[-1]
    assert verdicts == [
        {"books a check-up": "passed", "cancels an appointment": "failed"},
        # one turn cuts the booking call short, before the booking: judged a fail
        {"books a check-up": "failed", "cancels an appointment": "failed"},
    ]


def outcomes_under_pytest(directory: Path, emulator: Emulator, *options: str) -> dict[str, str]:
    """pytest run on ``directory`` in a subprocess, its models on ``emulator``: each test's
    outcome by name (an error counts as failed)."""
    reported, _ = pytest_in_subprocess(
        directory,
        env={"CLINIC_MODEL_URL": emulator.base_url(), "OPENAI_API_KEY": API_KEY},
        unset=(*LIVEKIT_SERVER, "OPENAI_BASE_URL"),
        options=options,
        timeout=120,
    )
    return {name: "failed" if r.outcome == "error" else r.outcome for name, r in reported.items()}
