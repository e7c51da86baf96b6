"""Speech to text (``POST /v1/audio/transcriptions``), heard offline: by pocketsphinx in a
grammar, or as free speech by Whisper (the connection's ``hearing``).

What ``livekit.plugins.openai.STT`` sends, as a multipart form: ``file`` (a WAV of the user's
turn), ``model``, ``language``, ``prompt``, ``keywords`` and ``response_format`` (``json``, or
``verbose_json`` for ``whisper-1``). The emulator hears the caller (``hearing="grammar"``, the
default) as the nearest phrase of a grammar of what the models on this emulator were offered
(a cascaded session's LLM requests name its tools and instructions; the STT request does not),
the request's ``keywords`` and the words of its ``prompt`` (``vocabulary.py``); with
``hearing="whisper"`` as free speech, those words its prompt. Files are PCM16 WAV; other
encodings are refused as OpenAI refuses a file it cannot decode; one cut short mid-sample is
read as its whole samples, as a decoder reads a truncated stream. A file over OpenAI's 25 MB,
or a body over it and the form around it, is refused with OpenAI's 413. A failure of the
recognizer fails that request only, with a 500 naming the cause.

Timing: the text leaves ``LatencyModel.http_first_byte_s`` after the request arrived, as a chat
completion's first byte would, or once the recognizer is done if it took longer (its time is
real, and shows in the turn's phases); an error costs the round trip (and connect) only.
"""

from __future__ import annotations

import asyncio
import uuid
import wave
from dataclasses import dataclass

import numpy as np
from aiohttp import web

from ..speech import RecognitionError, transcribe
from ..speech.wav import wav_samples
from ._http import MAX_BODY_BYTES, open_request
from ._settings import SETTINGS_KEY
from .errors import ServiceError
from .latency import sleep_until
from .models import ModelCatalog

TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
RESPONSE_FORMATS = ("json", "verbose_json", "text")
MAX_FILE_BYTES = 25 * 1024 * 1024
"""the largest file OpenAI's transcription endpoint takes (its reference: "File uploads are
currently limited to 25 MB")"""


@dataclass(frozen=True)
class _TranscriptionRequest:
    samples: np.ndarray
    rate: int
    language: str
    prompt: str
    keywords: tuple[str, ...]
    response_format: str


async def audio_transcriptions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/audio/transcriptions``; the query string holds latency and fault parameters."""
    settings = request.app[SETTINGS_KEY]
    try:
        log, clock = open_request(
            request, "transcriptions", TRANSCRIPTIONS_PATH, "audio.transcriptions"
        )
    except ServiceError as e:
        return e.response()
    try:
        asked = await _parse(request, settings.models)
    except ServiceError as reject:
        log.record("out", "error")
        await sleep_until(clock.error())
        return reject.response()
    heard_in = settings.offered.vocabulary([asked.prompt], keywords=asked.keywords)
    try:
        # the recognizer runs on a worker thread: the emulator's loop keeps serving meanwhile
        text = await asyncio.to_thread(transcribe, asked.samples, asked.rate, heard_in, log.hearing)
    except RecognitionError as e:
        log.record("out", "error")
        await sleep_until(clock.error())
        return ServiceError(
            f"The emulator's speech recognition failed on this request: {e}",
            status=500,
            type="server_error",
        ).response()
    await sleep_until(clock.first_byte())
    log.record("out", "audio.transcriptions")
    headers = {"x-request-id": f"req_{uuid.uuid4().hex}"}
    if asked.response_format == "text":
        return web.Response(text=text, content_type="text/plain", headers=headers)
    body: dict[str, object] = {"text": text}
    if asked.response_format == "verbose_json":
        duration = asked.samples.size / asked.rate
        body = {"task": "transcribe", "language": asked.language, "duration": duration, **body}
    return web.json_response(body, headers=headers)


async def _parse(request: web.Request, models: ModelCatalog) -> _TranscriptionRequest:
    """The form's fields, checked as OpenAI checks them."""
    try:
        form = await request.post()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(f"the request's body is over {MAX_BODY_BYTES} bytes") from None
    model, upload = form.get("model"), form.get("file")
    if not isinstance(model, str) or not model:
        raise ServiceError("You must provide a model parameter.", param="model")
    if not models.knows(model, kind="transcription"):
        raise models.refusal(model, "transcription")
    if not isinstance(upload, web.FileField):
        raise ServiceError("You must provide a file: the audio to transcribe.", param="file")
    data = upload.file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise _too_large(f"the file is over {MAX_FILE_BYTES} bytes")
    try:
        samples, rate = wav_samples(data)
    except (wave.Error, EOFError) as e:
        raise ServiceError(
            f"Audio file might be corrupted or unsupported (the emulator reads PCM16 WAV: {e}).",
            code="invalid_value",
            param="file",
        ) from None
    response_format = form.get("response_format") or "json"
    if response_format not in RESPONSE_FORMATS:
        raise ServiceError(
            f"response_format {response_format!r} is not emulated; use one of "
            f"{', '.join(RESPONSE_FORMATS)}.",
            param="response_format",
        )
    keywords = [str(k) for field in ("keywords", "keywords[]") for k in form.getall(field, [])]
    return _TranscriptionRequest(
        samples=samples,
        rate=rate,
        language=str(form.get("language") or "english"),
        prompt=str(form.get("prompt") or ""),
        keywords=tuple(keywords),
        response_format=str(response_format),
    )


def _too_large(what: str) -> ServiceError:
    """OpenAI's refusal of a file over its limit (``what`` says what was too large)."""
    return ServiceError(
        f"Maximum content size limit ({MAX_FILE_BYTES}) exceeded ({what}). Send at most 25 MB "
        "of audio (about 13 minutes of 16 kHz PCM16); split a longer recording.",
        status=413,
    )
