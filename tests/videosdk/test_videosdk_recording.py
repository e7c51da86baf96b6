"""A call held with a VideoSDK session, typed and spoken, written as a scenario
(``to_scenario``) that passes when run again on fresh VideoSDK runners: the spoken turn's WAV
beside the file, ``new_agent_type=`` naming the user's VideoSDK class."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from notebook_agents.suites import Outcome, run_suite, to_scenario
from notebook_agents.videosdk import VideoSDKRunner

from . import videosdk_agents
from .test_videosdk_suites import runner_maker


@pytest.mark.slow
async def test_a_videosdk_call_becomes_a_scenario_that_passes_on_fresh_runners(
    emulator: Emulator, tmp_path: Path
) -> None:
    runner = VideoSDKRunner(videosdk_agents.spoken_entrypoint, emulator=emulator)
    try:
        await runner.start().ready()
        await runner.run("Please get the weather, city: Paris")
        await runner.send_audio(synthesize("please transfer me to billing"))
        scenario = to_scenario(runner, "weather, then billing by voice", tmp_path / "s.yaml")
    finally:
        runner.stop()

    typed, spoken = scenario.turns
    assert typed.user == "Please get the weather, city: Paris"
    assert spoken.audio == tmp_path / f"{scenario.id}.turn1.wav"
    assert [e.text for e in spoken.expect] == [
        'next_event().is_function_call(name="transfer_to_billing")',
        "next_event().is_function_call_output(is_error=False)",
        "next_event().is_agent_handoff(new_agent_type=Billing)",
        'next_event().is_message(role="assistant")',
        "no_more_events()",
    ]
    made: list[VideoSDKRunner] = []
    (ran,) = await run_suite(tmp_path / "s.yaml", runner_maker(emulator, made, True))
    assert (ran.outcome, ran.reason) == (Outcome.PASSED, "")
