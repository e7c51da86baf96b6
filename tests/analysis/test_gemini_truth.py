"""The Gemini handoff truths hold on the emulator: what a real handoff through the unmodified
google plugin costs is never less than the formula (the network the emulator imposes), in
both modes livekit runs."""

from __future__ import annotations

import asyncio
import time

import pytest
from google.genai import types
from livekit.agents import (
    NOT_GIVEN,
    Agent,
    AgentSession,
    AgentStateChangedEvent,
    RunContext,
    function_tool,
    llm,
)
from livekit.plugins import google

from notebook_agents.analysis import handoff_phases
from notebook_agents.analysis.network_truth import gemini_ground_truth, gemini_handoff_truths
from notebook_agents.emulator import Emulator, LatencyModel
from notebook_agents.races import RACES, run_race

RTT_MS = 100


@pytest.mark.parametrize("mode", ["reused", "fresh"])
async def test_a_gemini_handoff_costs_at_least_its_truth(emulator: Emulator, mode: str) -> None:
    marks: dict[str, float] = {}
    done = asyncio.Event()

    def model() -> google.realtime.RealtimeModel:
        options = emulator.gemini_http_options(rtt_ms=RTT_MS)
        return google.realtime.RealtimeModel(
            api_key="x", http_options=options, modalities=[types.Modality.TEXT]
        )

    b_model = model() if mode == "fresh" else None

    class B(Agent):
        def __init__(self, tools: list[llm.Tool | llm.Toolset]) -> None:
            super().__init__(instructions="You are B.", tools=tools, llm=b_model or NOT_GIVEN)

        async def on_enter(self) -> None:
            marks["on_enter"] = time.perf_counter()
            self.session.generate_reply()

    @function_tool
    async def transfer_to_b(context: RunContext[None]) -> Agent:
        """Hand over to B."""
        b = B(list(context.session.current_agent.tools))  # the same tool objects
        marks["t0"] = time.perf_counter()
        return b

    session: AgentSession[None] = AgentSession(llm=model())

    def on_state(ev: AgentStateChangedEvent) -> None:
        # B's reply speaking (in A's words on a kept session: its system instruction stays A's)
        if "on_enter" in marks and ev.new_state == "speaking":
            marks.setdefault("reply", time.perf_counter())
            done.set()

    session.on("agent_state_changed", on_state)
    try:
        await session.start(Agent(instructions="You are A.", tools=[transfer_to_b]))
        await session.run(user_input="transfer to b")
        await asyncio.wait_for(done.wait(), 20)
    finally:
        await session.aclose()
    truth = gemini_ground_truth("agent", mode, "empty", 0, LatencyModel(rtt_ms=RTT_MS))
    assert truth is not None
    handoff_ms, reply_ms = truth
    assert (marks["on_enter"] - marks["t0"]) * 1000 >= handoff_ms
    assert (marks["reply"] - marks["t0"]) * 1000 >= reply_ms
    assert reply_ms == (RTT_MS if mode == "reused" else 6 * RTT_MS)


async def test_a_gemini_traces_handoff_phases_take_geminis_truths() -> None:
    """A trace of a Gemini handoff is split against the Live API's truths, not OpenAI's:
    nothing of a Gemini session update is acknowledged, so its drain and session update owe
    the network nothing, and its fresh session's connect includes the setup round trip."""
    run = await run_race(RACES["closing_session"], provider="gemini")
    (breakdown,) = handoff_phases(run.trace, run.latency)
    assert (breakdown.mode or "").startswith("fresh")
    expected = gemini_handoff_truths("fresh", "copied", 0, run.latency)
    truths = {phase.name: phase.truth for phase in breakdown.phases}
    assert truths["drain"] == 0.0 and truths["session_update"] == 0.0
    assert {name: truth for name, truth in truths.items() if name in expected} == {
        name: expected[name] for name in truths if name in expected
    }
    openai = await run_race(RACES["closing_session"])  # the same split, OpenAI's truths
    (split,) = handoff_phases(openai.trace, openai.latency)
    assert {p.name: p.truth for p in split.phases}["drain"] == openai.latency.item_ack_s()
