"""Speech synthesis offline: eSpeak NG's voice, checked by another engine's ears."""

from __future__ import annotations

import numpy as np
import pytest

from notebook_agents.speech import SAMPLE_RATE, SynthesisError, synthesize

from .speech_check import heard


def _seconds(samples: np.ndarray) -> float:
    return samples.size / SAMPLE_RATE


def _loudness(samples: np.ndarray) -> float:
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


def test_speech_is_pcm16_at_24_khz_and_as_long_as_its_words() -> None:
    short, long = synthesize("hello there"), synthesize("hello there, how are you doing today")
    assert short.dtype == np.int16 and short.ndim == 1
    assert 0.4 < _seconds(short) < 2.0
    assert _seconds(long) > 1.5 * _seconds(short)
    assert _loudness(short) > 1000  # speech, not silence (full scale is 32767)
    faster = synthesize("hello there, how are you doing today", words_per_minute=300)
    assert _seconds(faster) < 0.8 * _seconds(long)


def test_another_recognizer_hears_the_words_spoken() -> None:
    """pocketsphinx, told a few phrases, hears eSpeak's "transfer to billing" among them."""
    assert heard(synthesize("transfer to billing")) == "transfer to billing"


def test_an_unknown_voice_is_named_with_a_fix() -> None:
    with pytest.raises(SynthesisError, match=r"no voice 'xx-yy' \(e\.g\. 'en-us'"):
        synthesize("hello", voice="xx-yy")
    assert synthesize("hello").size > 0  # and the engine still speaks
