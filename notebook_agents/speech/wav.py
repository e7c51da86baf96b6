"""PCM16 mono samples as a WAV file: what a browser's ``<audio>`` and an HTTP client play."""

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
