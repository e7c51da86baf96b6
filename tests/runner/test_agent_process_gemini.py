"""A user's Gemini agent script, unchanged, in another process against the emulator: the
child's environment points the google plugin's ``RealtimeModel()`` at the emulator's Gemini
Live API (its URL, its CA, a placeholder key), as ``OPENAI_BASE_URL`` does for OpenAI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from notebook_agents import AgentProcess
from notebook_agents.emulator import Emulator

pytestmark = pytest.mark.slow  # an agent script started in a process of its own

SCRIPT = Path(__file__).parents[1] / "upstream" / "greeter_weather_gemini.py"


@pytest.fixture
def processes() -> Iterator[list[AgentProcess]]:
    made: list[AgentProcess] = []
    yield made
    for process in made:
        process.stop()


async def test_an_unchanged_gemini_script_talks_and_hands_off_offline(
    emulator: Emulator, processes: list[AgentProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-the-users-real-key")
    agent = AgentProcess(SCRIPT, emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    assert "AIza-the-users-real-key" not in agent.command()  # a placeholder, never a key
    assert "GOOGLE_GEMINI_BASE_URL=" in agent.command()
    greeting = await agent.greeting()
    greeting.expect.contains_message(role="assistant")
    assert await agent.send_text("hello") == 'You are a friendly greeter. You said: "hello".'
    result = await agent.run("transfer to weather")
    result.expect.next_event().is_function_call(name="transfer_to_weather")
    result.expect.next_event().is_function_call_output()
    handoff = result.expect.next_event().is_agent_handoff()
    assert handoff.event().item.new_agent_id == "weather_agent"
    result.expect.next_event().is_message(role="assistant")
    # every model connection was the emulator's Gemini Live: the greeter's, then the weather
    # agent's own (its tools differ from the greeter's, so livekit opens a fresh session)
    assert [log.kind for log in emulator.connections] == ["gemini_live", "gemini_live"]
