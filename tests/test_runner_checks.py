"""Checking agents through the runner with livekit's own testing API (``RunResult.expect``)."""

from __future__ import annotations

import pytest
from livekit.agents import RunResult
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator

from .conftest import API_KEY, started
from .upstream import greeter_weather


@pytest.fixture
async def greeter(emulator: Emulator, runners: list[NotebookRunner]) -> NotebookRunner:
    """livekit/agents PR #5229's Greeter/Weather agents, unchanged, on a text-only model."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )
    return await started(runners, NotebookRunner(greeter_weather.make_server(model)))


async def test_run_returns_livekits_run_result_for_expect(greeter: NotebookRunner) -> None:
    result = await greeter.run("transfer to weather")
    assert isinstance(result, RunResult) and result.done()
    result.expect.next_event().is_function_call(name="transfer_to_weather")
    result.expect.next_event().is_function_call_output()
    result.expect.next_event().is_agent_handoff(new_agent_type=greeter_weather.WeatherAgent)
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()

    weather = await greeter.run("lookup weather location=Paris")
    weather.expect.contains_function_call(name="lookup_weather", arguments={"location": "Paris"})
    assert await greeter.send_text("hello") == 'You are a weather agent. You said: "hello".'
