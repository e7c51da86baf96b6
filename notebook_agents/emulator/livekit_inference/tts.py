"""LiveKit Inference text to speech (``/v1/tts?model=...``), spoken offline by eSpeak NG.

What ``livekit.agents.inference.TTS`` (livekit-agents 1.8.9 ``inference/tts.py``) sends:
``session.create`` once per connection (``_connect_ws``: ``sample_rate`` as a string,
``encoding`` ``pcm_s16le``, ``voice``, ``model``, ``language``, ``extra``), then for each
synthesis ``input_transcript`` messages (a sentence each, ``transcript`` and its
``generation_config``) and a ``session.flush`` at its end (``_sentence_stream_task``). The
connection is pooled: the next synthesis reuses it.

What it takes back (``_recv_task``): ``session.created``; ``output_audio`` (base64 PCM16 mono at
the session's rate); ``done`` once a synthesis's audio is all sent; ``error``. Each message
carries the ``session_id`` (the client opens its segment with the first one it sees, on every
synthesis of a reused connection). Every voice is eSpeak's; no ``output_alignment`` is sent
(the client asks for it only with ``add_timestamps`` and the like, and falls back without).

Timing: a sentence's first audio leaves ``created_ms + first_token_ms`` after its text arrived,
each next chunk (``CHUNK_MS`` of audio) ``token_ms`` later, faster than it plays, as a
streaming TTS sends; then half a round trip on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import time

from ...speech import synthesize
from ..latency import sleep_until
from ._socket import InferenceError, InferenceSocket, Message

ENCODINGS = ("pcm_s16le",)
"""what the client can ask for (its ``TTSEncoding``)"""
CHUNK_MS = 100
"""the audio in one ``output_audio`` message"""


class TtsSession:
    """One ``/v1/tts`` websocket: its rate, and its syntheses one after another."""

    def __init__(self, socket: InferenceSocket) -> None:
        self._socket = socket
        self._rate = 0

    async def handle(self, message: Message) -> None:
        kind = message["type"]
        if kind == "session.create":
            self._create(message)
        elif not self._rate:
            raise InferenceError(f"{kind} before session.create: create the session first")
        elif kind == "input_transcript":
            await self._speak(message.get("transcript"))
        elif kind == "session.flush":
            self._send({"type": "done"})
        elif kind == "session.close":
            self._socket.close()
        else:
            raise InferenceError(f"unknown message type {kind!r}")

    def _create(self, message: Message) -> None:
        if self._rate:
            raise InferenceError("session.create was already sent on this connection")
        encoding = message.get("encoding", "pcm_s16le")
        if encoding not in ENCODINGS:
            raise InferenceError(f"encoding {encoding!r} is not one of {', '.join(ENCODINGS)}")
        try:
            rate = int(message.get("sample_rate", 24000))
        except (TypeError, ValueError):
            rate = 0
        if not 8000 <= rate <= 48000:
            raise InferenceError(
                f"sample_rate {message.get('sample_rate')!r} is not a rate from 8000 to 48000"
            )
        self._rate = rate
        self._send({"type": "session.created"})

    async def _speak(self, text: object) -> None:
        if not isinstance(text, str):
            raise InferenceError("input_transcript needs its transcript: the text to speak")
        arrived = time.perf_counter()
        if not text.strip():
            return
        # eSpeak on a worker thread: the emulator's loop keeps serving meanwhile
        samples = await asyncio.to_thread(synthesize, text, rate=self._rate)
        latency = self._socket.latency
        first = arrived + (latency.created_ms + latency.first_token_ms) / 1000.0
        chunk = self._rate * CHUNK_MS // 1000
        for index, start in enumerate(range(0, samples.size, chunk)):
            await sleep_until(first + index * latency.token_ms / 1000.0)
            audio = samples[start : start + chunk].tobytes()
            self._send({"type": "output_audio", "audio": base64.b64encode(audio).decode()})

    def _send(self, message: Message) -> None:
        self._socket.send({**message, "session_id": self._socket.session_id})
