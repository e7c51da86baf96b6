"""livekit's own restaurant example (``tests/upstream/restaurant_agent.py``, unchanged), whose
models are all LiveKit Inference's (``inference.STT/LLM/TTS``), attached as a console script
in another process: the emulator serves its STT and TTS websockets as well as its LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from livekit.agents import RunResult, llm

from notebook_agents import AgentProcess, RunnerState
from notebook_agents.emulator import Emulator
from notebook_agents.trace import check_event_data

RESTAURANT = Path(__file__).parent / "upstream" / "restaurant_agent.py"


@pytest.fixture
async def restaurant(emulator: Emulator) -> AsyncIterator[AgentProcess]:
    agent = AgentProcess(RESTAURANT, emulator=emulator)
    try:
        await agent.start().ready()
        yield agent
    finally:
        agent.stop()


async def test_the_restaurant_example_hands_off_and_its_trace_matches_its_history(
    restaurant: AgentProcess, emulator: Emulator
) -> None:
    result = await restaurant.run("to reservation")
    assert isinstance(result, RunResult) and result.done()
    result.expect.next_event().is_function_call(name="to_reservation")
    result.expect.next_event().is_function_call_output()
    # livekit's order: the greeter answers the tool's output, then the reservation agent
    # enters and its on_enter speaks
    result.expect.next_event().is_message(role="assistant")
    handoff = result.expect.next_event().is_agent_handoff()
    assert handoff.event().item.old_agent_id == "greeter"
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    # the reservation agent has the floor: its own tool is called, its rule answers
    time = await restaurant.run("update reservation time time=seven")
    time.expect.contains_function_call(name="update_reservation_time", arguments={"time": "seven"})
    # the session stayed up past its STT's first seconds (a failing STT ends it in ~1.5 s)
    assert restaurant.state is RunnerState.RUNNING
    assert (await restaurant.send_text("hello")).startswith("You are a reservation agent")

    history = await restaurant.history()
    events = restaurant.trace.events
    for event in events:
        check_event_data(event.kind, event.data)
    said = [(i.role, i.id) for i in history if isinstance(i, llm.ChatMessage)]
    traced = [
        ("user" if e.kind == "user_message" else "assistant", e.data["item_id"])
        for e in events
        if e.kind in ("user_message", "agent_message")
    ]
    assert traced == said
    calls = [(i.name, i.call_id, i.arguments) for i in history if isinstance(i, llm.FunctionCall)]
    assert [(e.data["name"], e.data["call_id"], e.data["arguments"]) for e in events
            if e.kind == "tool_call"] == calls  # fmt: skip
    outputs = [(i.call_id, i.output) for i in history if isinstance(i, llm.FunctionCallOutput)]
    assert [(e.data["call_id"], e.data["output"]) for e in events
            if e.kind == "tool_output"] == outputs  # fmt: skip
    handoffs = [
        (i.old_agent_id, i.new_agent_id) for i in history if isinstance(i, llm.AgentHandoff)
    ]
    assert [(e.data["from"], e.data["to"]) for e in events if e.kind == "handoff"] == handoffs
    assert [to for _, to in handoffs] == ["greeter", "reservation"]

    # its STT was served by the emulator and never refused
    stt = [log for log in emulator.connections if log.kind == "inference.stt"]
    assert stt and all("error" not in log.types("out") for log in stt)
    assert "session.created" in stt[0].types("out")
