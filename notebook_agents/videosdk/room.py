"""The offline stand-in for a VideoSDK room: the caller hears the agent and speaks to it.

A VideoSDK room is the boundary (no SFU offline), so ``OfflineRoom`` plays the part of the
room and of the one participant in it, the notebook's user, with no sockets of its own
(videosdk's websocket/WebRTC transports listen on every interface). ``connect()`` makes the
agent's audio track, videosdk's own ``CustomAudioStreamTrack``, and a speaker task reads it
with ``recv()`` as a participant's client would: that ``recv`` paces itself in real time, and
the agent leaves "speaking" only once its audio has been read out. What the agent played is
kept, with when each stretch of it began and ended on the trace's clock (``time.perf_counter``).
``speak()`` is the caller's microphone: it feeds the pipeline 20 ms frames at real-time pace as
a VideoSDK room delivers them (Opus decoded: 48 kHz, s16 stereo, the browser's mono in both
channels), the format declared to videosdk's ``audio_format`` as its input stream does, then
silence so the speech recognizer hears the speech end.

Facts, measured (videosdk-agents 1.0.30, videosdk-plugins-openai 1.0.30, the emulator on
loopback, ``Pipeline(stt=OpenAISTT(), llm=OpenAILLM(), tts=OpenAITTS())`` with no arguments):

- No VAD is needed (videosdk-plugins-silero is not installed): ``OpenAISTT()`` streams to
  ``{base_url}/realtime?intent=transcription`` in the beta protocol, and its session's server
  VAD (``silence_duration_ms`` 500) ends the turn; the final transcript starts the reply.
  Without a VAD the user's state never becomes "speaking" (only "listening"/"idle" around the
  agent's reply) and the agent goes idle -> thinking -> speaking -> idle.
- The emulator served that session once it spoke the beta transcription protocol
  (``emulator/openai_realtime/``); before, it refused the socket (no ``?model=``).
- The agent reaches "idle" ~0.2 s after its audio ends (the track's grace period), because
  this room reads the track; nothing else in the session does.
- "what is two plus three" (1.2 s of eSpeak): end of the voice to the transcript 1.28-1.53 s
  (0.5 s of it the STT's VAD silence, ~0.3 s pocketsphinx), transcript to "speaking"
  50-220 ms, end of the voice to the agent's first audio 1.34-1.63 s (6 runs, 2 loaded cores).
  ``OpenAISTT(enable_streaming=False)`` works too (its own loudness VAD, 0.8 s of silence,
  then a WAV to ``/audio/transcriptions``): 1.68 s to the first audio.
- The first turn is heard in the emulator's general vocabulary: the STT names no words and
  the LLM has been offered none yet; later turns also in the words of what it was offered.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from videosdk.agents import CustomAudioStreamTrack, audio_format
from videosdk.agents.room.output_stream import MediaStreamError
from videosdk.agents.transports.base import BaseTransportHandler

from ..runner._samples import checked_rate
from ..runner.errors import AudioError, RunnerError
from ..speech.resampling import resample

ROOM_RATE = 48_000
"""what a VideoSDK room delivers: Opus decodes to 48 kHz"""
ROOM_CHANNELS = 2
"""... in s16 stereo; the SDK's browser client puts its mono capture in both channels"""
FRAME_S = 0.02
TRAILING_SILENCE_S = 1.0
"""silence after a spoken turn: the STT's server VAD ends speech after 0.5 s of it (the
plugin's default ``silence_duration_ms``), with room for a loaded machine"""
GAP_S = 0.5
"""silence this long ends a stretch of the agent's audio (shorter is a pause in speech)"""
CALLER_ID = "notebook-user"
"""the participant id of the caller, the notebook's user"""

_FRAME_SAMPLES = int(ROOM_RATE * FRAME_S)


@dataclass
class Stretch:
    """A stretch of the agent's audio with no gap of ``GAP_S``: when it began and ended (the
    end of its last non-silent frame, ``time.perf_counter()`` seconds) and its samples."""

    began: float
    ended: float
    samples: list[np.ndarray] = field(default_factory=list, repr=False)

    @property
    def pcm(self) -> np.ndarray:
        """Its int16 mono samples at the track's rate, silent frames within it included."""
        return np.concatenate(self.samples) if self.samples else np.zeros(0, np.int16)


class OfflineRoom(BaseTransportHandler):
    """A VideoSDK room offline: the agent's track is read in real time by a speaker task,
    and ``speak`` is the caller's microphone. ``disconnect``/``cleanup``/``leave`` stop it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pipeline: Any = None) -> None:
        super().__init__(loop, pipeline)
        self.rate = 0
        """the agent track's sample rate, once connected"""
        self.played: list[Stretch] = []
        """the stretches of audio the agent played, the last maybe still playing"""
        self._speaker: asyncio.Task[None] | None = None
        self._played_changed = asyncio.Event()
        self._quiet_s = 0.0  # silence since the last stretch's last non-silent frame
        self._left = False
        self.unspoken_s = 0.0
        """seconds of the caller's audio (``speak``) not delivered yet, its silence after left
        out"""

    async def connect(self) -> None:
        """Make the agent's audio track and start reading it, as the caller's client would."""
        if self._speaker is not None:
            return
        track = CustomAudioStreamTrack(self.loop)
        self.audio_track, self.rate = track, track.sample_rate
        # what a VideoSDK room says of its codec before any audio arrives (room.py's hint)
        audio_format.hint(ROOM_RATE, ROOM_CHANNELS, why="notebook-agents offline room")
        self._speaker = self.loop.create_task(self._listen(track), name="offline-room-speaker")

    async def wait_for_participant(self, participant_id: str | None = None) -> str:
        """The notebook's user is in the room from the start."""
        return participant_id or CALLER_ID

    async def publish_to_pubsub(self, pubsub_config: Any) -> None:
        """No one subscribes offline."""

    async def disconnect(self) -> None:
        """Stop the speaker and end the agent's track."""
        speaker, self._speaker = self._speaker, None
        if self.audio_track is not None:
            self.audio_track.stop()
        if speaker is not None:
            speaker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await speaker
        self._played_changed.set()

    async def leave(self) -> None:
        """What the job calls when the session ends: disconnect."""
        self._left = True
        await self.disconnect()

    async def cleanup(self) -> None:
        await self.disconnect()

    @property
    def pcm(self) -> np.ndarray:
        """All the agent played, stretch after stretch (the silences between left out)."""
        return np.concatenate([s.pcm for s in self.played] or [np.zeros(0, np.int16)])

    async def stretch_played(self, index: int) -> Stretch:
        """The ``index``-th stretch of the agent's audio, once it has ended (a gap of
        ``GAP_S`` followed it, or the room was disconnected)."""
        while not (len(self.played) > index + 1 or self._done(index)):
            self._played_changed.clear()
            await self._played_changed.wait()
        if len(self.played) <= index:
            raise RunnerError(f"the room was disconnected before the agent's stretch {index}")
        return self.played[index]

    def _done(self, index: int) -> bool:
        if self._speaker is None:
            return True
        return len(self.played) == index + 1 and self._quiet_s >= GAP_S

    async def speak(self, pcm: bytes, sample_rate: int) -> None:
        """The caller says ``pcm`` (int16 mono at ``sample_rate``): 20 ms frames reach the
        pipeline as a VideoSDK room delivers them, at real-time pace, then silence."""
        if self.pipeline is None:
            raise RunnerError(
                "the room has no pipeline to speak to: create the AgentSession's Pipeline "
                "(it attaches itself to the job's room) before speak()"
            )
        rate = checked_rate(sample_rate, of="sample_rate")
        if len(pcm) % 2:
            raise AudioError(
                f"{len(pcm)} bytes is not whole int16 samples: pass PCM16 mono bytes, e.g. "
                "synthesize(text).tobytes()"
            )
        voice = resample(np.frombuffer(pcm, np.int16), rate, ROOM_RATE)
        silence = np.zeros(int(ROOM_RATE * TRAILING_SILENCE_S), np.int16)
        audio = np.concatenate([voice, silence, np.zeros(-voice.size % _FRAME_SAMPLES, np.int16)])
        due = time.perf_counter()
        self.unspoken_s = voice.size / ROOM_RATE
        for mono in audio.reshape(-1, _FRAME_SAMPLES):
            self.unspoken_s = max(self.unspoken_s - FRAME_S, 0.0)
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            due = max(due, time.perf_counter() - 10 * FRAME_S) + FRAME_S
            frame = np.repeat(mono, ROOM_CHANNELS).tobytes()  # interleaved, both channels
            # what videosdk's input stream does with each frame it receives
            audio_format.publish(ROOM_RATE, ROOM_CHANNELS, samples=mono.size, nbytes=len(frame))
            audio_format.observe_buffer(len(frame))
            await self.pipeline.on_audio_delta(frame)

    async def _listen(self, track: CustomAudioStreamTrack) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:  # the track was stopped
                return
            if frame is None:  # recv logged its own failure; the next frame is paced anew
                continue
            now = time.perf_counter()
            samples = frame.to_ndarray().reshape(-1).astype(np.int16, copy=False)
            self._heard(samples, now, samples.size / self.rate)

    def _heard(self, samples: np.ndarray, at: float, seconds: float) -> None:
        last = self.played[-1] if self.played else None
        open_stretch = last is not None and self._quiet_s < GAP_S
        if samples.any():
            if last is None or not open_stretch:
                last = Stretch(began=at, ended=at)
                self.played.append(last)
            last.samples.append(samples.copy())
            last.ended, self._quiet_s = at + seconds, 0.0
        elif open_stretch:
            assert last is not None
            last.samples.append(samples.copy())
            self._quiet_s += seconds
            if self._quiet_s < GAP_S:
                return
            # the gap's silence is not the stretch's
            del last.samples[-round(self._quiet_s / seconds) :]
        else:
            return
        self._played_changed.set()
