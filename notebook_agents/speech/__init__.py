"""Speech offline, from components shipped in wheels: what the emulator speaks and hears with,
and how notebooks and tests make a caller's voice."""

from .grammar import Parameter, Request, Vocabulary, VocabularyError
from .line import Gain, Jitter, Line, LineError, Noise, PacketLoss, Telephone
from .recognition import RecognitionError, SampleRateError, transcribe
from .synthesis import SAMPLE_RATE, SynthesisError, synthesize

__all__ = [
    "SAMPLE_RATE",
    "Gain",
    "Jitter",
    "Line",
    "LineError",
    "Noise",
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
]
