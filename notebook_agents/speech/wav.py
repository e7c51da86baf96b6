"""PCM16 mono samples as a WAV file and back: what a browser's ``<audio>`` plays and what
OpenAI's transcription endpoint is sent."""

from __future__ import annotations

import io
import wave

import numpy as np

from ..errors import NotebookAgentsError

UNKNOWN_LENGTH = 0xFFFF_FFFF
"""a chunk size its writer never filled in (a WAV streamed to a pipe cannot seek back; FFmpeg's
``ff_start_tag`` in libavformat/riffenc.c leaves -1): the audio runs to the end of the file"""


class WavCutShort(NotebookAgentsError, wave.Error):
    """A WAV file that ends before its header says it does: inside the header, before any
    audio (``declared`` None), or holding fewer frames than the header ``declared``."""

    def __init__(self, reason: str, declared: int | None = None, held: int = 0) -> None:
        super().__init__(reason)
        self.declared = declared
        self.held = held


def wav_bytes(samples: np.ndarray, rate: int) -> bytes:
    """int16 mono ``samples`` at ``rate`` as the bytes of a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(np.asarray(samples, dtype=np.int16).tobytes())
    return out.getvalue()


def wav_samples(data: bytes, *, whole: bool = False) -> tuple[np.ndarray, int]:
    """A PCM16 WAV file's samples (int16, channels mixed to mono) and rate; a ``wave.Error``
    saying why not for anything else, a ``WavCutShort`` for a file that ends inside its header.

    A file cut short in its audio (fewer frames than its header declares, or a frame cut in
    the middle) is read as the whole frames it holds, as a decoder such as ffmpeg reads a
    truncated stream; with ``whole`` it is a ``WavCutShort`` saying what is missing.
    """
    try:
        with wave.open(io.BytesIO(data), "rb") as file:
            if file.getsampwidth() != 2:
                raise wave.Error(f"{8 * file.getsampwidth()}-bit samples: only 16-bit PCM is read")
            channels, rate = file.getnchannels(), file.getframerate()
            if rate <= 0:
                raise wave.Error(f"the header's sample rate is {rate} Hz: it must be positive")
            declared = file.getnframes()
            frames = file.readframes(declared)
    except (EOFError, wave.Error) as e:
        if _ends_in_header(data):
            ends = "is empty" if not data else f"ends after {len(data)} bytes"
            raise WavCutShort(f"the file {ends}, inside its WAV header, before any audio") from None
        if str(e):
            raise
        # wave's EOFError says nothing: a few bytes that are no RIFF header's start
        raise wave.Error(f"it is {len(data)} bytes long, with no RIFF/WAVE header") from None
    held = len(frames) // (2 * channels)
    unknown = declared == UNKNOWN_LENGTH // (2 * channels)
    if whole and held < declared and not unknown:
        raise WavCutShort(
            f"its header declares {declared} frames ({declared / rate:.2f} s) and it holds "
            f"{held} ({held / rate:.2f} s)",
            declared,
            held,
        )
    samples = np.frombuffer(frames[: held * 2 * channels], dtype=np.int16)
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).astype(np.int16)
    return samples, rate


def _ends_in_header(data: bytes) -> bool:
    """Whether ``data`` is the start of a RIFF/WAVE file that ends before its data chunk
    begins: its chunks (each a name, a size and that many bytes) run past its end, or its RIFF
    size promises more than there is."""
    if not (b"RIFF".startswith(data[:4]) and b"WAVE".startswith(data[8:12])):
        return False
    if len(data) < 12:
        return True
    offset = 12
    while offset < len(data):
        if offset + 8 > len(data):
            return True  # inside a chunk's name and size
        if data[offset : offset + 4] == b"data":
            return False
        size = int.from_bytes(data[offset + 4 : offset + 8], "little")
        offset += 8 + size + size % 2  # chunks are padded to an even length
    riff_size = int.from_bytes(data[4:8], "little")
    return offset > len(data) or 8 + riff_size > len(data)
