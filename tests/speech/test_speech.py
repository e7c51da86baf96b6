"""Speech synthesis offline: eSpeak NG's voice, checked by another engine's ears."""

from __future__ import annotations

import time
import wave

import numpy as np
import pytest

from notebook_agents.speech import SAMPLE_RATE, SynthesisError, synthesize
from notebook_agents.speech.resampling import resample
from notebook_agents.speech.wav import WavCutShort, wav_bytes, wav_samples
from tests.speech_check import heard


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


def test_the_same_text_is_spoken_as_the_same_samples_every_time() -> None:
    """eSpeak keeps its pitch flutter's place from one text to the next, and livekit's
    resampler dithers: the same text spoken again (another in between) came out different."""
    first = synthesize("lookup weather location madrid")
    synthesize("hello there", voice="en")
    again = synthesize("lookup weather location madrid")
    assert np.array_equal(first, again)
    assert not np.array_equal(first, synthesize("lookup weather location madrid", voice="en"))


def test_a_voice_with_breath_is_spoken_the_same_a_second_later() -> None:
    """eSpeak seeds its noise (the female voices' breath) with the time, in seconds."""
    first = synthesize("lookup weather location athens", voice="en-us+f3")
    second = int(time.time())
    while int(time.time()) == second:  # the next second on the clock, not a wait for work
        time.sleep(0.01)
    assert np.array_equal(first, synthesize("lookup weather location athens", voice="en-us+f3"))


def test_resampling_the_same_audio_gives_the_same_samples() -> None:
    audio = np.random.default_rng(1).normal(0, 3000, SAMPLE_RATE).astype(np.int16)
    once, twice = resample(audio, SAMPLE_RATE, 16_000), resample(audio, SAMPLE_RATE, 16_000)
    assert once.size == 16_000 and np.array_equal(once, twice)


def test_another_recognizer_hears_the_words_spoken() -> None:
    """pocketsphinx, told a few phrases, hears eSpeak's "transfer to billing" among them."""
    assert heard(synthesize("transfer to billing")) == "transfer to billing"


def test_an_unknown_voice_is_named_with_a_fix() -> None:
    with pytest.raises(SynthesisError, match=r"no voice 'xx-yy' \(e\.g\. 'en-us'"):
        synthesize("hello", voice="xx-yy")
    assert synthesize("hello").size > 0  # and the engine still speaks


def test_a_wav_file_is_read_whole_or_as_far_as_it_goes() -> None:
    """The emulator's endpoint reads a file cut short in its audio as far as it goes (as
    OpenAI's decoder does); ``whole=True`` (a caller's own file) says what is missing. Every
    refusal gives a reason."""
    speech = synthesize("hello there")
    cut = wav_bytes(speech, SAMPLE_RATE)[: 44 + speech.size]  # half of the samples
    samples, rate = wav_samples(cut)
    assert rate == SAMPLE_RATE and np.array_equal(samples, speech[: speech.size // 2])
    with pytest.raises(WavCutShort) as refused:
        wav_samples(cut, whole=True)
    assert (refused.value.declared, refused.value.held) == (speech.size, speech.size // 2)
    for data in (b"", b"RIFF", b"ID3", b"ID3" + bytes(300)):
        with pytest.raises(wave.Error, match=r"\w"):
            wav_samples(data)
