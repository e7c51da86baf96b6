"""LiveKit Inference's STT and TTS websockets, driven by livekit's own ``inference.STT`` and
``inference.TTS`` clients over loopback, and the model names of livekit's inference catalogue
(``inference.LLMModels``, ``STTModels``, ``TTSModels``), every one served."""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import aiohttp
import numpy as np
import pytest
from livekit import rtc
from livekit.agents import APIConnectOptions, APIStatusError, inference, llm, stt

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


def catalogue(models: object) -> list[str]:
    """Every model name one of livekit's catalogue types lists: a ``Literal``, or a union of
    them."""
    names: list[str] = []
    for part in typing.get_args(models):
        names.extend([part] if isinstance(part, str) else catalogue(part))
    return names


async def reply(emulator: Emulator, model: str) -> str:
    """What livekit's inference LLM of ``model`` answers "hello" through the emulator, as an
    agent asks (the client shapes its request by the model), tried once."""
    ctx = llm.ChatContext.empty()
    ctx.add_message(role="system", content="You are Ada.")
    ctx.add_message(role="user", content="hello")
    brain = inference.LLM(model, base_url=emulator.base_url(), api_key=KEY, api_secret=SECRET)
    try:
        async with brain.chat(chat_ctx=ctx, conn_options=APIConnectOptions(max_retry=0)) as stream:
            return "".join([c.delta.content or "" async for c in stream if c.delta is not None])
    finally:
        await brain.aclose()


async def test_every_llm_of_livekits_inference_catalogue_answers(emulator: Emulator) -> None:
    names = catalogue(inference.LLMModels)
    assert "google/gemini-2.5-flash" in names  # Gemini's names are LiveKit Inference's too
    for name in names:
        assert await reply(emulator, name) == 'You are Ada. You said: "hello".', name


@pytest.mark.parametrize("kind", ["stt", "tts"])
async def test_every_speech_model_of_livekits_inference_catalogue_is_served(
    emulator: Emulator, http: aiohttp.ClientSession, kind: str
) -> None:
    names = catalogue(inference.STTModels if kind == "stt" else inference.TTSModels)
    headers = {"Authorization": "Bearer token"}
    for name in names:  # a provider alone (TTS's "cartesia") and STT's "auto" among them
        query = urlencode({"model": name})
        async with http.ws_connect(f"ws{emulator.url[4:]}/v1/{kind}?{query}", headers=headers):
            pass
    assert len([c for c in emulator.connections if c.kind == f"inference.{kind}"]) == len(names)


async def test_an_llm_the_catalogue_does_not_list_is_refused_at_once_naming_the_fix(
    emulator: Emulator,
) -> None:
    """livekit's current examples' model, which 1.8.9 does not list: the documented 404, not
    retryable, so livekit's client raises it at once."""
    with pytest.raises(APIStatusError) as refused:
        await reply(emulator, "google/gemma-4-31b-it")
    assert refused.value.status_code == 404 and not refused.value.retryable
    assert "emulator.settings.models.add(['google/gemma-4-31b-it'])" in refused.value.message
    emulator.settings.models.add(["google/gemma-4-31b-it"])
    assert await reply(emulator, "google/gemma-4-31b-it") == 'You are Ada. You said: "hello".'


@pytest.mark.parametrize(
    ("kind", "model"), [("stt", "nova-3"), ("stt", "deepgram/nova-99"), ("tts", "espeak/ng")]
)
async def test_a_speech_model_the_catalogue_does_not_list_is_refused_naming_the_fix(
    emulator: Emulator, http: aiohttp.ClientSession, kind: str, model: str
) -> None:
    url = f"ws{emulator.url[4:]}/v1/{kind}?model={model}"
    headers = {"Authorization": "Bearer token"}
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(url, headers=headers)
    assert refused.value.status == 404
    async with http.get(url.replace("ws", "http", 1), headers=headers) as response:
        error = (await response.json())["error"]
    assert error["code"] == "model_not_found"
    assert f"models.add([{model!r}], kind='inference_{kind}')" in error["message"]


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
