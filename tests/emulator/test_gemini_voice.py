"""A spoken turn to a Gemini Live agent through the runner: the caller's audio goes in by the
plugin's ``realtimeInput``, the emulator hears it (its activity detection and recognizer),
answers aloud (24 kHz audio, sent faster than it plays) with its transcript."""

from __future__ import annotations

import pytest
from google.genai import types
from livekit.agents import AgentServer, AgentSession, JobContext
from livekit.plugins import google

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from tests.conftest import started
from tests.handoff_agents import Concierge
from tests.speech_check import envelope_match
from tests.upstream import greeter_weather


def gemini_voice_server(emulator: Emulator) -> AgentServer:
    """The Concierge on Gemini Live (its default: audio out), switched over in one line."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = google.realtime.RealtimeModel(
            api_key="not-a-secret", http_options=emulator.gemini_http_options()
        )
        session: AgentSession[None] = AgentSession(llm=model)
        await session.start(agent=Concierge(), room=ctx.room)

    return server


@pytest.mark.slow
async def test_a_spoken_turn_is_heard_answered_aloud_and_transcribed(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(gemini_voice_server(emulator), audio=True))
    reply = await runner.send_audio(synthesize("hello there"))
    assert reply == 'You are the Concierge. You said: "hello there".'
    (spoken,) = runner.recording.replies
    assert envelope_match(spoken, synthesize(reply)) > 0.9
    heard = [e.data["text"] for e in runner.trace.of_kind("user_transcript")]
    assert heard[-1] == "hello there"
    (log,) = emulator.connections
    assert "realtimeInput" in log.types("in")
    assert {"serverContent.inputTranscription", "serverContent.outputTranscription"} <= set(
        log.types("out")
    )


async def test_upstream_agents_run_on_gemini_with_only_the_model_switched(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """PR #5229's Greeter/Weather agents (tests/upstream, not our code) on Gemini Live: their
    model is the one line that changes. Their agents have different tools, so livekit opens a
    fresh Gemini session for the weather agent (the plugin cannot change a live session's
    tools), and the copied context reaches it."""
    model = google.realtime.RealtimeModel(
        api_key="not-a-secret",
        http_options=emulator.gemini_http_options(),
        modalities=[types.Modality.TEXT],
    )
    runner = await started(runners, NotebookRunner(greeter_weather.make_server(model)))
    result = await runner.run("transfer to weather")
    result.expect.next_event().is_function_call(name="transfer_to_weather")
    result.expect.next_event().is_function_call_output()
    handoff = result.expect.next_event().is_agent_handoff()
    assert handoff.event().item.new_agent_id == "weather_agent"
    weather = await runner.run("lookup weather location=Paris")
    weather.expect.contains_function_call(name="lookup_weather", arguments={"location": "Paris"})
    assert await runner.send_text("hello") == 'You are a weather agent. You said: "hello".'
    (moved,) = [h for h in runner.trace.of_kind("handoff") if h.data["from"]]
    assert (moved.data["to"], moved.data["session"], moved.data["context"]) == (
        "WeatherAgent",
        "fresh",
        "copied",
    )
    greeter, weather_session = emulator.conversations()
    # the fresh session was given the greeter's conversation as history
    assert "transfer to weather" in [item.get("text") for item in weather_session]
    assert greeter  # the greeter's own session held its turns
