"""LiveKit Inference's STT and TTS websockets, driven by livekit's own ``inference.STT`` and
``inference.TTS`` clients over loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import numpy as np
import pytest
from livekit import rtc
from livekit.agents import inference, stt

from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from tests.speech_check import heard

KEY, SECRET = "key", "a-secret-long-enough-for-hmac-sha256"
FRAME_MS = 20


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def _frames(samples: np.ndarray) -> list[rtc.AudioFrame]:
    """``samples`` then a second of silence, in 20 ms frames, as a microphone gives them."""
    audio = np.concatenate([samples, np.zeros(SAMPLE_RATE, np.int16)])
    step = SAMPLE_RATE * FRAME_MS // 1000
    return [
        rtc.AudioFrame(audio[i : i + step].tobytes(), SAMPLE_RATE, 1, audio[i : i + step].size)
        for i in range(0, audio.size, step)
    ]


async def _transcribe(
    emulator: Emulator, http: aiohttp.ClientSession, text: str, keyterms: list[str]
) -> list[stt.SpeechEvent]:
    ears = inference.STT(
        model="deepgram/nova-3",
        base_url=emulator.base_url(),
        http_session=http,
        extra_kwargs={"keyterm": keyterms},
        api_key=KEY,
        api_secret=SECRET,
    )
    stream = ears.stream()
    for frame in _frames(synthesize(text)):
        stream.push_frame(frame)
    stream.end_input()
    events = [event async for event in stream]
    await stream.aclose()
    return events


async def test_a_spoken_phrase_is_transcribed_by_livekits_inference_stt(
    emulator: Emulator, http: aiohttp.ClientSession
) -> None:
    events = await _transcribe(emulator, http, "lookup invoice please", ["lookupInvoice"])
    kinds = [e.type for e in events if e.type != stt.SpeechEventType.RECOGNITION_USAGE]
    assert kinds == [
        stt.SpeechEventType.START_OF_SPEECH,
        stt.SpeechEventType.FINAL_TRANSCRIPT,
        stt.SpeechEventType.END_OF_SPEECH,
    ]
    final = next(e for e in events if e.type == stt.SpeechEventType.FINAL_TRANSCRIPT)
    assert final.alternatives[0].text == "lookup invoice please"
    assert 0 < final.alternatives[0].start_time < final.alternatives[0].end_time
    (log,) = [c for c in emulator.connections if c.kind == "inference.stt"]
    assert log.path == "/v1/stt"
    assert log.types("in")[0] == "session.create" and "input_audio" in log.types("in")
    assert log.types("out")[:2] == ["session.created", "start_of_speech"]
    assert "session.finalized" in log.types("out") and "error" not in log.types("out")


@pytest.mark.parametrize("rate", [24000, 16000])
async def test_a_text_is_synthesized_by_livekits_inference_tts_at_its_rate(
    emulator: Emulator, http: aiohttp.ClientSession, rate: int
) -> None:
    voice = inference.TTS(
        model="cartesia/sonic-3",
        voice="e07c00bc-4134-4eae-9ea4-1a55fb45746b",
        sample_rate=rate,
        base_url=emulator.base_url(),
        http_session=http,
        api_key=KEY,
        api_secret=SECRET,
    )
    # the connection is pooled: the second synthesis reuses it
    for text in ("hello there", "transfer to billing"):
        frames = [audio.frame async for audio in voice.synthesize(text)]
        assert {f.sample_rate for f in frames} == {rate}
        samples = np.concatenate([np.frombuffer(f.data, np.int16) for f in frames])
        spoken = synthesize(text, rate=rate)
        assert abs(samples.size - spoken.size) < rate // 10  # eSpeak's length, to 0.1 s
        assert heard(samples, rate=rate) == text
    await voice.aclose()
    (log,) = [c for c in emulator.connections if c.kind == "inference.tts"]
    assert log.types("out").count("done") == 2 and "error" not in log.types("out")


async def test_a_model_not_named_provider_slash_model_is_refused(
    emulator: Emulator, http: aiohttp.ClientSession
) -> None:
    url = f"ws{emulator.url[4:]}/v1/stt?model=nova-3"
    headers = {"Authorization": "Bearer token"}
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(url, headers=headers)
    assert refused.value.status == 400


async def test_latency_in_the_base_urls_query_reaches_the_inference_sockets(
    emulator: Emulator, http: aiohttp.ClientSession
) -> None:
    """The clients append ``/tts?model=...`` after the base_url's query string."""
    voice = inference.TTS(
        model="cartesia/sonic-3",
        base_url=emulator.base_url(rtt_ms=40),
        http_session=http,
        api_key=KEY,
        api_secret=SECRET,
    )
    frames = [audio.frame async for audio in voice.synthesize("hello there")]
    await voice.aclose()
    assert frames
    (log,) = [c for c in emulator.connections if c.kind == "inference.tts"]
    assert log.path == "/v1/tts" and log.latency.rtt_ms == 40
