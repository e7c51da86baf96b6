"""A transcription session on the Realtime socket, as the beta protocol opens it
(``?intent=transcription``, ``OpenAI-Beta: realtime=v1``; VideoSDK's ``OpenAISTT`` does):
it hears a spoken turn with its server VAD, commits and transcribes it, and never answers."""

from __future__ import annotations

import base64

import aiohttp
import numpy as np

from notebook_agents.emulator import Emulator
from tests.conftest import API_KEY
from tests.emulator.test_emulator_realtime_audio import TURN, RawClient, spoken

BETA = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "realtime=v1"}


async def test_a_transcription_session_hears_and_transcribes_a_spoken_turn_unanswered(
    emulator: Emulator,
) -> None:
    url = f"ws://127.0.0.1:{emulator.port}/v1/realtime?intent=transcription"
    async with aiohttp.ClientSession() as http, http.ws_connect(url, headers=BETA) as ws:
        client = RawClient(ws)
        created = await client.until("transcription_session.created")
        assert created["session"]["turn_detection"]["type"] == "server_vad"
        update = {
            "input_audio_format": "pcm16",
            "input_audio_transcription": {"model": "gpt-4o-mini-transcribe", "language": "en"},
            "turn_detection": TURN,
        }
        await client.send({"type": "transcription_session.update", "session": update})
        updated = (await client.until("transcription_session.updated"))["session"]
        assert updated["input_audio_transcription"]["model"] == "gpt-4o-mini-transcribe"
        for chunk in np.array_split(spoken("what is two plus three"), 100):
            audio = base64.b64encode(chunk.tobytes()).decode()
            await client.send({"type": "input_audio_buffer.append", "audio": audio})
        done = await client.until("conversation.item.input_audio_transcription.completed")
        assert done["transcript"] == "what is 2 plus 3"
        kinds = [e["type"] for e in client.events]
        assert kinds[1:] == [
            "transcription_session.updated",
            "input_audio_buffer.speech_started",
            "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed",
            "conversation.item.created",
            "conversation.item.input_audio_transcription.completed",
        ]
        item = next(e for e in client.events if e["type"] == "conversation.item.created")
        assert item["item"]["id"] == done["item_id"]
