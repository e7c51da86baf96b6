"""livekit's own restaurant example (``tests/upstream/restaurant_agent.py``, unchanged), whose
models are all LiveKit Inference's (``inference.STT/LLM/TTS``), attached as a console script
in another process: the emulator serves its STT and TTS websockets as well as its LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from livekit.agents import RunResult

from notebook_agents import AgentProcess
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from tests.runner.test_agent_process import assert_trace_matches_history

pytestmark = pytest.mark.slow  # an agent script started in a process of its own

RESTAURANT = Path(__file__).parents[1] / "upstream" / "restaurant_agent.py"


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
    handoffs = assert_trace_matches_history(events, history)
    assert [to for _, to in handoffs] == ["greeter", "reservation"]

    # its STT was served by the emulator and never refused
    stt = [log for log in emulator.connections if log.kind == "inference.stt"]
    assert stt and all("error" not in log.types("out") for log in stt)
    assert "session.created" in stt[0].types("out")
