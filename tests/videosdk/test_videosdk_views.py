"""Every view built from a VideoSDK session's runner or trace, as from a LiveKit one's (drawn in
JupyterLab: tests/browser/test_videosdk_frameworks_browser.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from matplotlib.figure import Figure

from notebook_agents.emulator import Emulator
from notebook_agents.videosdk import VideoSDKRunner
from notebook_agents.views import (
    AgentGraphView,
    ChatView,
    ContextTable,
    StateView,
    TimelineView,
    VoiceView,
    WaterfallView,
)

from . import videosdk_agents


@pytest.fixture
async def handed_off() -> AsyncIterator[VideoSDKRunner]:
    """A FrontDesk -> Billing call, still up (the chat and graph follow a running call)."""
    with Emulator() as emulator:
        runner = VideoSDKRunner(videosdk_agents.entrypoint, emulator=emulator).start()
        try:
            await runner.ready()
            await runner.send_text("Please get the weather, city: Paris")
            await runner.send_text("Please transfer me to billing")
            yield runner
        finally:
            runner.stop()


async def test_every_view_reads_a_videosdk_call(handed_off: VideoSDKRunner) -> None:
    runner, trace = handed_off, handed_off.trace
    state = StateView(trace)
    assert (state.agent, state.agent_state) == ("Billing", "idle")
    chat = ChatView(runner)
    timeline = TimelineView(trace)
    for graph in (AgentGraphView(runner), AgentGraphView(trace)):
        edges = [(e["source"], e["target"], e["tool"], e["observed"]) for e in graph.edges]
        assert edges == [("FrontDesk", "Billing", "transfer_to_billing", True)]
    waterfall = WaterfallView(trace)
    for view in (state, chat, timeline, graph, waterfall):
        assert isinstance(view.to_figure(), Figure)
    contexts = ContextTable.at(trace).columns
    assert contexts["Billing"][-1]["text"] == "Billing here, how can I help?"


async def test_voice_view_names_what_to_use_for_a_videosdk_runner(
    handed_off: VideoSDKRunner,
) -> None:
    with pytest.raises(TypeError, match=r"runner.send_audio\(...\).*runner.room.played"):
        VoiceView(handed_off)  # type: ignore[arg-type]
