"""Scenario suites on a VideoSDK session: the same scenarios file, run through a function
making a ``VideoSDKRunner`` (a fresh one per scenario), checked with livekit's expectations,
``new_agent_type=`` naming the user's VideoSDK agents.

Real parts: videosdk-agents' session and its OpenAI plugins over loopback to a real
``Emulator``; livekit's ``RunResult.expect`` doing the checking.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from livekit import agents as livekit_agents

from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from notebook_agents.runner.errors import RunnerError
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes
from notebook_agents.suites import Outcome, SuiteFileError, run_suite
from notebook_agents.videosdk import VideoSDKRunner
from tests.suites.test_suites import outcomes_under_pytest
from tests.upstream import greeter_weather

from . import videosdk_agents

FRONT_DESK_SUITE = Path(__file__).parents[1] / "suites" / "front_desk_suite.yaml"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


MakeRunner = Callable[[], VideoSDKRunner]


def runner_maker(
    emulator: Emulator, made: list[VideoSDKRunner], spoken: bool = False
) -> MakeRunner:
    """A function making a fresh runner of the FrontDesk -> Billing app; each one kept."""
    entrypoint = videosdk_agents.spoken_entrypoint if spoken else videosdk_agents.entrypoint

    def make() -> VideoSDKRunner:
        made.append(VideoSDKRunner(entrypoint, emulator=emulator))
        return made[-1]

    return make


async def test_a_suite_runs_on_videosdk_sessions_each_scenario_on_a_fresh_runner(
    emulator: Emulator,
) -> None:
    made: list[VideoSDKRunner] = []
    result = await run_suite(FRONT_DESK_SUITE, runner_maker(emulator, made))

    assert [(s.label, s.outcome) for s in result] == [
        ("weather, then billing", Outcome.PASSED),
        ("billing is no front desk", Outcome.FAILED),
    ]
    passed, failed = result
    assert passed.reason == "" and len(passed.results) == 2
    # new_agent_type=Billing named the user's VideoSDK class: the handoff's agent is one
    handoff = passed.results[1].expect[2].is_agent_handoff().event()
    assert isinstance(handoff.new_agent, videosdk_agents.Billing)
    # the failure names the expectation as written, and livekit's message for it
    assert failed.turn == 0
    assert failed.expectation == "next_event().is_agent_handoff(new_agent_type=FrontDesk)"
    assert failed.reason.startswith(
        "turn 0 (Please transfer me to billing): "
        "next_event().is_agent_handoff(new_agent_type=FrontDesk)\n"
        "Expected new_agent 'FrontDesk', got 'Billing'\n"
    )
    # each scenario on a runner of its own, stopped, its trace kept and closed
    assert len(made) == 2 and all(r.state is RunnerState.STOPPED for r in made)
    assert [s.trace for s in result] == [r.trace for r in made]
    assert made[0].trace is not made[1].trace
    for runner in made:
        assert runner.trace.events[-1].kind == "closed"
    users = [[e.data["text"] for e in r.trace.of_kind("user_message")] for r in made]
    assert users == [
        ["Please get the weather, city: Paris", "Please transfer me to billing"],
        ["Please transfer me to billing"],
    ]
    # livekit's simulator hooks are not a VideoSDK job's: no verdict was handed to one
    assert passed.simulator_verdict is None and failed.simulator_verdict is None


SPOKEN = """
name: Front desk by voice
scenarios:
  - label: asks by voice for billing
    turns:
      - user: "Please get the weather, city: Paris"
        expect: ['contains_function_call(name="get_weather")']
      - audio: transfer.wav
        expect:
          - next_event().is_function_call(name="transfer_to_billing")
          - next_event().is_function_call_output()
          - next_event().is_agent_handoff(new_agent_type=Billing)
          - next_event().is_message(role="assistant")
          - no_more_events()
"""
"""a typed turn, then a spoken one (the emulator hears speech in the words its model was
offered, as in test_videosdk_sessions)"""


async def test_a_spoken_turn_of_a_suite_is_heard_by_the_videosdk_session(
    emulator: Emulator, tmp_path: Path
) -> None:
    wav = wav_bytes(synthesize("please transfer me to billing"), SAMPLE_RATE)
    (tmp_path / "transfer.wav").write_bytes(wav)
    (tmp_path / "scenarios.yaml").write_text(SPOKEN)
    made: list[VideoSDKRunner] = []

    (heard,) = await run_suite(tmp_path / "scenarios.yaml", runner_maker(emulator, made, True))

    assert (heard.outcome, heard.reason) == (Outcome.PASSED, "")
    assert heard.trace is not None
    said = [e.data["text"] for e in heard.trace.of_kind("user_transcript") if e.data["final"]]
    assert len(said) == 1 and {"transfer", "billing"} <= set(str(said[0]).split())


async def test_an_agent_class_videosdk_does_not_define_is_refused_before_anything_runs(
    emulator: Emulator, tmp_path: Path
) -> None:
    """``new_agent_type=`` names a VideoSDK agent for a VideoSDK runner: a livekit ``Agent``
    class of that name does not count."""
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: Please transfer me to billing\n"
        "        expect: ['contains_agent_handoff(new_agent_type=WeatherAgent)']\n"
    )
    assert issubclass(greeter_weather.WeatherAgent, livekit_agents.Agent)  # livekit's, defined
    made: list[VideoSDKRunner] = []
    with pytest.raises(SuiteFileError, match="new_agent_type=WeatherAgent: none is defined"):
        await run_suite(path, runner_maker(emulator, made))
    assert all(r.state is RunnerState.NEW for r in made)  # nothing started


@pytest.mark.parametrize("made", [None, videosdk_agents.entrypoint])
async def test_a_function_making_something_else_is_refused_naming_the_three_shapes(
    made: object,
) -> None:
    with pytest.raises(RunnerError) as raised:
        await run_suite(FRONT_DESK_SUITE, lambda: made)  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"the function given as the server returned {type(made).__name__}, not an "
        "AgentServer or a runner: pass the server, its entrypoint, or a function making "
        "the server or a fresh runner (e.g. lambda: VideoSDKRunner(entrypoint)) per scenario"
    )


async def test_a_function_returning_the_same_runner_again_is_refused(emulator: Emulator) -> None:
    runner = VideoSDKRunner(videosdk_agents.entrypoint, emulator=emulator)
    with pytest.raises(RunnerError, match="a fresh runner for each scenario"):
        await run_suite(FRONT_DESK_SUITE, lambda: runner)
    assert runner.state is RunnerState.STOPPED


def test_pytest_runs_the_file_on_a_videosdk_runner_with_the_same_verdicts(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            """
            import pytest

            from notebook_agents import Emulator
            from notebook_agents.videosdk import VideoSDKRunner
            from tests.videosdk.videosdk_agents import entrypoint


            @pytest.fixture
            def agent_server():
                with Emulator() as emulator:
                    yield lambda: VideoSDKRunner(entrypoint, emulator=emulator)
            """
        )
    )
    # run_suite's verdicts (the first test above)
    assert outcomes_under_pytest(tmp_path, FRONT_DESK_SUITE) == {
        "weather, then billing": "passed",
        "billing is no front desk": "failed",
    }
