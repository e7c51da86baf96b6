"""Speech offline, from components shipped in wheels: what the emulator speaks and hears with
(a grammar of the session's phrases; free speech with Whisper, the ``whisper`` extra), and how
notebooks and tests make a caller's voice; ``LocalWhisperSTT``, local ears for any session."""

from typing import TYPE_CHECKING, Any

from .accuracy import NothingSaidError, word_error_rate
from .grammar import Parameter, Request, Vocabulary, VocabularyError
from .hearing import HEARINGS, Hearing, HearingError
from .line import Gain, Jitter, Line, LineError, Noise, PacketLoss, Telephone
from .recognition import RecognitionError, SampleRateError, transcribe
from .synthesis import SAMPLE_RATE, SynthesisError, synthesize
from .whisper import WHISPER_EXTRA

if TYPE_CHECKING:
    from .stt import LocalWhisperSTT


def __getattr__(name: str) -> Any:
    # livekit.agents loads in ~1 s: only a caller of the local STT waits for it (the
    # emulator's own process hears with the recognizers alone)
    if name == "LocalWhisperSTT":
        from .stt import LocalWhisperSTT

        return LocalWhisperSTT
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HEARINGS",
    "SAMPLE_RATE",
    "WHISPER_EXTRA",
    "Gain",
    "Hearing",
    "HearingError",
    "Jitter",
    "Line",
    "LineError",
    "LocalWhisperSTT",
    "Noise",
    "NothingSaidError",
    "PacketLoss",
    "Parameter",
    "RecognitionError",
    "Request",
    "SampleRateError",
    "SynthesisError",
    "Telephone",
    "Vocabulary",
    "VocabularyError",
    "synthesize",
    "transcribe",
    "word_error_rate",
]
