"""Sample-rate conversion that gives the same samples for the same audio, every time.

livekit's ``rtc.AudioResampler`` (libsoxr underneath) returns different int16 samples for the
same input on each call, at the same length (measured: three calls, three outputs), which is
what libsoxr's default TPDF dither on integer output does. Two takes of one phrase then differ
by that noise, and so do a test's or a benchmark's runs. python-soxr (the same libsoxr) is
given float samples here, which libsoxr never dithers; the rounding to int16 is ours.
"""

from __future__ import annotations

import numpy as np
import soxr

_QUALITY = "MQ"  # libsoxr's medium quality: livekit's default (AudioResamplerQuality.MEDIUM)


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """int16 mono ``samples`` at ``rate``, resampled to ``target``: int16."""
    samples = np.asarray(samples, np.int16)
    if rate == target or samples.size == 0:
        return samples
    return to_int16(soxr.resample(samples.astype(np.float32), rate, target, quality=_QUALITY))


class ResampleStream:
    """The streaming form, for audio that arrives in chunks: the filter's state spans them."""

    def __init__(self, rate: int, target: int) -> None:
        self._stream = soxr.ResampleStream(rate, target, 1, dtype="float32", quality=_QUALITY)

    def push(self, samples: np.ndarray) -> np.ndarray:
        """The int16 chunk's samples at the target rate, as far as the filter has them."""
        chunk = np.asarray(samples, np.int16).astype(np.float32)
        return to_int16(self._stream.resample_chunk(chunk))

    def flush(self) -> np.ndarray:
        """The rest: what the filter held back, once no more audio comes."""
        return to_int16(self._stream.resample_chunk(np.zeros(0, np.float32), last=True))


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float samples (int16's scale) as int16: rounded, clipped at full scale."""
    rounded: np.ndarray = np.clip(np.rint(audio), -32768, 32767).astype(np.int16)
    return rounded
