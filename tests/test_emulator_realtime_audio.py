"""The Realtime websocket hears and speaks: server VAD on the appended audio, a real
transcript (pocketsphinx), and the reply spoken by eSpeak, streamed at the pace it plays,
all through livekit's own realtime plugin, unmodified."""

from __future__ import annotations

import base64
import time
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import llm
from livekit.agents.llm import function_tool

from notebook_agents.emulator import Emulator
from notebook_agents.emulator.listening import ServerVad
from notebook_agents.speech import SAMPLE_RATE, synthesize

from .speech_check import envelope_match
from .test_emulator_realtime import ServerEvents, realtime_session

TURN = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
}


@function_tool
async def transfer_to_billing() -> str:
    """Hand the caller to billing."""
    return "ok"


def say(sess: llm.RealtimeSession[Any], text: str, quiet_s: float = 1.0) -> None:
    """Push ``text`` spoken, then ``quiet_s`` of silence, in 20 ms frames (faster than real
    time: the server's VAD counts audio, not seconds)."""
    spoken = np.concatenate([synthesize(text), np.zeros(int(quiet_s * SAMPLE_RATE), np.int16)])
    for chunk in np.array_split(spoken, spoken.size // 480):
        sess.push_audio(rtc.AudioFrame(chunk.tobytes(), SAMPLE_RATE, 1, chunk.size))


def audio_of(events: list[dict[str, Any]]) -> np.ndarray:
    deltas = [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]
    return np.frombuffer(b"".join(base64.b64decode(d) for d in deltas), "<i2")


def test_the_vad_finds_speech_between_silences() -> None:
    vad = ServerVad(SAMPLE_RATE, TURN)
    quiet = np.zeros(SAMPLE_RATE, np.int16)
    spoken = synthesize("hello there")
    heard_at = list(vad.feed(np.concatenate([quiet, spoken, quiet])))
    assert [h.kind for h in heard_at] == ["started", "stopped"]
    start, stop = (h.ms for h in heard_at)
    assert 950 <= start <= 1100  # within a few frames of where the speech begins
    assert stop - start >= 0.8 * spoken.size * 1000 / SAMPLE_RATE


async def test_a_spoken_request_is_heard_transcribed_and_answered_with_a_tool_call(
    emulator: Emulator,
) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        await sess.update_tools([transfer_to_billing])
        say(sess, "transfer to billing please")
        started = await events.wait_for("input_audio_buffer.speech_started")
        stopped = await events.wait_for("input_audio_buffer.speech_stopped")
        assert stopped["item_id"] == started["item_id"]
        committed = await events.wait_for("input_audio_buffer.committed")
        assert committed["item_id"] == started["item_id"]
        transcribed = await events.wait_for("conversation.item.input_audio_transcription.completed")
        assert transcribed["transcript"] == "transfer to billing please"
        # the server's VAD creates the response on its own; the words name the tool
        call = await events.wait_for("response.function_call_arguments.done")
        assert call["name"] == "transfer_to_billing"


async def test_the_reply_is_spoken_and_streamed_at_the_pace_it_plays(emulator: Emulator) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        arrived: list[float] = []
        sess.on(
            "openai_server_event_received",
            lambda e: (
                arrived.append(time.perf_counter())
                if e["type"] == "response.output_audio.delta"
                else None
            ),
        )
        say(sess, "hello there")
        done = await events.wait_for("response.done", timeout=15)
        assert done["response"]["status"] == "completed"
        text = (await events.wait_for("response.output_audio_transcript.done"))["transcript"]
        assert text == 'You said: "hello there".'
        spoken = audio_of(events.events)
        expected = synthesize(text)
        assert abs(spoken.size - expected.size) < 0.1 * expected.size
        assert envelope_match(spoken, expected) > 0.9  # eSpeak saying the reply
        # paced: the deltas arrive over about as long as the speech lasts
        assert arrived[-1] - arrived[0] > 0.7 * spoken.size / SAMPLE_RATE


async def test_speaking_over_the_reply_cancels_it(emulator: Emulator) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        say(sess, "hello there")
        await events.wait_for("response.output_audio.delta", timeout=10)
        say(sess, "thank you")  # a barge-in
        cancelled = await events.wait_for("response.done", response__status="cancelled")
        assert cancelled["response"]["status_details"]["reason"] == "turn_detected"
        # and the new turn is answered
        answered = await events.wait_for(
            "response.output_audio_transcript.done", transcript='You said: "thank you".', timeout=15
        )
        assert answered
