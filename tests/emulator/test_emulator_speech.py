"""``POST /v1/audio/speech``: livekit's real ``openai.TTS`` plugin speaks through the emulator."""

from __future__ import annotations

from typing import Any

import aiohttp
import numpy as np
import pytest
from livekit.agents import tts
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from tests.conftest import API_KEY
from tests.speech_check import heard


async def _spoken(tts: tts.TTS[Any], text: str) -> np.ndarray:
    frames = [event.frame async for event in tts.synthesize(text)]
    assert {(f.sample_rate, f.num_channels) for f in frames} == {(SAMPLE_RATE, 1)}
    return np.concatenate([np.frombuffer(f.data, np.int16) for f in frames])


@pytest.mark.parametrize("response_format", ["mp3", "pcm", "wav"])  # mp3: the plugin's default
async def test_the_openai_tts_plugin_speaks_offline(
    emulator: Emulator, response_format: str
) -> None:
    async with openai.TTS(
        base_url=emulator.base_url(), api_key=API_KEY, response_format=response_format
    ) as tts:
        audio = await _spoken(tts, "transfer to billing")
    assert heard(audio) == "transfer to billing"
    # the emulator's voice, whole: as long as eSpeak's own (the WAV header is no sample)
    assert abs(audio.size - synthesize("transfer to billing").size) < SAMPLE_RATE * 0.05
    assert [(c.kind, c.path) for c in emulator.connections][-1] == (
        "speech",
        "/v1/audio/speech",
    )


async def test_speed_is_how_fast_it_speaks(emulator: Emulator) -> None:
    async with openai.TTS(base_url=emulator.base_url(), api_key=API_KEY, speed=2.0) as fast:
        quick = await _spoken(fast, "hello there, how are you doing today")
    async with openai.TTS(base_url=emulator.base_url(), api_key=API_KEY) as normal:
        usual = await _spoken(normal, "hello there, how are you doing today")
    assert quick.size < 0.7 * usual.size


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"model": "tts-1", "input": "  "}, "input", "non-empty string"),
        ({"model": "tts-1", "input": "x" * 4097}, "input", "at most 4096"),
        ({"model": "tts-1", "input": "hi", "response_format": "ogg"}, "response_format", "pcm"),
        ({"model": "tts-1", "input": "hi", "speed": 9}, "speed", "between 0.25 and 4.0"),
        ({"input": "hi"}, "model", "model parameter"),
    ],
)
async def test_a_bad_request_is_refused_naming_the_field(
    emulator: Emulator, body: dict[str, object], param: str, says: str
) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with (
        aiohttp.ClientSession() as client,
        client.post(f"{emulator.url}/v1/audio/speech", json=body, headers=headers) as response,
    ):
        error = (await response.json())["error"]
    assert response.status == 400
    assert error["param"] == param and says in error["message"]
