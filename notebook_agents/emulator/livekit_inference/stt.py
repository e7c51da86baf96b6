"""LiveKit Inference speech to text (``/v1/stt?model=...``), heard offline by pocketsphinx (or
Whisper: the connection's ``hearing``).

What ``livekit.agents.inference.STT`` (livekit-agents 1.8.9 ``inference/stt.py``) sends:
``session.create`` (``_connect_ws``: ``settings.sample_rate`` as a string, ``settings.encoding``
``pcm_s16le``, ``settings.language``, ``settings.extra`` with the model's keyterms), then
``input_audio`` (base64 PCM16 mono at that rate, 50 ms a message: ``send_task``),
``session.update`` (keyterms, mid-stream), ``session.finalize`` (at the end of its input, and
from a client VAD) and ``session.close`` (``_run``'s ``finally``).

What it takes back (``recv_task``): ``session.created``; ``start_of_speech`` (its handler is the
same for every provider: onset, ahead of the first words); ``final_transcript`` (``transcript``,
``start`` and ``duration`` in seconds of the stream's audio, ``confidence``, ``language``);
``session.finalized``; ``session.closed``; ``error`` (``code``). The emulator finds turns by
loudness (``listening.ServerVad``, at its defaults), hears each when it ends (or at
``session.finalize``) as the nearest phrase of what the models on this emulator were offered
and the session's keyterms, and sends it as one ``final_transcript``; it sends no interim
transcripts (the client needs none: a final one starts and ends the user's speech). Silence
before where speech may begin is dropped, so an open microphone does not pile up.

Timing: a transcript leaves ``created_ms + first_token_ms`` after its turn ended (or the
recognizer's own time, if longer), then half a round trip on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from typing import Any

import numpy as np

from ...speech import RecognitionError, transcribe
from .._settings import EmulatorSettings
from ..latency import sleep_until
from ..listening import ServerVad
from ._socket import InferenceError, InferenceSocket, Message

ENCODINGS = ("pcm_s16le",)
"""what the client can ask for (its ``STTEncoding``)"""
KEYTERM_KEYS = ("keyterm", "keyterms_prompt", "additional_vocab", "keywords")
"""where each provider takes keyterms in ``extra`` (``_keyterms_key_for_model``)"""
TURN_DETECTION: dict[str, Any] = {}
"""the loudness VAD at its defaults: 500 ms of quiet ends a turn"""


class SttSession:
    """One ``/v1/stt`` websocket: its settings, the audio of the turn under way, its VAD."""

    def __init__(self, socket: InferenceSocket, settings: EmulatorSettings) -> None:
        self._socket = socket
        self._settings = settings
        self._rate = 0
        self._language = "en"
        self._keyterms: tuple[str, ...] = ()
        self._vad: ServerVad | None = None
        self._audio = np.zeros(0, np.int16)
        self._audio_start_ms = 0  # where ``_audio`` begins in the stream's audio

    async def handle(self, message: Message) -> None:
        kind = message["type"]
        if kind == "session.create":
            self._create(message)
        elif self._vad is None:
            raise InferenceError(f"{kind} before session.create: create the session first")
        elif kind == "input_audio":
            await self._listen(_pcm16(message.get("audio")))
        elif kind == "session.update":
            self._configure(message.get("settings") or {})
        elif kind == "session.finalize":
            if self._vad.end():
                await self._hear(self._vad.started_ms, self._heard_ms)
            self._socket.send({"type": "session.finalized"})
        elif kind == "session.close":
            self._socket.send({"type": "session.closed"})
            self._socket.close()
        else:
            raise InferenceError(f"unknown message type {kind!r}")

    def _create(self, message: Message) -> None:
        if self._vad is not None:
            raise InferenceError("session.create was already sent on this connection")
        settings = message.get("settings") or {}
        encoding = settings.get("encoding", "pcm_s16le")
        if encoding not in ENCODINGS:
            raise InferenceError(f"encoding {encoding!r} is not one of {', '.join(ENCODINGS)}")
        try:
            self._rate = int(settings.get("sample_rate", 16000))
        except (TypeError, ValueError):
            self._rate = 0
        if not 8000 <= self._rate <= 48000:
            raise InferenceError(
                f"sample_rate {settings.get('sample_rate')!r} is not a rate from 8000 to 48000"
            )
        self._configure(settings)
        self._vad = ServerVad(self._rate, TURN_DETECTION)
        self._socket.send({"type": "session.created", "session_id": self._socket.session_id})

    def _configure(self, settings: dict[str, Any]) -> None:
        self._language = str(settings.get("language") or self._language)
        extra = settings.get("extra") or {}
        if any(key in extra for key in KEYTERM_KEYS):
            self._keyterms = tuple(_keyterms(extra))

    @property
    def _heard_ms(self) -> int:
        return self._audio_start_ms + self._audio.size * 1000 // self._rate

    async def _listen(self, samples: np.ndarray) -> None:
        assert self._vad is not None
        vad = self._vad
        self._audio = np.concatenate([self._audio, samples])
        for heard in vad.feed(samples):
            if heard.kind == "started":
                self._socket.send({"type": "start_of_speech"})
            else:
                await self._hear(vad.started_ms, heard.ms)
        needed_ms = vad.needed_from_ms()
        if needed_ms is not None and needed_ms > self._audio_start_ms:
            self._audio = self._audio[(needed_ms - self._audio_start_ms) * self._rate // 1000 :]
            self._audio_start_ms = needed_ms

    async def _hear(self, start_ms: int, end_ms: int) -> None:
        """Transcribe the turn from ``start_ms`` to ``end_ms`` (less the VAD's prefix
        padding before it) and send it as a ``final_transcript``; a silent one is not sent."""
        ended = time.perf_counter()
        assert self._vad is not None
        start_ms = max(start_ms - self._vad.prefix_ms, self._audio_start_ms)
        turn = self._audio[
            (start_ms - self._audio_start_ms) * self._rate // 1000 : (end_ms - self._audio_start_ms)
            * self._rate
            // 1000
        ]
        vocabulary = self._settings.offered.vocabulary(keywords=self._keyterms)
        try:
            # the recognizer on a worker thread: the emulator's loop keeps serving meanwhile
            text = await asyncio.to_thread(
                transcribe, turn, self._rate, vocabulary, self._socket.log.hearing
            )
        except RecognitionError as e:
            raise InferenceError(f"The emulator's speech recognition failed: {e}", 500) from e
        latency = self._socket.latency
        await sleep_until(ended + (latency.created_ms + latency.first_token_ms) / 1000.0)
        if text:
            self._socket.send(
                {
                    "type": "final_transcript",
                    "transcript": text,
                    "start": start_ms / 1000.0,
                    "duration": (end_ms - start_ms) / 1000.0,
                    "confidence": 1.0,
                    "language": self._language,
                    "words": [],
                }
            )


def _pcm16(audio: object) -> np.ndarray:
    if not isinstance(audio, str):
        raise InferenceError("input_audio needs its audio: base64 PCM16 mono")
    try:
        data = base64.b64decode(audio, validate=True)
    except binascii.Error as e:
        raise InferenceError(f"input_audio's audio is not base64 ({e})") from None
    return np.frombuffer(data[: len(data) // 2 * 2], "<i2").astype(np.int16)


def _keyterms(extra: dict[str, Any]) -> list[str]:
    """The keyterms in ``extra``, under whichever provider's key (Speechmatics' are objects
    with a ``content``)."""
    terms: list[str] = []
    for key in KEYTERM_KEYS:
        value = extra.get(key)
        for term in value if isinstance(value, list) else [value] if value else []:
            content = term.get("content") if isinstance(term, dict) else term
            if isinstance(content, str) and content.strip():
                terms.append(content)
    return terms
