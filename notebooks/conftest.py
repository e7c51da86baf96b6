"""Notebook 05's scenario file under pytest, as a CI job would run it:
``pytest weather.scenarios.yaml`` (the plugin comes with notebook-agents)."""

from collections.abc import Iterator

import pytest
from livekit.agents import AgentServer

from notebook_agents import Emulator


@pytest.fixture
def agent_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentServer]:
    """The agent of weather_agent.py on an emulator: its model reads these, as livekit's
    OpenAI plugin does."""
    with Emulator() as emulator:
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url())
        monkeypatch.setenv("OPENAI_API_KEY", "offline")
        from weather_agent import server

        yield server
