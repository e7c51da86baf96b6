"""A session's input audio: the buffer the client appends PCM16 to, heard by server VAD and
the recognizer.

Appended audio goes through a loudness VAD (``listening.ServerVad``) when the session has
turn detection (``semantic_vad`` is heard as server VAD): speech_started (a barge-in cancels
the running response, ``turn_detected``), speech_stopped, then the turn is committed and
added without words, heard in the words of the session's tools (the connection's ``hearing``:
pocketsphinx's grammar of them, or Whisper prompted with them), and its
transcript sent (``input_audio_transcription.completed`` if asked, and
``conversation.item.done``); the connection answers the transcript as the caller's text (a
turn the recognizer fails on is not answered: its error is sent instead). Silence before the
prefix padding of where speech may begin is dropped: an open microphone does not pile up.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from ...speech import Vocabulary, transcribe
from ..conversation import new_id, public
from ..errors import ServiceError
from ..listening import ServerVad
from ..vocabulary import vocabulary
from .session import SAMPLE_RATE

if TYPE_CHECKING:
    from .connection import RealtimeConnection

logger = logging.getLogger(__name__)


class AudioInput:
    """The input audio buffer of one connection, and the turns heard in it."""

    def __init__(self, connection: RealtimeConnection) -> None:
        self._conn = connection
        self._audio = bytearray()
        self._audio_start_ms = 0  # where the buffer begins in the session's input audio
        self._vad: ServerVad | None = None
        self._speech_item_id = ""

    @property
    def buffered_ms(self) -> int:
        """How much input audio the buffer holds."""
        return _ms(len(self._audio))

    async def append(self, audio: str, event_id: str | None) -> None:
        """``input_audio_buffer.append``: buffered, and heard when the session detects turns."""
        chunk = _pcm16(audio, event_id)
        self._audio.extend(chunk)
        await self._listen(np.frombuffer(chunk, "<i2"))

    async def commit(self, event_id: str | None) -> None:
        """``input_audio_buffer.commit``: the whole buffer becomes a turn."""
        await self._commit_audio(event_id, len(self._audio))

    def clear(self) -> None:
        """``input_audio_buffer.clear``."""
        self._audio_start_ms += _ms(len(self._audio))
        self._audio.clear()
        self._conn.send({"type": "input_audio_buffer.cleared"})

    def turn_detection_changed(self) -> None:
        """The session was updated: heard with its new turn detection from the next turn on
        (a turn being spoken finishes as it began)."""
        if self._vad is not None and not self._vad.speaking:
            self._vad = None

    def _vocabulary(self) -> Vocabulary:
        """What a caller of this session may say: the words of its instructions and tools,
        and those its transcription expects (``prompt``, ``keywords``); a transcription
        session's, those of what the emulator's models were offered (``/audio/transcriptions``
        listens in the same)."""
        transcription = self._conn.session["audio"]["input"].get("transcription") or {}
        if self._conn.transcription:  # a cascaded session's STT: it hears what its LLM was offered
            return self._conn.settings.offered.vocabulary(
                [str(transcription.get("prompt") or "")],
                keywords=[str(k) for k in transcription.get("keywords") or []],
            )
        return vocabulary(
            self._conn.session.get("instructions") or "",
            self._conn.function_tools(),
            [str(transcription.get("prompt") or "")],
            keywords=[str(k) for k in transcription.get("keywords") or []],
        )

    async def _listen(self, samples: np.ndarray) -> None:
        """Server VAD: speech started (a barge-in cancels the response), speech stopped (the
        turn is committed, heard, and answered)."""
        turn = self._conn.session["audio"]["input"].get("turn_detection")
        if not turn:
            return
        if self._vad is None:
            fed_ms = self._audio_start_ms + _ms(len(self._audio) - samples.nbytes)
            self._vad = ServerVad(SAMPLE_RATE, turn, fed_ms)
        vad = self._vad
        for heard in vad.feed(samples):
            if heard.kind == "started":
                self._speech_item_id = new_id("item_")
                started = max(heard.ms - vad.prefix_ms, self._audio_start_ms)
                self._conn.send(
                    {
                        "type": "input_audio_buffer.speech_started",
                        "audio_start_ms": started,
                        "item_id": self._speech_item_id,
                    }
                )
                if turn.get("interrupt_response", True):
                    self._conn.interrupt_response()
            else:
                self._conn.send(
                    {
                        "type": "input_audio_buffer.speech_stopped",
                        "audio_end_ms": heard.ms,
                        "item_id": self._speech_item_id,
                    }
                )
                spoken = (heard.ms - self._audio_start_ms) * SAMPLE_RATE * 2 // 1000
                understood = await self._commit_audio(None, spoken, self._speech_item_id)
                if understood and turn.get("create_response", True):
                    self._conn.answer_turn()
        self._forget_silence(vad)

    def _forget_silence(self, vad: ServerVad) -> None:
        """Drop the input audio no turn will hold: an open microphone's silence would
        otherwise pile up (48 kB a second) for as long as the call lasts."""
        needed_ms = vad.needed_from_ms()
        if needed_ms is None or needed_ms <= self._audio_start_ms:
            return
        del self._audio[: (needed_ms - self._audio_start_ms) * SAMPLE_RATE * 2 // 1000]
        self._audio_start_ms = needed_ms

    async def _commit_audio(
        self, event_id: str | None, size: int, item_id: str | None = None
    ) -> bool:
        """The first ``size`` bytes of the input buffer become a user item, then are heard
        (False: the recognizer failed on them, which was answered as their error).

        As the service does, the item is committed and added at once with no transcript (the
        transcription runs after the commit); the transcript follows in
        ``input_audio_transcription.completed`` (when the session asks for it) and in
        ``conversation.item.done``. The plugin appends every transcript it is told to its
        copy of the item, so a transcript in ``added`` would reach its context twice.
        """
        duration_ms = _ms(size)
        if duration_ms < 100:
            raise ServiceError(
                "Error committing input audio buffer: buffer too small. Expected at least "
                f"100ms of audio, but buffer only has {duration_ms}ms of audio.",
                code="input_audio_buffer_commit_empty",
                event_id=event_id,
            )
        audio = np.frombuffer(bytes(self._audio[:size]), "<i2")
        del self._audio[:size]
        self._audio_start_ms += duration_ms
        previous = self._conn.conversation.last_id()
        part: dict[str, Any] = {"type": "input_audio", "transcript": None}
        item: dict[str, Any] = {"type": "message", "role": "user", "content": [part]}
        if item_id is not None:
            item["id"] = item_id
        stored = self._conn.conversation.insert(item)
        part = stored["content"][0]
        self._conn.send(
            {
                "type": "input_audio_buffer.committed",
                "item_id": stored["id"],
                "previous_item_id": previous,
            }
        )
        # the beta protocol's name for a new item (conversation.item.created) is GA's added
        added = (
            "conversation.item.created" if self._conn.transcription else "conversation.item.added"
        )
        self._conn.ack(
            {"type": added, "item": public(stored), "previous_item_id": previous},
            stored["type"],
        )
        # the recognizer on a worker thread: the emulator's loop keeps serving meanwhile
        try:
            transcript = await asyncio.to_thread(
                transcribe, audio, SAMPLE_RATE, self._vocabulary(), self._conn.hearing
            )
        except Exception as e:
            self._not_heard(stored, previous, e, event_id)
            return False
        if self._conn.session["audio"]["input"].get("transcription"):
            part["transcript"] = transcript
            self._conn.send(
                {
                    "type": "conversation.item.input_audio_transcription.completed",
                    "item_id": stored["id"],
                    "content_index": 0,
                    "transcript": transcript,
                    "usage": {"type": "duration", "seconds": duration_ms / 1000.0},
                }
            )
        else:
            # the model hears the words even when nobody asked for them written down
            part["_heard"] = transcript
        self._item_done(stored, previous)
        return True

    def _item_done(self, stored: dict[str, Any], previous: str | None) -> None:
        if self._conn.transcription:  # the beta protocol has no conversation.item.done
            return
        # held back with its item's added event by ack_delay_ms, so it never overtakes it
        done = {"type": "conversation.item.done", "item": public(stored)}
        self._conn.ack({**done, "previous_item_id": previous}, stored["type"])

    def _not_heard(
        self,
        stored: dict[str, Any],
        previous: str | None,
        failure: Exception,
        event_id: str | None,
    ) -> None:
        """The recognizer failed on a committed turn: the turn stays, without words, and the
        failure is its error (the service's event for a failed transcription, if one was
        asked for, and an ``error``); it is not answered, and the next turn is heard anew."""
        logger.warning("speech recognition failed on %s", stored["id"], exc_info=failure)
        cause = f"{type(failure).__name__}: {failure}"
        if self._conn.session["audio"]["input"].get("transcription"):
            self._conn.send(
                {
                    "type": "conversation.item.input_audio_transcription.failed",
                    "item_id": stored["id"],
                    "content_index": 0,
                    "error": {
                        "type": "server_error",
                        "code": "transcription_failed",
                        "message": cause,
                        "param": None,
                    },
                }
            )
        self._item_done(stored, previous)
        self._conn.send(
            ServiceError(
                f"The emulator's speech recognizer failed on the turn {stored['id']} ({cause}): "
                "it was not heard or answered. Later turns are heard as usual; the emulator's "
                "log has the traceback.",
                type="server_error",
                code="transcription_failed",
                event_id=event_id,
            ).to_event()
        )


def _pcm16(audio: str, event_id: str | None) -> bytes:
    """An append's audio, or the error the service answers an invalid client event with.

    OpenAI's reference (``input_audio_buffer.append``): "Base64-encoded audio bytes. This
    must be in the format specified by the input_audio_format field in the session
    configuration", here PCM16 mono 24 kHz: whole 2-byte samples.
    """
    fix = "Send base64-encoded PCM16 audio: 16-bit little-endian mono samples at 24 kHz."
    try:
        chunk = base64.b64decode(audio, validate=True)
    except binascii.Error as e:
        raise ServiceError(
            f"Invalid 'audio': it is not base64 ({e}). {fix}",
            code="invalid_value",
            param="audio",
            event_id=event_id,
        ) from None
    if len(chunk) % 2:
        raise ServiceError(
            f"Invalid 'audio': {len(chunk)} bytes is not a whole number of PCM16 samples "
            f"(2 bytes each). {fix}",
            code="invalid_value",
            param="audio",
            event_id=event_id,
        )
    return chunk


def _ms(size: int) -> int:
    """Milliseconds of PCM16 mono 24 kHz audio in ``size`` bytes."""
    return size * 1000 // (SAMPLE_RATE * 2)
