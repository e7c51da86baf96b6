"""VideoSDK's own multi-agent example (code we did not write) through ``VideoSDKRunner``.

``tests/upstream/videosdk_multi_agent_switch.py`` is the example verbatim. Its providers are
not installed here, so the names it imports from ``videosdk.agents.plugins`` are given
OpenAI's plugins (which the runner points at the emulator) and no VAD or turn detector; its
agents, tools, hooks and entrypoint run unchanged.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import videosdk.agents.plugins as videosdk_plugins
from videosdk.plugins.openai import OpenAILLM, OpenAISTT, OpenAITTS

from notebook_agents.emulator import Emulator
from notebook_agents.trace.schema import check_event_data
from notebook_agents.videosdk import VideoSDKRunner

_EXAMPLE = "tests.upstream.videosdk_multi_agent_switch"


def _none(*args: Any, **kwargs: Any) -> None:
    return None


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    given = {
        "DeepgramSTT": OpenAISTT,
        "GoogleLLM": OpenAILLM,
        "CartesiaTTS": OpenAITTS,
        "SileroVAD": _none,
        "TurnDetector": _none,
        "pre_download_model": _none,
    }
    for name, value in given.items():
        monkeypatch.setitem(vars(videosdk_plugins), name, value)
    yield importlib.import_module(_EXAMPLE)
    sys.modules.pop(_EXAMPLE, None)


async def test_videosdks_multi_agent_example_runs_and_hands_off_offline(
    example: ModuleType,
) -> None:
    with Emulator() as emulator:
        runner = VideoSDKRunner(example.entrypoint, emulator=emulator).start()
        try:
            await runner.ready()
            reply = await runner.send_text("Please transfer me to booking")
        finally:
            runner.stop()
    assert reply == "I'm a booking specialist. What would you like to book or modify today?"
    events = runner.trace.events
    for event in events:
        check_event_data(event.kind, event.data)
    handoffs = [
        (e.data["from"], e.data["to"], e.data["context"]) for e in events if e.kind == "handoff"
    ]
    # BookingAgent(inherit_context=True): it starts from the travel agent's context
    assert handoffs == [(None, "TravelAgent", None), ("TravelAgent", "BookingAgent", "copied")]
    said = [
        (e.agent, e.data["source"], e.data["phase"]) for e in events if e.kind == "agent_message"
    ]
    # the greeting on_enter generates (session.reply), the booking agent's on_enter says
    assert said[0] == ("TravelAgent", "generate_reply", "on_enter")
    assert ("BookingAgent", "say", "on_enter") in said
    # VideoSDK runs no on_exit at the handoff: the travel agent's "Safe travels!" never comes;
    # the booking agent's runs when the runner closes the session
    exits = [
        (e.agent, e.data["text"])
        for e in events
        if e.kind == "agent_message" and e.data["phase"] == "on_exit"
    ]
    assert exits == [("BookingAgent", "Your booking request is complete. Have a great trip!")]
    assert events[-1].kind == "closed"
