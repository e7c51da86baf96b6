"""Tool calls through a full AgentSession: the emulator's arguments pass livekit's validation."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Literal

import pytest
from livekit.agents import Agent, AgentSession, function_tool
from livekit.agents.voice.run_result import RunResult
from livekit.plugins import openai
from pydantic import Field

from notebook_agents.emulator import Emulator
from tests.conftest import API_KEY


class Seating(str, enum.Enum):
    INDOOR = "indoor"
    OUTDOOR = "outdoor"


class Takeaway(Agent):
    """Upstream's restaurant ``update_order`` (unchanged) and a tool of every scalar type."""

    def __init__(self) -> None:
        super().__init__(instructions="You are a takeaway agent.")
        self.calls: list[dict[str, object]] = []

    @function_tool
    async def update_order(
        self, items: Annotated[list[str], Field(description="The items of the full order")]
    ) -> str:
        """Called when the user creates or updates their order."""
        self.calls.append({"items": items})
        return f"The order is updated to {items}"

    @function_tool
    async def book_table(
        self,
        guests: int,
        deposit: float,
        high_chair: bool,
        seating: Seating,
        when: Literal["lunch", "dinner"],
    ) -> str:
        """Book a table."""
        self.calls.append(
            {
                "guests": guests,
                "deposit": deposit,
                "high_chair": high_chair,
                "seating": seating,
                "when": when,
            }
        )
        return "booked"


def model(emulator: Emulator, kind: str) -> openai.LLM | openai.realtime.RealtimeModel:
    if kind == "realtime":
        return openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
    return openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")


@pytest.mark.parametrize("kind", ["realtime", "chat"])
@pytest.mark.parametrize(
    ("text", "called"),
    [
        ("update order items=Pizza", {"items": ["Pizza"]}),
        (
            "book table guests=4 deposit=12.5 high_chair=yes seating=Outdoor when=dinner",
            {
                "guests": 4,
                "deposit": 12.5,
                "high_chair": True,
                "seating": Seating.OUTDOOR,
                "when": "dinner",
            },
        ),
    ],
)
async def test_the_tool_runs_with_typed_arguments(
    emulator: Emulator, kind: str, text: str, called: dict[str, object]
) -> None:
    agent = Takeaway()
    lm = model(emulator, kind)
    session: AgentSession[None] = AgentSession(
        llm=lm, vad=None, turn_handling={"turn_detection": "manual"}
    )
    try:
        await session.start(agent)
        result: RunResult[None] = await session.run(user_input=text)
        result.expect.next_event().is_function_call()
        output = result.expect.next_event().is_function_call_output().event().item
        assert not output.is_error, output.output
    finally:
        await session.aclose()
        await lm.aclose()
    assert agent.calls == [called]


class Pharmacy(Agent):
    """A tool whose integer argument is required (no default)."""

    def __init__(self) -> None:
        super().__init__(instructions="You are a pharmacy agent.")
        self.calls: list[dict[str, object]] = []

    @function_tool
    async def refill_prescription(self, medication: str, quantity: int) -> str:
        """Refill a prescription."""
        self.calls.append({"medication": medication, "quantity": quantity})
        return f"Refill of {quantity} packs of {medication} ordered."


async def pharmacy_turn(
    emulator: Emulator, kind: str, text: str
) -> tuple[Pharmacy, RunResult[None]]:
    """One typed turn to a Pharmacy through a full AgentSession against the emulator."""
    agent = Pharmacy()
    lm = model(emulator, kind)
    session: AgentSession[None] = AgentSession(
        llm=lm, vad=None, turn_handling={"turn_detection": "manual"}
    )
    try:
        await session.start(agent)
        return agent, await session.run(user_input=text)
    finally:
        await session.aclose()
        await lm.aclose()


@pytest.mark.parametrize("kind", ["realtime", "chat"])
async def test_a_typed_number_word_is_the_number(emulator: Emulator, kind: str) -> None:
    agent, result = await pharmacy_turn(
        emulator, kind, "refill prescription medication=aspirin quantity=five"
    )
    result.expect.next_event().is_function_call(
        name="refill_prescription", arguments={"medication": "aspirin", "quantity": 5}
    )
    assert agent.calls == [{"medication": "aspirin", "quantity": 5}]


@pytest.mark.parametrize("kind", ["realtime", "chat"])
async def test_a_required_argument_that_cannot_be_filled_is_left_out(
    emulator: Emulator, kind: str
) -> None:
    agent, result = await pharmacy_turn(
        emulator, kind, "refill prescription medication=aspirin quantity=lots"
    )
    call = result.expect.next_event().is_function_call(name="refill_prescription").event().item
    # the model sends what it was told, nothing made up: livekit's validation then speaks
    assert json.loads(call.arguments) == {"medication": "aspirin"}
    output = result.expect.next_event().is_function_call_output().event().item
    assert output.is_error and "quantity" in output.output
    assert agent.calls == []  # the tool never ran with an invented quantity
    # as a model told the field is missing: it asks the caller, not reads the error out
    reply = result.expect.next_event().is_message(role="assistant").event().item
    assert reply.text_content == (
        "You are a pharmacy agent. I need the quantity for refill_prescription: what is it?"
    )
