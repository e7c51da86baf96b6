"""PCM16 mono samples as a WAV file and back: what a browser's ``<audio>`` plays and what
OpenAI's transcription endpoint is sent."""

from __future__ import annotations

import io
import wave

import numpy as np


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """int16 mono ``samples`` at ``rate`` as the bytes of a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(np.asarray(samples, dtype=np.int16).tobytes())
    return out.getvalue()


def wav_samples(data: bytes) -> tuple[np.ndarray, int]:
    """A PCM16 WAV file's samples (int16, channels mixed to mono) and rate; ``wave.Error`` or
    ``EOFError`` for anything else.

    A file cut short mid-sample (an odd number of data bytes, a frame missing a channel) is
    read as its whole frames, as a decoder such as ffmpeg reads a truncated stream.
    """
    with wave.open(io.BytesIO(data), "rb") as file:
        if file.getsampwidth() != 2:
            raise wave.Error(f"{8 * file.getsampwidth()}-bit samples: only 16-bit PCM is read")
        channels, rate = file.getnchannels(), file.getframerate()
        if rate <= 0:
            raise wave.Error(f"the header's sample rate is {rate} Hz: it must be positive")
        frames = file.readframes(file.getnframes())
    whole = len(frames) - len(frames) % (2 * channels)
    samples = np.frombuffer(frames[:whole], dtype=np.int16)
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).astype(np.int16)
    return samples, rate
