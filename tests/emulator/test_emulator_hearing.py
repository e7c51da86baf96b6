"""The Realtime socket hears a caller in its session's own vocabulary: tool words no dictionary
has, and a tool's arguments spoken, through livekit's realtime plugin, unmodified."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from livekit.agents.llm import function_tool
from livekit.plugins import openai
from openai.types import realtime

from notebook_agents.emulator import Emulator
from tests.conftest import API_KEY
from tests.emulator.test_emulator_realtime import ServerEvents
from tests.emulator.test_emulator_realtime_audio import say


@function_tool
async def lookup_weather(location: str) -> str:
    """Look up the weather for a location.

    Args:
        location: The city to look up.
    """
    return f"It is sunny in {location}."


@function_tool
async def transfer_to_greeter() -> str:
    """Transfer the user back to the greeter."""
    return "ok"


@asynccontextmanager
async def _session(
    emulator: Emulator,
) -> AsyncIterator[tuple[openai.realtime.RealtimeSession, ServerEvents]]:
    """PR #5229's WeatherAgent on a listening realtime session whose transcription expects a
    few cities (its prompt), as a LiveKit developer sets one up."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(),
        api_key=API_KEY,
        input_audio_transcription=realtime.AudioTranscription(
            model="gpt-4o-mini-transcribe", prompt="The weather in Paris, London or Tokyo."
        ),
    )
    sess = model.session()
    try:
        events = ServerEvents(sess)
        await sess.update_instructions(
            "You are a weather agent. Answer questions about the weather."
        )
        await sess.update_tools([lookup_weather, transfer_to_greeter])
        yield sess, events
    finally:
        await sess.aclose()
        await model.aclose()


async def test_a_tool_word_outside_the_dictionary_is_heard_and_called(emulator: Emulator) -> None:
    """The word "greeter" is in no dictionary: the grammar failed to parse, and the socket
    handled no further event."""
    async with _session(emulator) as (sess, events):
        say(sess, "transfer to greeter")
        call = await events.wait_for("response.function_call_arguments.done", timeout=15)
        assert call["name"] == "transfer_to_greeter"
        say(sess, "hello there")
        heard = await events.wait_for(
            "conversation.item.input_audio_transcription.completed",
            timeout=15,
            transcript="hello there",
        )
        assert heard["transcript"] == "hello there"


async def test_a_spoken_argument_reaches_the_tool_as_a_typed_one(emulator: Emulator) -> None:
    """Saying "lookup weather location Paris" called lookup_weather(location=""): the words a caller
    of the session may say (its instructions, tools, transcription prompt) are heard now, and
    the argument comes out as the reply rules read a typed one."""
    async with _session(emulator) as (sess, events):
        say(sess, "lookup weather location paris")
        heard = await events.wait_for(
            "conversation.item.input_audio_transcription.completed", timeout=15
        )
        assert heard["transcript"] == "lookup weather location: Paris"
        call = await events.wait_for("response.function_call_arguments.done", timeout=15)
        assert (call["name"], json.loads(call["arguments"])) == (
            "lookup_weather",
            {"location": "Paris"},
        )
