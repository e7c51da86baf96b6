"""``POST /v1/audio/transcriptions``: livekit's real ``openai.STT`` plugin hears a caller
through the emulator, in the vocabulary of the tools its models were offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import numpy as np
import pytest
from livekit import rtc
from livekit.agents import NOT_GIVEN, NotGivenOr, llm, stt
from livekit.agents.llm import function_tool
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes
from tests.conftest import API_KEY

TRANSCRIPTIONS = "/v1/audio/transcriptions"
SPEECH = "/v1/audio/speech"
BILLING_TOOL = {
    "type": "function",
    "function": {"name": "transfer_to_billing", "parameters": {"type": "object"}},
}


def _frame(text: str) -> rtc.AudioFrame:
    samples = synthesize(text)
    return rtc.AudioFrame(samples.tobytes(), SAMPLE_RATE, 1, samples.size)


async def _heard(
    emulator: Emulator,
    text: str,
    model: str = "gpt-4o-mini-transcribe",
    keywords: NotGivenOr[list[str]] = NOT_GIVEN,
) -> str:
    async with openai.STT(
        base_url=emulator.base_url(), api_key=API_KEY, model=model, keywords=keywords
    ) as ears:
        event = await ears.recognize(_frame(text))
    assert event.type == stt.SpeechEventType.FINAL_TRANSCRIPT
    return event.alternatives[0].text


async def _post(
    emulator: Emulator, path: str, body: dict[str, Any] | aiohttp.FormData
) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer of a POST of ``body`` (JSON, or a form) to the emulator."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    sent = {"data": body} if isinstance(body, aiohttp.FormData) else {"json": body}
    async with (
        aiohttp.ClientSession() as client,
        client.post(f"{emulator.url}{path}", headers=headers, **sent) as response,
    ):
        return response.status, await response.json()


async def test_a_greeting_is_heard_by_the_openai_stt_plugin(emulator: Emulator) -> None:
    assert await _heard(emulator, "hello there") == "hello there"
    assert [(c.kind, c.path) for c in emulator.connections][-1] == (
        "transcriptions",
        "/v1/audio/transcriptions",
    )


async def test_a_tool_offered_to_the_llm_is_what_the_caller_is_heard_asking_for(
    emulator: Emulator,
) -> None:
    """A cascaded session's STT request does not name the LLM's tools: the emulator knows them
    from the chat requests it served."""
    assert "billing" not in await _heard(emulator, "transfer to billing")
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    status, _ = await _post(emulator, "/v1/chat/completions", {**chat, "tools": [BILLING_TOOL]})
    assert status == 200
    assert await _heard(emulator, "transfer to billing") == "transfer to billing"


async def test_keywords_widen_what_is_heard(emulator: Emulator) -> None:
    heard = await _heard(
        emulator, "lookup invoice please", model="gpt-transcribe", keywords=["lookupInvoice"]
    )
    assert heard == "lookup invoice please"


async def test_whisper_1_gets_verbose_json_with_the_duration(emulator: Emulator) -> None:
    assert await _heard(emulator, "what is two plus three", model="whisper-1") == (
        "what is 2 plus 3"
    )
    spoken = synthesize("thank you")
    form = _form(wav_bytes(spoken, SAMPLE_RATE), model="whisper-1", response_format="verbose_json")
    status, body = await _post(emulator, TRANSCRIPTIONS, form)
    assert status == 200
    assert body["text"] == "thank you"
    assert body["duration"] == pytest.approx(spoken.size / SAMPLE_RATE)


def _rate_zero() -> bytes:
    """A WAV whose header says 0 samples a second (it was a 500: a null pointer)."""
    wav = bytearray(wav_bytes(np.zeros(100, np.int16), 16_000))
    wav[24:28] = bytes(4)  # the fmt chunk's sample rate
    return bytes(wav)


def _form(file: bytes | None, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, value in fields.items():
        form.add_field(name, value)
    if file is not None:
        form.add_field("file", file, filename="turn.wav")
    return form


@pytest.mark.parametrize(
    ("form", "param", "says"),
    [
        (lambda: _form(b"ID3 not a wav", model="whisper-1"), "file", "PCM16 WAV"),
        (lambda: _form(_rate_zero(), model="whisper-1"), "file", "sample rate is 0 Hz"),
        (lambda: _form(None, model="whisper-1"), "file", "provide a file"),
        (lambda: _form(wav_bytes(np.zeros(100, np.int16), 16_000)), "model", "model parameter"),
        (
            lambda: _form(
                wav_bytes(np.zeros(100, np.int16), 16_000), model="whisper-1", response_format="srt"
            ),
            "response_format",
            "verbose_json",
        ),
    ],
)
async def test_a_bad_request_is_refused_naming_the_field(
    emulator: Emulator, form: Callable[[], aiohttp.FormData], param: str, says: str
) -> None:
    status, body = await _post(emulator, TRANSCRIPTIONS, form())
    assert status == 400
    assert body["error"]["param"] == param and says in body["error"]["message"]


async def test_a_tool_word_outside_the_dictionary_does_not_deafen_the_endpoint(
    emulator: Emulator,
) -> None:
    """PR #5229's transfer_to_greeter, offered to the LLM: "greeter" is in no dictionary, and
    every later transcription answered 500."""
    greeter = {"type": "function", "function": {"name": "transfer_to_greeter"}}
    chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    status, _ = await _post(emulator, "/v1/chat/completions", {**chat, "tools": [greeter]})
    assert status == 200
    assert await _heard(emulator, "transfer to greeter") == "transfer to greeter"
    assert await _heard(emulator, "hello there") == "hello there"


async def test_a_recognizer_failure_fails_that_request_only(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken recognizer is that request's 500, in OpenAI's error shape naming the cause;
    the next request is heard by a fresh decoder."""
    import pocketsphinx

    from notebook_agents.speech import recognition

    def broken(**_: object) -> None:
        raise RuntimeError("acoustic model not found")

    monkeypatch.setattr(recognition, "_ears", recognition._Ears(2))
    with monkeypatch.context() as patch:
        patch.setattr(pocketsphinx, "Decoder", broken)
        status, body = await _post(emulator, TRANSCRIPTIONS, _wav_form("hello there"))
    assert status == 500
    assert body["error"]["type"] == "server_error"
    assert "acoustic model not found" in body["error"]["message"]
    status, body = await _post(emulator, TRANSCRIPTIONS, _wav_form("hello there"))
    assert (status, body) == (200, {"text": "hello there"})


def _wav_form(said: str, model: str = "gpt-4o-mini-transcribe") -> aiohttp.FormData:
    return _form(wav_bytes(synthesize(said), SAMPLE_RATE), model=model)


async def test_a_spoken_argument_reaches_the_tool_as_a_typed_one(emulator: Emulator) -> None:
    """Cascaded, with livekit's STT and LLM plugins: "lookup weather location Paris" calls
    lookup_weather(location="Paris"), as typing it would; it called it with location="".
    The city is a word the STT's prompt expects; the parameter's name, the LLM's tool."""

    @function_tool
    async def lookup_weather(location: str) -> str:
        """Look up the weather for a location.

        Args:
            location: The city to look up.
        """
        return f"It is sunny in {location}."

    async with openai.LLM(base_url=emulator.base_url(), api_key=API_KEY) as model:

        async def called(said: str) -> tuple[str, str]:
            context = llm.ChatContext()
            context.add_message(role="system", content="You are a weather agent.")
            context.add_message(role="user", content=said)
            async with model.chat(chat_ctx=context, tools=[lookup_weather]) as stream:
                calls = [c async for chunk in stream if chunk.delta for c in chunk.delta.tool_calls]
            (call,) = calls
            return call.name, call.arguments

        typed = await called("lookup weather location: Paris")
        async with openai.STT(
            base_url=emulator.base_url(), api_key=API_KEY, prompt="Weather in Paris or London."
        ) as ears:
            event = await ears.recognize(_frame("lookup weather location paris"))
        transcript = event.alternatives[0].text
        assert transcript == "lookup weather location: Paris"
        assert await called(transcript) == typed == ("lookup_weather", '{"location":"Paris"}')


async def test_a_wav_cut_short_mid_sample_is_heard_as_its_whole_samples(
    emulator: Emulator,
) -> None:
    """An odd number of data bytes (a recording cut off) was numpy's ValueError, a 500."""
    cut = wav_bytes(synthesize("hello there"), SAMPLE_RATE)[:-1]
    status, body = await _post(emulator, TRANSCRIPTIONS, _form(cut, model="whisper-1"))
    assert (status, body) == (200, {"text": "hello there"})
    status, body = await _post(emulator, TRANSCRIPTIONS, _form(cut[:44] + b"\0", model="whisper-1"))
    assert (status, body) == (200, {"text": ""})


async def test_a_long_spoken_turn_is_heard(emulator: Emulator) -> None:
    """A turn over ~21.8 s is over aiohttp's default 1 MiB body: the STT got a plain-text
    413. OpenAI takes files up to 25 MB."""
    long_turn = np.concatenate([synthesize("hello there"), np.zeros(30 * SAMPLE_RATE, np.int16)])
    async with openai.STT(base_url=emulator.base_url(), api_key=API_KEY) as ears:
        event = await ears.recognize(
            rtc.AudioFrame(long_turn.tobytes(), SAMPLE_RATE, 1, long_turn.size)
        )
    assert event.alternatives[0].text == "hello there"


async def test_a_body_over_the_limit_is_refused_in_openais_shape(emulator: Emulator) -> None:
    over = _form(b"RIFF" + bytes(26 * 1024 * 1024), model="whisper-1")
    status, body = await _post(emulator, TRANSCRIPTIONS, over)
    assert status == 413
    assert "25 MB" in body["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "status", "param", "says"),
    [
        (TRANSCRIPTIONS, lambda: _wav_form("hi", model="gpt-nope"), 404, "model", "gpt-nope"),
        (SPEECH, lambda: {"model": "tts-nope", "input": "hi", "voice": "ash"}, 404, "model", "tts"),
        (SPEECH, lambda: {"model": "tts-1", "input": "hi", "voice": "robot"}, 400, "voice", "ash"),
        (SPEECH, lambda: {"model": "tts-1", "input": "hi"}, 400, "voice", "voice"),
    ],
)
async def test_an_unknown_model_or_voice_is_refused_as_chat_refuses_a_model(
    emulator: Emulator,
    path: str,
    body: Callable[[], aiohttp.FormData | dict[str, Any]],
    status: int,
    param: str,
    says: str,
) -> None:
    answered, error = await _post(emulator, path, body())
    assert (answered, error["error"]["param"]) == (status, param)
    assert says in error["error"]["message"]
    if status == 404:
        assert error["error"]["code"] == "model_not_found"
        assert "models.add" in error["error"]["message"]  # the fix
