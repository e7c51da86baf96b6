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
import contextlib
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import AgentSession
from livekit.agents.voice import io

from ..speech import SAMPLE_RATE
from ..speech.line import Line
from ..speech.resampling import resample

FRAME_S = 0.02
_FRAME_SAMPLES = int(SAMPLE_RATE * FRAME_S)
_SILENCE = np.zeros(_FRAME_SAMPLES, np.int16)


@dataclass(frozen=True, eq=False)
class SpokenAudio:
    """A spoken turn's audio as the caller gave it (``send_audio``, ``run_audio``), and when
    the turn took place on the trace's clock: what a recorded call's spoken turn is written
    from (``notebook_agents.suites.to_scenario``)."""

    samples: np.ndarray
    """int16 mono, as given (before any resampling)"""
    rate: int
    began: float
    """trace time the turn began, before its audio went in"""
    ended: float
    """trace time it ended: answered, or given up"""
    line: Line = field(default_factory=Line)
    """the line conditions it crossed on its way to the session"""


class CallerInput(io.AudioInput):
    """A microphone that speaks what it is given, at real-time pace, in PCM16 mono 24 kHz."""

    def __init__(self) -> None:
        super().__init__(label="notebook-agents caller")
        self._frames: collections.deque[np.ndarray] = collections.deque()
        self._open = asyncio.Event()  # made on the job's loop: frames are read there
        self._due = 0.0
        self._live: collections.deque[np.ndarray] = collections.deque()
        self._arrived = asyncio.Event()
        self._speaker: object = None

    def speak(self, samples: np.ndarray, rate: int, speaker: object) -> float:
        """Queue a spoken turn and open the microphone: it streams the turn, then silence.
        ``speaker`` (the turn) holds the microphone until another speaks into it (a barge-in
        over its reply): only the one holding it withdraws or closes it. Returns when the
        turn's first frame goes out (``time.perf_counter()``)."""
        self._speaker = speaker
        audio = resample(samples, rate, SAMPLE_RATE)
        padded = np.concatenate([audio, np.zeros(-audio.size % _FRAME_SAMPLES, np.int16)])
        queued = len(self._frames)
        self._frames.extend(padded.reshape(-1, _FRAME_SAMPLES))
        self._open_now()
        return max(self._due, time.perf_counter()) + queued * FRAME_S

    def withdraw(self, speaker: object) -> None:
        """Stop the turn mid-word, as a caller who breaks off: what is left of it is dropped
        and silence follows, so a VAD hears the speech end."""
        if speaker is self._speaker:
            self._frames.clear()
            self._open_now()

    def _open_now(self) -> None:
        if not self._open.is_set():
            self._due = time.perf_counter()
            self._open.set()

    def stream(self, samples: np.ndarray, rate: int) -> None:
        """Live audio as it arrives from a microphone: passed on at once, unpaced."""
        audio = resample(samples, rate, SAMPLE_RATE)
        self._live.append(audio)
        self._arrived.set()

    def close(self, speaker: object) -> None:
        """Mute: what is left of the turn is dropped and no silence follows."""
        if speaker is self._speaker:
            self._frames.clear()
            self._open.clear()

    @property
    def unspoken_s(self) -> float:
        """Seconds of the queued turn not streamed yet."""
        return len(self._frames) * FRAME_S

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
            if speech is not None and not speech.done():
                await speech.wait_for_playout()
            elif speech is not None:
                # done (cut) but not yet cleared: livekit's scheduling task, on this loop,
                # clears it when it next runs. Awaiting the done handle would not yield to it.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), _CLEARED_CHECK_S)
            else:
                await changed.wait()
    finally:
        session.off("agent_state_changed", on_change)


async def until_the_caller_is_heard_out(session: AgentSession[Any]) -> None:
    """Wait until the session no longer hears the caller speak: its VAD (or the realtime
    model's) has heard their speech end."""
    changed = asyncio.Event()

    def on_change(_: object) -> None:
        changed.set()

    session.on("user_state_changed", on_change)
    try:
        while session.user_state == "speaking":
            changed.clear()
            await changed.wait()
    finally:
        session.off("user_state_changed", on_change)


_QUIET = ("listening", "idle")
_CLEARED_CHECK_S = 0.01
"""how often a done speech the session still holds is looked at again: livekit clears it
with no event of its own (the agent's state need not change)"""
