"""The audio a caller gives the runner (``send_audio``, ``hear``), checked and made int16 mono.

Taken: a whole PCM16 WAV file; or samples as int16 (other integer types within int16's range)
or as float at full scale 1.0, mono or with a channel axis either way round (frames x channels,
as soundfile and sounddevice give them, or channels x frames, as librosa and torchaudio do: the
shorter axis, of at most ``MAX_CHANNELS``, is the channels, mixed down by their mean), at a
whole rate in Hz. A WAV file cut short (holding fewer frames than its header declares) is
refused rather than spoken in part: the agent would answer half of what was said as if it were
all of it. Anything else is an ``AudioError`` naming the fix, raised before the runner
starts anything, so nothing is left half-done.
"""

from __future__ import annotations

import math
import numbers
import os
import wave
from pathlib import Path

import numpy as np

from ..speech import SAMPLE_RATE
from ..speech.wav import WavCutShort, wav_samples
from .errors import AudioError

MAX_CHANNELS = 8
"""more than this along the shorter axis is not a channel axis"""
RATES = (8_000, 384_000)
"""the rates taken, in Hz: telephone speech to studio audio"""


def spoken_audio(
    audio: str | os.PathLike[str] | np.ndarray, rate: int | None
) -> tuple[np.ndarray, int]:
    """What ``send_audio`` was given, as int16 mono samples and their rate: a PCM16 WAV file's
    (at its own rate), or samples at ``rate`` (``synthesize``'s 24 kHz unless given)."""
    if isinstance(audio, (str, os.PathLike)):
        return _wav_file(Path(audio), rate)
    rate = SAMPLE_RATE if rate is None else checked_rate(rate)
    return mono_int16(audio), rate


def checked_rate(rate: object, of: str = "rate") -> int:
    """``rate`` as a whole number of Hz, or an ``AudioError`` saying what to pass."""
    lowest, highest = RATES
    hz = float(rate) if isinstance(rate, numbers.Real) else math.nan
    if isinstance(rate, (bool, np.bool_)) or not hz.is_integer() or not lowest <= hz <= highest:
        raise AudioError(
            f"{of}={rate!r} is no sample rate: give the samples' rate in Hz, a whole number "
            f"from {lowest} to {highest} ({SAMPLE_RATE} for synthesize()'s)"
        )
    return int(hz)


def mono_int16(audio: object) -> np.ndarray:
    """Samples as int16 mono, or an ``AudioError`` naming what is wrong with them."""
    samples = np.asarray(audio)
    if samples.dtype.kind not in "iuf":
        raise AudioError(
            f"audio samples must be numbers, not {samples.dtype} ({type(audio).__name__}): "
            "pass a numpy array of int16, or of float in [-1, 1], or a WAV file's path"
        )
    if samples.size == 0:
        raise AudioError(f"the audio has no samples (shape {samples.shape}): pass some speech")
    if samples.ndim == 2:
        samples = _frames_by_channels(samples)
    elif samples.ndim != 1:
        raise AudioError(
            f"audio of shape {samples.shape}: pass mono samples, or (frames, channels)"
        )
    if samples.dtype.kind == "f":
        return _float_to_int16(samples)
    low, high = (0, 0) if samples.dtype == np.int16 else (int(samples.min()), int(samples.max()))
    if low < -32768 or high > 32767:
        raise AudioError(
            f"{samples.dtype} samples from {low} to {high} are outside int16's range: pass "
            "int16 PCM (32-bit PCM >> 16), or float at full scale 1.0"
        )
    mono: np.ndarray = np.round(samples.mean(axis=1)) if samples.ndim == 2 else samples
    return mono.astype(np.int16)


def _frames_by_channels(samples: np.ndarray) -> np.ndarray:
    """A 2-D array as (frames, channels): the shorter axis is the channels, if it can be."""
    rows, columns = samples.shape
    if columns <= MAX_CHANNELS < rows or (columns <= MAX_CHANNELS and columns < rows):
        return samples
    if rows <= MAX_CHANNELS < columns or (rows <= MAX_CHANNELS and rows < columns):
        return samples.T
    raise AudioError(
        f"audio of shape {samples.shape}: which axis holds the channels? pass mono samples, "
        f"or (frames, channels) with at most {MAX_CHANNELS} channels"
    )


def _float_to_int16(samples: np.ndarray) -> np.ndarray:
    unusable = ~np.isfinite(samples)
    if unusable.any():
        first = int(np.argmax(unusable.reshape(unusable.shape[0], -1).any(axis=1)))
        raise AudioError(
            f"the samples contain NaN/inf ({int(unusable.sum())} of {samples.size}, the first "
            f"at frame {first}): replace them, e.g. np.nan_to_num(samples, nan=0.0, "
            "posinf=1.0, neginf=-1.0)"
        )
    peak = float(np.abs(samples).max())
    if peak > 1.0:
        raise AudioError(
            f"float samples are full scale at 1.0 and these reach {peak:.6g}: scale them "
            "(samples / np.abs(samples).max()), or pass int16 PCM as int16"
        )
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples
    return np.round(mono * 32767).astype(np.int16)


def _wav_file(path: Path, rate: int | None) -> tuple[np.ndarray, int]:
    try:
        samples, file_rate = wav_samples(path.read_bytes(), whole=True)
    except WavCutShort as e:
        fit = ""
        if e.declared is not None:
            fit = ", or to speak the part it holds, rewrite its header to fit: "
            fit += f"sox --ignore-length {path} whole.wav"
        raise AudioError(f"{path} is cut short: {e}: record or export it again{fit}") from None
    except (wave.Error, EOFError, ValueError) as e:
        raise AudioError(
            f"{path} is not a PCM16 WAV file ({e}): convert it, e.g. with sox"
        ) from None
    file_rate = checked_rate(file_rate, of=f"{path}'s rate")
    if rate is not None and rate != file_rate:
        raise AudioError(f"{path} is at {file_rate} Hz, not rate={rate}: leave out rate=")
    if samples.size == 0:
        raise AudioError(f"{path} holds no samples: record some speech into it")
    return samples, file_rate
