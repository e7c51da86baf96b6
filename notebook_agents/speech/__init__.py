"""Speech offline, from components shipped in wheels: what the emulator speaks with, and how
notebooks and tests make a caller's voice."""

from .recognition import RecognitionError, transcribe
from .synthesis import SAMPLE_RATE, SynthesisError, synthesize

__all__ = ["SAMPLE_RATE", "RecognitionError", "SynthesisError", "synthesize", "transcribe"]
