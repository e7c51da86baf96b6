"""Text to speech (``POST /v1/audio/speech``), spoken offline by eSpeak NG.

What ``livekit.plugins.openai.TTS`` sends: ``model``, ``input``, ``voice``, ``response_format``
(``mp3`` unless set), ``speed`` and ``stream_format`` (``sse`` for the newer models). Like an
OpenAI-compatible server, the emulator answers with the audio bytes at once, not an SSE
stream, and says in ``Content-Type`` what it sent: a WAV file for ``wav``, else PCM16 mono
24 kHz (it encodes no mp3, opus, aac or flac; the plugin decodes what the header names, and
raw PCM needs no decoder at all). The voice is eSpeak's whichever built-in ``voice`` is asked
for; an unknown model or voice is refused, as the chat and realtime endpoints refuse theirs.

Timing: the audio leaves ``LatencyModel.http_first_byte_s`` after the request arrived (connect
round trips on a new TCP connection, the round trip, ``created_ms``, ``first_token_ms``); an
error costs the round trip (and connect) only.
"""

from __future__ import annotations

import asyncio
import uuid

from aiohttp import web

from ..speech import SAMPLE_RATE, synthesize
from ..speech.wav import wav_bytes
from ._http import open_request, read_json
from ._settings import SETTINGS_KEY, EmulatorSettings
from .errors import ServiceError
from .latency import sleep_until
from .models import SPEECH_VOICES

SPEECH_PATH = "/v1/audio/speech"
RESPONSE_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MAX_INPUT_CHARS = 4096
"""the longest ``input`` OpenAI's speech endpoint takes"""
WORDS_PER_MINUTE = 175
"""eSpeak's pace at ``speed`` 1.0"""


async def audio_speech(request: web.Request) -> web.StreamResponse:
    """``POST /v1/audio/speech``; the query string holds latency and fault parameters."""
    try:
        log, clock = open_request(request, "speech", SPEECH_PATH, "audio.speech")
    except ServiceError as e:
        return e.response()
    try:
        text, response_format, speed = _parse(await read_json(request), request.app[SETTINGS_KEY])
    except ServiceError as reject:
        log.record("out", "error")
        await sleep_until(clock.error())
        return reject.response()
    # eSpeak runs on a worker thread: the emulator's loop keeps serving meanwhile
    samples = await asyncio.to_thread(
        synthesize, text, words_per_minute=round(WORDS_PER_MINUTE * speed)
    )
    await sleep_until(clock.first_byte())
    log.record("out", "audio.speech")
    # as OpenAI's: the client files its request under it (livekit's TTS warns without one)
    headers = {"x-request-id": f"req_{uuid.uuid4().hex}"}
    if response_format == "pcm":
        return web.Response(body=samples.tobytes(), content_type="audio/pcm", headers=headers)
    return web.Response(
        body=wav_bytes(samples, SAMPLE_RATE), content_type="audio/wav", headers=headers
    )


def _parse(body: dict[str, object], settings: EmulatorSettings) -> tuple[str, str, float]:
    """``input``, ``response_format`` and ``speed``, checked as OpenAI checks them (and the
    model and voice, as the chat and realtime endpoints check theirs)."""
    model, text, voice = body.get("model"), body.get("input"), body.get("voice")
    if not isinstance(model, str) or not model:
        raise ServiceError("You must provide a model parameter.", param="model")
    if not settings.models.knows(model, kind="speech"):
        raise settings.models.refusal(model, "speech")
    if not isinstance(text, str) or not text.strip():
        raise ServiceError("input must be a non-empty string: the text to speak.", param="input")
    if len(text) > MAX_INPUT_CHARS:
        raise ServiceError(
            f"input is {len(text)} characters long; at most {MAX_INPUT_CHARS} are allowed.",
            param="input",
        )
    response_format = body.get("response_format") or "mp3"
    if response_format not in RESPONSE_FORMATS:
        raise ServiceError(
            f"response_format {response_format!r} is not one of {', '.join(RESPONSE_FORMATS)}.",
            param="response_format",
        )
    speed = body.get("speed", 1.0)
    if (
        not isinstance(speed, int | float)
        or isinstance(speed, bool)
        or not 0.25 <= float(speed) <= 4.0
    ):
        raise ServiceError(f"speed must be between 0.25 and 4.0, not {speed!r}.", param="speed")
    if voice is None:
        raise ServiceError("Missing required parameter: 'voice'.", param="voice")
    if voice not in SPEECH_VOICES:
        raise ServiceError(
            f"Invalid value for 'voice': {voice!r}. Use one of the built-in voices: "
            f"{', '.join(SPEECH_VOICES)} (custom voices are not emulated; every voice is "
            "eSpeak's).",
            code="invalid_value",
            param="voice",
        )
    return text, str(response_format), float(speed)
