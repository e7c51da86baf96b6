"""Input the Realtime socket cannot use is that event's error, never a dead socket: a
malformed ``input_audio_buffer.append``, a turn the recognizer fails on. An open
microphone's silence is not kept."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pocketsphinx
import pytest

from notebook_agents.emulator import Emulator
from notebook_agents.emulator._open_connections import OPEN_CONNECTIONS_KEY
from notebook_agents.emulator.listening import ServerVad
from notebook_agents.emulator.openai_realtime import RealtimeConnection
from notebook_agents.speech import SAMPLE_RATE, recognition
from tests.emulator.test_emulator_realtime_audio import (
    TRANSCRIBED,
    TURN,
    RawClient,
    ask,
    raw_session,
    spoken,
)

PORTER_TOOL = {
    "type": "function",
    "name": "page_the_night_porter",
    "description": "Page the night porter.",
    "parameters": {"type": "object", "properties": {}},
}


async def answers_still(client: RawClient) -> None:
    """The socket still handles events: a typed turn is answered."""
    await ask(client, "hello there")
    reply = await client.until("response.output_text.done")
    assert reply["text"] == 'You said: "hello there".'
    await client.until("response.done")


@pytest.mark.parametrize(
    ("audio", "says"),
    [
        (base64.b64encode(b"abc").decode(), "3 bytes"),  # half a PCM16 sample over
        ("not base64!", "base64"),
    ],
)
async def test_a_malformed_append_is_its_error_and_the_socket_lives_on(
    emulator: Emulator, audio: str, says: str
) -> None:
    async with raw_session(emulator, output_modalities=["text"]) as client:
        await client.send(
            {"type": "input_audio_buffer.append", "event_id": "append_bad", "audio": audio}
        )
        error = (await client.until("error", errors=True))["error"]
        assert error["event_id"] == "append_bad"
        assert error["type"] == "invalid_request_error" and error["param"] == "audio"
        assert says in error["message"] and "PCM16" in error["message"]
        await answers_still(client)


class _BrokenDecoder:
    """pocketsphinx failing as it does on a grammar it cannot parse."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ValueError("Failed to parse JSGF in decoder")


async def test_a_recognizer_failure_is_the_turns_error_and_the_socket_lives_on(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a pool of no decoders yet: the turn's decoder is made now (broken), not one reused
    monkeypatch.setattr(recognition, "_ears", recognition._Ears(2))
    async with raw_session(
        emulator,
        output_modalities=["text"],
        tools=[PORTER_TOOL],
        audio={"input": {"transcription": TRANSCRIBED, "turn_detection": TURN}},
    ) as client:
        with monkeypatch.context() as broken:
            broken.setattr(pocketsphinx, "Decoder", _BrokenDecoder)
            await client.speak(spoken("hello there"))
            error = (await client.until("error", errors=True))["error"]
        assert error["type"] == "server_error"
        assert "Failed to parse JSGF in decoder" in error["message"]
        committed = client.first("input_audio_buffer.committed")
        failed = client.first("conversation.item.input_audio_transcription.failed")
        assert failed["item_id"] == committed["item_id"]
        # a turn not heard is not answered as if it were
        assert "response.created" not in client.types()
        await client.speak(spoken("hello there"))  # heard this time
        heard = await client.until("conversation.item.input_audio_transcription.completed")
        assert heard["transcript"] == "hello there"
        await client.until("response.done")
        await answers_still(client)


async def test_an_emulator_failure_on_one_event_is_its_error_and_the_socket_lives_on(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*args: Any) -> Any:
        raise RuntimeError("a bug in the emulator")

    async with raw_session(emulator, output_modalities=["text"]) as client:
        with monkeypatch.context() as broken:
            broken.setattr(ServerVad, "feed", fails)
            await client.send(
                {
                    "type": "input_audio_buffer.append",
                    "event_id": "append_fails",
                    "audio": base64.b64encode(bytes(960)).decode(),
                }
            )
            error = (await client.until("error", errors=True))["error"]
        assert error["event_id"] == "append_fails" and error["type"] == "server_error"
        assert "input_audio_buffer.append" in error["message"]
        assert "a bug in the emulator" in error["message"]
        await answers_still(client)


def connection(emulator: Emulator) -> RealtimeConnection:
    """The emulator's one open realtime connection."""
    assert emulator._app is not None
    (open_connection,) = emulator._app[OPEN_CONNECTIONS_KEY]
    assert isinstance(open_connection, RealtimeConnection)
    return open_connection


async def test_an_open_microphones_silence_is_not_kept(emulator: Emulator) -> None:
    """Server VAD keeps only what could begin a turn: speech, and its prefix padding."""
    async with raw_session(
        emulator,
        output_modalities=["text"],
        audio={"input": {"transcription": TRANSCRIBED, "turn_detection": TURN}},
    ) as client:
        await client.speak(np.zeros(60 * SAMPLE_RATE, np.int16), chunk_ms=20)  # a minute
        # handled behind every append
        await client.send({"type": "session.update", "session": {"type": "realtime"}})
        await client.until("session.updated")
        # at most the prefix padding, the speech-start window and a frame, not a minute
        assert connection(emulator).buffered_ms <= 300 + 60 + 20
        # and a turn after the silence is still heard whole and answered
        await client.speak(np.zeros(30 * SAMPLE_RATE, np.int16), chunk_ms=20)
        await client.speak(spoken("hello there"))
        heard = await client.until("conversation.item.input_audio_transcription.completed")
        assert heard["transcript"] == "hello there"
        await client.until("response.done")
