"""A full AgentSession hands off A -> B through the real realtime plugin, reused and fresh."""

from __future__ import annotations

import logging

import pytest
from livekit.agents import NOT_GIVEN, Agent, AgentSession, function_tool
from livekit.agents.voice.run_result import AgentHandoffEvent, ChatMessageEvent, RunResult
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from tests.conftest import API_KEY


class Bob(Agent):
    def __init__(self, llm: openai.realtime.RealtimeModel | None = None) -> None:
        # no llm of its own means the session's: the same RealtimeModel instance as Alice's
        super().__init__(
            instructions="You are Bob. You handle billing.", llm=llm if llm else NOT_GIVEN
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Alice(Agent):
    def __init__(self, bob: Bob) -> None:
        super().__init__(instructions="You are Alice. You greet callers.")
        self._bob = bob

    @function_tool
    async def transfer_to_bob(self) -> Agent:
        """Hand the caller to Bob for billing questions."""
        return self._bob


def model(emulator: Emulator) -> openai.realtime.RealtimeModel:
    return openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )


@pytest.mark.parametrize("mode", ["reused", "fresh"])
async def test_handoff_a_to_b(
    emulator: Emulator, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="livekit.agents")
    shared = model(emulator)
    own = model(emulator) if mode == "fresh" else None
    session: AgentSession[None] = AgentSession(
        llm=shared, vad=None, turn_handling={"turn_detection": "manual"}
    )
    try:
        await session.start(Alice(Bob(llm=own)))
        first: RunResult[None] = await session.run(user_input="hello there")
        greeting = [e for e in first.events if isinstance(e, ChatMessageEvent)]
        assert greeting[-1].item.text_content == 'You are Alice. You said: "hello there".'

        result: RunResult[None] = await session.run(user_input="please transfer to Bob")
        result.expect.next_event().is_function_call(name="transfer_to_bob")
        result.expect.next_event().is_function_call_output()
        handoff = result.expect.next_event().is_agent_handoff(new_agent_type=Bob).event()
        assert isinstance(handoff, AgentHandoffEvent)
        reply = result.expect.next_event().is_message(role="assistant").event().item
        assert reply.text_content is not None
        assert reply.text_content.startswith("You are Bob.")
    finally:
        await session.aclose()
        await shared.aclose()
        if own is not None:
            await own.aclose()

    realtime = [c for c in emulator.connections if c.kind == "realtime"]
    reused = "reusing realtime session from previous activity" in caplog.text
    if mode == "reused":
        assert reused and len(realtime) == 1
    else:
        assert not reused and len(realtime) == 2
        # B's own session got B's instructions before its reply
        assert "response.create" in realtime[1].types("in")
