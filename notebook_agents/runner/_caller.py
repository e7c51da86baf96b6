"""The caller's voice, offline: a microphone the runner speaks into.

With ``NotebookRunner(audio=True)`` the offline session's audio input (livekit's public
``io.AudioInput``) is this: it streams a spoken turn in 20 ms frames at real-time pace, then
silence for as long as the turn is awaited, so the session's VAD and turn detection hear the
speech end as they would from a microphone. Between turns it sends nothing, as a muted
microphone would, and costs nothing. A live microphone (the browser's, ``VoiceView``)
streams into it as its frames arrive, already at the pace of speech.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
import wave
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import AgentSession
from livekit.agents.voice import io

from ..speech import SAMPLE_RATE
from ..speech.synthesis import _resample_to
from ..speech.wav import wav_samples

FRAME_S = 0.02
_FRAME_SAMPLES = int(SAMPLE_RATE * FRAME_S)
_SILENCE = np.zeros(_FRAME_SAMPLES, np.int16)


class CallerInput(io.AudioInput):
    """A microphone that speaks what it is given, at real-time pace, in PCM16 mono 24 kHz."""

    def __init__(self) -> None:
        super().__init__(label="notebook-agents caller")
        self._frames: collections.deque[np.ndarray] = collections.deque()
        self._open = asyncio.Event()  # made on the job's loop: frames are read there
        self._due = 0.0
        self._live: collections.deque[np.ndarray] = collections.deque()
        self._arrived = asyncio.Event()

    def speak(self, samples: np.ndarray, rate: int) -> None:
        """Queue a spoken turn and open the microphone: it streams the turn, then silence."""
        audio = _resample_to(np.asarray(samples, np.int16), rate, SAMPLE_RATE)
        padded = np.concatenate([audio, np.zeros(-audio.size % _FRAME_SAMPLES, np.int16)])
        self._frames.extend(padded.reshape(-1, _FRAME_SAMPLES))
        if not self._open.is_set():
            self._due = time.perf_counter()
            self._open.set()

    def stream(self, samples: np.ndarray, rate: int) -> None:
        """Live audio as it arrives from a microphone: passed on at once, unpaced."""
        audio = _resample_to(np.asarray(samples, np.int16), rate, SAMPLE_RATE)
        self._live.append(audio)
        self._arrived.set()

    def close(self) -> None:
        """Mute: what is left of the turn is dropped and no silence follows."""
        self._frames.clear()
        self._open.clear()

    @property
    def speaking(self) -> bool:
        """True while a queued turn is still being streamed."""
        return bool(self._frames)

    async def __anext__(self) -> rtc.AudioFrame:
        while not self._open.is_set() and not self._live:
            self._arrived.clear()
            await _first(self._open.wait(), self._arrived.wait())
        if self._live and not self._open.is_set():
            samples = self._live.popleft()
            return rtc.AudioFrame(samples.tobytes(), SAMPLE_RATE, 1, samples.size)
        delay = self._due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        # the turn, then live audio where silence would be (a caller speaking over the reply)
        if self._frames:
            samples = self._frames.popleft()
        else:
            samples = self._live.popleft() if self._live else _SILENCE
        # behind (a busy loop) is caught up at once, as a microphone's buffer would deliver it
        now = time.perf_counter()
        self._due = max(self._due, now - 10 * FRAME_S) + samples.size / SAMPLE_RATE
        return rtc.AudioFrame(samples.tobytes(), SAMPLE_RATE, 1, samples.size)


def caller_audio(
    audio: str | os.PathLike[str] | np.ndarray, rate: int | None
) -> tuple[np.ndarray, int]:
    """What ``send_audio`` was given as int16 mono samples and their rate: a PCM16 WAV file's
    (its own rate), or samples (int16, or float in [-1, 1]; mono, or frames x channels) at
    ``rate``, 24 kHz (``synthesize``'s) unless given. A ``ValueError`` names what is wrong."""
    if isinstance(audio, (str, os.PathLike)):
        path = Path(audio)
        try:
            samples, file_rate = wav_samples(path.read_bytes())
        except (wave.Error, EOFError) as e:
            raise ValueError(
                f"{path} is not a PCM16 WAV file ({e}): convert it, e.g. with sox"
            ) from None
        if rate is not None and rate != file_rate:
            raise ValueError(f"{path} is at {file_rate} Hz, not rate={rate}: leave out rate=")
        return samples, file_rate
    samples = np.asarray(audio)
    if samples.ndim == 2:
        samples = samples.mean(axis=1)
    if samples.ndim != 1 or samples.size == 0:
        raise ValueError(
            f"audio samples must be mono or frames x channels, not shape {np.shape(audio)}"
        )
    if samples.dtype.kind == "f":
        samples = np.clip(samples, -1.0, 1.0) * 32767
    return samples.astype(np.int16), rate or SAMPLE_RATE


async def _first(*waits: Coroutine[Any, Any, object]) -> None:
    """Wait until the first of ``waits`` is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


async def until_the_agent_is_quiet(session: AgentSession[Any]) -> None:
    """Wait as a polite caller does: until the agent has finished speaking (a greeting from its
    ``on_enter``, say) and is listening. Speech over the agent's is a barge-in, not a turn."""
    changed = asyncio.Event()

    def on_change(_: object) -> None:
        changed.set()

    session.on("agent_state_changed", on_change)
    try:
        while session.agent_state not in _QUIET or session.current_speech is not None:
            changed.clear()
            speech = session.current_speech
            if speech is not None:
                await speech.wait_for_playout()
            else:
                await changed.wait()
    finally:
        session.off("agent_state_changed", on_change)


_QUIET = ("listening", "idle")
