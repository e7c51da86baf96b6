"""The Realtime API's server VAD, emulated by loudness: where a caller's speech starts and stops
in the input audio buffer.

Speech starts after ``START_MS`` of loud 20 ms frames (loud: RMS over ``threshold`` scaled to
full scale) and stops after ``silence_duration_ms`` of quiet ones, as the session's
``turn_detection`` sets them. Times are milliseconds of input audio since the session began,
as OpenAI's ``audio_start_ms`` / ``audio_end_ms`` count them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

FRAME_MS = 20
START_MS = 60
"""loud audio this long is speech (shorter is a click)"""
LOUDEST_THRESHOLD_RMS = 0.02
"""the RMS (of full scale) that ``threshold`` 1.0 asks for; 0.5, the default, asks for half"""


@dataclass(frozen=True)
class Heard:
    """Speech started or stopped at ``ms`` of the session's input audio."""

    kind: Literal["started", "stopped"]
    ms: int


class ServerVad:
    """Feeds on PCM16 mono audio as it is appended; says where speech starts and stops."""

    def __init__(self, rate: int, turn_detection: dict[str, Any], start_ms: int = 0) -> None:
        self.frame = rate * FRAME_MS // 1000
        self.loud_rms = LOUDEST_THRESHOLD_RMS * 32767 * float(turn_detection.get("threshold", 0.5))
        self.silence_ms = int(turn_detection.get("silence_duration_ms", 500))
        self.prefix_ms = int(turn_detection.get("prefix_padding_ms", 300))
        self.speaking = False
        self._pending = np.zeros(0, np.int16)
        self._heard_ms = start_ms  # where the audio fed so far ends
        self._run_ms = (
            0  # how long the audio has been loud (silent) for, while not (while) speaking
        )
        self.started_ms = 0

    def needed_from_ms(self) -> int | None:
        """Where the audio a turn may still need begins, while nobody speaks: the prefix
        padding before the frames in which speech may be starting (None while speaking:
        the turn's audio since it began). What comes before is silence no turn will hold."""
        if self.speaking:
            return None
        return self._heard_ms - START_MS - self.prefix_ms

    def end(self) -> bool:
        """The client ended the turn itself (a finalize): whether speech was under way."""
        speaking, self.speaking, self._run_ms = self.speaking, False, 0
        return speaking

    def feed(self, samples: np.ndarray) -> Iterator[Heard]:
        """Take appended audio; yield where speech started or stopped in it."""
        audio = np.concatenate([self._pending, samples])
        whole = audio.size // self.frame * self.frame
        self._pending = audio[whole:]
        frames = audio[:whole].astype(np.float64).reshape(-1, self.frame)
        for loud in np.sqrt((frames**2).mean(axis=1)) > self.loud_rms:
            self._heard_ms += FRAME_MS
            if loud != self.speaking:
                self._run_ms += FRAME_MS
            else:
                self._run_ms = 0
            if not self.speaking and self._run_ms >= START_MS:
                self.speaking, self._run_ms = True, 0
                self.started_ms = self._heard_ms - START_MS
                yield Heard("started", self.started_ms)
            elif self.speaking and self._run_ms >= self.silence_ms:
                self.speaking, self._run_ms = False, 0
                yield Heard("stopped", self._heard_ms - self.silence_ms)
