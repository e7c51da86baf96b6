"""Speech synthesis offline: eSpeak NG from the ``espeakng-loader`` wheel, PCM16 mono at 24 kHz.

The wheel ships ``libespeak-ng`` and its voice data, so nothing is installed or downloaded at
run time. eSpeak speaks at 22.05 kHz; the realtime API and the emulator speak at 24 kHz, so the
samples go through livekit's resampler. eSpeak keeps one global state: calls are serialized.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable

import numpy as np
from livekit import rtc

from ..errors import NotebookAgentsError

SAMPLE_RATE = 24_000
"""the rate of what ``synthesize`` returns: the realtime API's PCM16"""

_AUDIO_OUTPUT_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: samples to the callback, in the call
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_lock = threading.Lock()


class SynthesisError(NotebookAgentsError, RuntimeError):
    """eSpeak NG could not be loaded or could not speak."""


def synthesize(
    text: str, *, words_per_minute: int = 175, voice: str = "en-us", rate: int = SAMPLE_RATE
) -> np.ndarray:
    """``text`` spoken by eSpeak NG: int16 samples, mono, at ``rate``."""
    engine = _engine()
    chunks: list[np.ndarray] = []
    with _lock:
        if engine.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise SynthesisError(f"eSpeak NG has no voice {voice!r} (e.g. 'en-us', 'en')")
        engine.collect = chunks.append
        engine.lib.espeak_SetParameter(1, words_per_minute, 0)  # espeakRATE, absolute
        data = text.encode("utf-8")
        status = engine.lib.espeak_Synth(
            data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
        )
        engine.collect = None
    if status != 0:
        raise SynthesisError(f"eSpeak NG could not speak {text!r} (error {status})")
    native = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return _resample_to(native, engine.rate, rate)


class _Engine:
    def __init__(self, lib: ctypes.CDLL, rate: int) -> None:
        self.lib = lib
        self.rate = rate
        self.collect: Callable[[np.ndarray], object] | None = None

        def on_samples(wav: ctypes._Pointer[ctypes.c_short], count: int, _: int) -> int:
            if wav and count > 0 and self.collect is not None:
                self.collect(np.ctypeslib.as_array(wav, shape=(count,)).copy())
            return 0  # go on

        self.callback = _SYNTH_CALLBACK(on_samples)  # kept: eSpeak holds a raw pointer to it
        lib.espeak_SetSynthCallback(self.callback)


@functools.cache
def _engine() -> _Engine:
    try:
        import espeakng_loader
    except ImportError as e:  # a dependency: only a broken install lacks it
        raise SynthesisError("eSpeak NG is missing: pip install espeakng-loader") from e
    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    # what pronunciation.py asks: a clause's phonemes, the cursor moved past it
    lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
    lib.espeak_TextToPhonemes.argtypes = [
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_int,
        ctypes.c_int,
    ]
    data = espeakng_loader.get_data_path().encode()
    with _lock:
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data, 0)
        if rate <= 0:
            raise SynthesisError(f"eSpeak NG did not start (data at {data.decode()})")
        return _Engine(lib, rate)


def _resample_to(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """int16 mono ``samples`` at ``rate``, resampled to ``target`` by livekit's resampler."""
    if rate == target or samples.size == 0:
        return samples
    resampler = rtc.AudioResampler(rate, target)
    frames = resampler.push(rtc.AudioFrame(samples.tobytes(), rate, 1, samples.size))
    frames += resampler.flush()
    return np.concatenate([np.frombuffer(f.data, np.int16) for f in frames])
