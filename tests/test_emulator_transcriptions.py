"""``POST /v1/audio/transcriptions``: livekit's real ``openai.STT`` plugin hears a caller
through the emulator, in the vocabulary of the tools its models were offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import numpy as np
import pytest
from livekit import rtc
from livekit.agents import NOT_GIVEN, NotGivenOr, stt
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes

from .conftest import API_KEY

TRANSCRIPTIONS = "/v1/audio/transcriptions"
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
        (lambda: _form(None, model="whisper-1"), "file", "provide a file"),
        (lambda: _form(wav_bytes(np.zeros(100, np.int16), 16_000)), "model", "model parameter"),
        (
            lambda: _form(
                wav_bytes(np.zeros(100, np.int16), 16_000), model="m", response_format="srt"
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
