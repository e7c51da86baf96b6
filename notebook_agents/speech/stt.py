"""Local ears for any session: Whisper (``whisper.py``) as a livekit STT, so an agent hears free
speech with no emulator and no service, in a notebook or in a real room.

Non-streaming, as Whisper is (it hears a whole utterance): livekit finds the utterances with a
VAD. An ``AgentSession`` given a VAD wraps it itself; elsewhere, wrap it as livekit intends::

    from livekit.agents import stt
    from livekit.plugins import silero

    ears = stt.StreamAdapter(stt=LocalWhisperSTT(), vad=silero.VAD.load())
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Literal

import numpy as np
from livekit import rtc
from livekit.agents import NOT_GIVEN, APIConnectOptions, NotGivenOr, stt
from livekit.agents.language import LanguageCode
from livekit.agents.utils import AudioBuffer

from .grammar import Vocabulary
from .recognition import transcribe
from .whisper import require_whisper


class LocalWhisperSTT(stt.STT[Literal["metrics_collected", "error"]]):
    """Whisper tiny.en on this machine's CPU as a livekit STT (the ``whisper`` extra; without
    it, making one raises ``MissingExtraError`` naming the install).

    ``prompt``: words the caller is likely to say (names, tools, the agent's instructions),
    given to Whisper as its ``initial_prompt``; it hears them more surely.
    """

    def __init__(self, *, prompt: str = "") -> None:
        require_whisper()
        super().__init__(
            capabilities=stt.STTCapabilities(
                streaming=False, interim_results=False, offline_recognize=True
            )
        )
        self._words = Vocabulary(texts=(prompt,) if prompt else ())

    @property
    def model(self) -> str:
        return "whisper-tiny.en"

    @property
    def provider(self) -> str:
        return "faster-whisper (local)"

    async def _recognize_impl(
        self,
        buffer: AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer)
        channels = np.frombuffer(frame.data, np.int16).reshape(-1, frame.num_channels)
        samples = channels.mean(axis=1).astype(np.int16)  # mono: the channels mixed
        # Whisper on a worker thread: the session's loop keeps its audio and timers running
        text = await asyncio.to_thread(
            transcribe, samples, frame.sample_rate, self._words, hearing="whisper"
        )
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            request_id=uuid.uuid4().hex,
            alternatives=[stt.SpeechData(language=LanguageCode("en"), text=text)],
        )
