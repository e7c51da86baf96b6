"""Speech synthesis offline: eSpeak NG from the ``espeakng-loader`` wheel, PCM16 mono at 24 kHz.

The wheel ships ``libespeak-ng`` and its voice data, so nothing is installed or downloaded at
run time. eSpeak speaks at 22.05 kHz; the realtime API and the emulator speak at 24 kHz, so the
samples are resampled (``resampling.py``).
"""

from __future__ import annotations

import _ctypes
import contextlib
import ctypes
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator

import numpy as np

from ..errors import NotebookAgentsError
from .resampling import resample

SAMPLE_RATE = 24_000
"""the rate of what ``synthesize`` returns: the realtime API's PCM16"""

_AUDIO_OUTPUT_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: samples to the callback, in the call
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_NOISE_SEED = 0
_lock = threading.Lock()


class SynthesisError(NotebookAgentsError, RuntimeError):
    """eSpeak NG could not be loaded or could not speak."""


def synthesize(
    text: str, *, words_per_minute: int = 175, voice: str = "en-us", rate: int = SAMPLE_RATE
) -> np.ndarray:
    """``text`` spoken by eSpeak NG: int16 samples, mono, at ``rate``; the same samples for
    the same arguments, every call."""
    chunks: list[np.ndarray] = []
    with espeak(fresh=True) as engine:
        if engine.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise SynthesisError(f"eSpeak NG has no voice {voice!r} (e.g. 'en-us', 'en')")
        # its noise (a voice's breath, frication) is seeded with the time at espeak_Initialize
        # (speech.c): the female voices came out differently from one second to the next
        engine.lib.espeak_ng_SetRandSeed(_NOISE_SEED)
        _collect.append(chunks.append)
        try:
            engine.lib.espeak_SetParameter(1, words_per_minute, 0)  # espeakRATE, absolute
            data = text.encode("utf-8")
            status = engine.lib.espeak_Synth(
                data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
        finally:
            _collect.clear()
    if status != 0:
        raise SynthesisError(f"eSpeak NG could not speak {text!r} (error {status})")
    native = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return resample(native, engine.rate, rate)


@dataclasses.dataclass(frozen=True)
class Engine:
    """eSpeak NG, loaded: its library and the rate it speaks at."""

    lib: ctypes.CDLL
    rate: int


@contextlib.contextmanager
def espeak(*, fresh: bool = False) -> Iterator[Engine]:
    """eSpeak NG, loaded, for one use at a time (its state is global); ``fresh``: loaded
    afresh for this use, as speaking needs.

    eSpeak keeps where its pitch flutter stands in a function's static variable (wavegen.c,
    ``AdvanceParameters``'s ``Flutter_ix``), which neither ``espeak_Initialize`` nor
    ``espeak_Terminate`` resets: the same text spoken twice came out 41453 to 41473 samples
    long, and the samples differed. Unloading the library resets its statics, so a fresh
    engine speaks each text as a fresh process does, its noise seeded alike (``synthesize``):
    about 0.3 ms to load, 4 ms with the voice. Asking for phonemes needs no fresh engine, and
    keeps the voice loaded."""
    global _loaded
    with _lock:
        if fresh and _loaded is not None:
            _unload(_loaded)
            _loaded = None
        if _loaded is None:
            _loaded = _load()
        yield _loaded


_loaded: Engine | None = None
"""the engine loaded now, if any (``_lock``)"""


def _load() -> Engine:
    library, data = _paths()
    lib = ctypes.CDLL(library)
    _declare(lib)
    rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data.encode(), 0)
    if rate <= 0:
        _ctypes.dlclose(lib._handle)
        raise SynthesisError(f"eSpeak NG did not start (data at {data})")
    lib.espeak_SetSynthCallback(_on_samples)
    return Engine(lib, rate)


def _unload(engine: Engine) -> None:
    engine.lib.espeak_Terminate()
    _ctypes.dlclose(engine.lib._handle)


def _samples_given(wav: ctypes._Pointer[ctypes.c_short], count: int, _: int) -> int:
    if wav and count > 0 and _collect:
        _collect[0](np.ctypeslib.as_array(wav, shape=(count,)).copy())
    return 0  # go on


_on_samples = _SYNTH_CALLBACK(_samples_given)  # kept: eSpeak holds a raw pointer to it


_collect: list[Callable[[np.ndarray], object]] = []
"""where the samples of the text being spoken go (one at a time: ``_lock``)"""


@functools.cache
def _paths() -> tuple[str, str]:
    """eSpeak NG's library and its data, from the ``espeakng-loader`` wheel."""
    try:
        import espeakng_loader
    except ImportError as e:  # a dependency: only a broken install lacks it
        raise SynthesisError("eSpeak NG is missing: pip install espeakng-loader") from e
    return espeakng_loader.get_library_path(), espeakng_loader.get_data_path()


def _declare(lib: ctypes.CDLL) -> None:
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
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
