"""A spoken turn to a Gemini Live agent through the runner: the caller's audio goes in by the
plugin's ``realtimeInput``, the emulator hears it (its activity detection and recognizer),
answers aloud (24 kHz audio, sent faster than it plays) with its transcript."""

from __future__ import annotations

from livekit.agents import AgentServer, AgentSession, JobContext
from livekit.plugins import google

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize

from .conftest import started
from .handoff_agents import Concierge
from .speech_check import envelope_match


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
