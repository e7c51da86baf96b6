"""The agent's voice, offline: a speaker that plays in real time and keeps what was played.

An offline session has no room to publish audio to. With ``NotebookRunner(audio=True)`` the
runner gives the session this output instead (livekit's public ``io.AudioOutput``): each reply
"plays" at real-time pace from its first frame, so livekit's turn-taking, interruptions and
transcript sync see a speaker, and the samples heard are kept in ``Recording`` to play back in
the notebook.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from livekit import rtc
from livekit.agents.voice import io

from ..speech.wav import wav_bytes

SAMPLE_RATE = 24_000
"""the rate the speaker asks livekit for (livekit resamples a TTS's output to it)"""


@dataclass
class Playout:
    """One reply on the speaker: when it began, when it stopped short, how much of it played
    (``time.perf_counter()`` times)."""

    began: float
    stops: list[float] = field(default_factory=list)
    """each time it stopped short while playing: paused (a possible false interruption) or
    cut"""
    played: float | None = None
    """seconds of it played, once it has ended"""


@dataclass
class Recording:
    """What the agent said aloud, reply by reply: int16 mono samples at ``rate``."""

    rate: int = SAMPLE_RATE
    replies: list[np.ndarray] = field(default_factory=list)
    """each reply as heard: cut where it was interrupted"""

    @property
    def samples(self) -> np.ndarray:
        """Every reply, one after the other."""
        return np.concatenate(self.replies) if self.replies else np.zeros(0, np.int16)

    @property
    def seconds(self) -> float:
        return self.samples.size / self.rate

    def _repr_html_(self) -> str:
        """An audio player in the notebook."""
        if not self.replies:
            return "<em>the agent has said nothing aloud yet</em>"
        data = base64.b64encode(wav_bytes(self.samples, self.rate)).decode()
        return f'<audio controls src="data:audio/wav;base64,{data}"></audio>'


class RealTimeSpeaker(io.AudioOutput):
    """Plays each reply in real time from its first frame; keeps the samples heard."""

    def __init__(self, recording: Recording) -> None:
        super().__init__(
            label="notebook speaker",
            # pausable: livekit pauses on what may be a false interruption, resumes if it was
            capabilities=io.AudioOutputCapabilities(pause=True),
            sample_rate=SAMPLE_RATE,
        )
        self.recording = recording
        self._frames: list[np.ndarray] = []
        self._pushed = 0.0  # seconds of the reply so far
        self._began = 0.0  # time.perf_counter() of its first frame
        self.playing: Playout | None = None
        """the reply playing now, from its first frame to its end"""
        self._interrupted = False
        self._paused_at: float | None = None
        self._paused_for = 0.0  # seconds the reply playing now spent paused
        self._changed = asyncio.Event()  # begun, interrupted, paused, resumed or ended
        self._playing: asyncio.Task[None] | None = None
        self.listeners: list[Callable[[np.ndarray | None], object]] = []
        """called with each reply's samples as they are given, and None when it is cut: a
        browser's speaker plays along (``VoiceView``)"""

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._playing is not None and not self._playing.done():
            await self._playing  # the previous reply plays out first
        if not self._pushed:
            self._began = time.perf_counter()
            self.playing = Playout(self._began)
            self._interrupted, self._paused_at, self._paused_for = False, None, 0.0
            self._changed.set()
            self.on_playback_started(created_at=time.time())
        samples = np.frombuffer(frame.data, np.int16).copy()
        self._frames.append(samples)
        self._pushed += frame.duration
        for listener in self.listeners:
            listener(samples)

    def flush(self) -> None:
        super().flush()
        if self._pushed:
            frames, pushed, began = self._frames, self._pushed, self._began
            self._frames, self._pushed = [], 0.0
            self._playing = asyncio.create_task(self._play_out(frames, pushed, began))

    def clear_buffer(self) -> None:
        if self.playing is not None and not self._interrupted and self._paused_at is None:
            self.playing.stops.append(time.perf_counter())
        self._interrupted = True
        self._changed.set()
        for listener in self.listeners:
            listener(None)

    def pause(self) -> None:
        if self._paused_at is None:
            self._paused_at = time.perf_counter()
            if self.playing is not None and not self._interrupted:
                self.playing.stops.append(self._paused_at)
            self._changed.set()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._paused_for += time.perf_counter() - self._paused_at
            self._paused_at = None
            self._changed.set()

    def _position(self, began: float) -> float:
        """Seconds of the reply played so far: time since its start, less time paused."""
        paused = self._paused_for
        if self._paused_at is not None:
            paused += time.perf_counter() - self._paused_at
        return time.perf_counter() - began - paused

    async def until_played(self, seconds: float) -> tuple[Playout, float]:
        """Wait until the reply playing now, else the next one to begin, has played
        ``seconds`` (its playout position: time since its first frame, less time paused);
        returns it and its position then. A reply cut before it gets there is waited past."""
        while True:
            self._changed.clear()
            left = None
            playing = self.playing
            if playing is not None and not self._interrupted and self._paused_at is None:
                position = self._position(playing.began)
                if position >= seconds:
                    return playing, position
                left = seconds - position
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def _play_out(self, frames: list[np.ndarray], pushed: float, began: float) -> None:
        while not self._interrupted:
            left = None if self._paused_at is not None else pushed - self._position(began)
            if left is not None and left <= 0:
                break
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        played = min(max(self._position(began), 0.0), pushed)
        heard = np.concatenate(frames)[: round(played * SAMPLE_RATE)]
        self.recording.replies.append(heard)
        if self.playing is not None:
            self.playing.played = played
            self.playing = None
        self._changed.set()
        self.on_playback_finished(playback_position=played, interrupted=self._interrupted)
