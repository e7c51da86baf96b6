"""Speech recognition offline: pocketsphinx (its en-US model is inside the wheel) told what a
caller of this session may say.

Free decoding of synthetic speech is poor ("transfer to weather please" -> "so when the
lease"); a grammar of the session's own phrases (its tools' names as words, greetings,
arithmetic, politeness around them) decodes them exactly. A caller is heard as the nearest
phrase of that grammar, which is what a rule-based emulator can answer anyway. Numbers come
back as digits, as the cloud APIs write them ("what is 2 plus 3").
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from .synthesis import _resample_to

RECOGNITION_RATE = 16_000
"""the rate pocketsphinx's en-US model hears at"""

GREETINGS = (
    "hello",
    "hi",
    "hello there",
    "hi there",
    "good morning",
    "good afternoon",
    "thank you",
    "thanks",
    "goodbye",
    "bye",
    "yes",
    "no",
)
"""what a caller says besides asking for something"""

_LEADS = ("can you", "could you", "please", "i want to", "i would like to", "let's")
_NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_OPERATORS = ("plus", "minus", "times", "divided by")
_QUIET_RMS = 100.0
"""loudness (of 32767) under which a 10 ms window is silence, whatever the speech's level"""
_lock = threading.Lock()


class RecognitionError(RuntimeError):
    """pocketsphinx could not be loaded, or the grammar has no phrase to hear."""


def phrases_of(tool_names: Iterable[str]) -> tuple[str, ...]:
    """What a caller says to call each tool: ``transfer_to_billing`` -> ``transfer to billing``
    (camelCase split too), lower case, letters only."""
    spoken = []
    for name in tool_names:
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").lower()
        words = " ".join(re.findall(r"[a-z']+", words))
        if words and words not in spoken:
            spoken.append(words)
    return tuple(spoken)


def grammar(tool_phrases: Iterable[str] = ()) -> str:
    """The JSGF grammar of what a caller of a session with these tool phrases may say."""
    requests = [*tool_phrases, "what is <number> <operator> <number>"]
    return "\n".join(
        [
            "#JSGF V1.0;",
            "grammar caller;",
            "public <utterance> = <greeting> | [<lead>] <request> [please];",
            f"<greeting> = {' | '.join(GREETINGS)};",
            f"<lead> = {' | '.join(_LEADS)};",
            f"<request> = {' | '.join(f'({r})' for r in requests)};",
            f"<number> = {' | '.join([*_NUMBER_WORDS, *_TENS])};",
            f"<operator> = {' | '.join(_OPERATORS)};",
            "",
        ]
    )


def transcribe(samples: np.ndarray, rate: int, tool_names: Iterable[str] = ()) -> str:
    """What a caller said in int16 mono ``samples`` at ``rate``, heard as the nearest phrase a
    caller of a session with these tools may say; "" when nothing was heard."""
    text = grammar(phrases_of(tool_names))
    heard = _resample_to(np.asarray(samples, np.int16), rate, RECOGNITION_RATE)
    audio = _without_silence_around(heard).tobytes()
    if not audio:
        return ""
    decoder = _decoder(text)
    with _lock:  # a decoder is one utterance at a time
        decoder.start_utt()
        decoder.process_raw(audio, full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
    return digits(hypothesis.hypstr) if hypothesis is not None else ""


def _without_silence_around(samples: np.ndarray) -> np.ndarray:
    """``samples`` from 30 ms before the first loud 10 ms to 30 ms after the last: with no
    filler models the grammar has no word for silence, and a VAD's turn brings some (over
    eSpeak's callers in three voices and 0-1 s of silence around: 120/144 heard word for word
    with 30 ms kept, 98/144 with 100 ms)."""
    window = RECOGNITION_RATE // 100
    count = samples.size // window
    if count == 0:
        return samples
    frames = samples[: count * window].astype(np.float64).reshape(count, window)
    loudness = np.sqrt((frames**2).mean(axis=1))
    loud = np.flatnonzero(loudness > max(_QUIET_RMS, 0.05 * loudness.max()))
    if loud.size == 0:
        return samples[:0]
    margin = 3  # windows: 30 ms
    start, end = max(loud[0] - margin, 0), min(loud[-1] + 1 + margin, count)
    return samples[start * window : end * window]


def digits(words: str) -> str:
    """Number words as digits: ``what is two plus thirty`` -> ``what is 2 plus 30``."""
    values = {word: str(i) for i, word in enumerate(_NUMBER_WORDS)}
    values.update({word: str(v) for word, v in _TENS.items()})
    return " ".join(values.get(word, word) for word in words.split())


@functools.lru_cache(maxsize=16)
def _decoder(jsgf: str) -> Any:
    """A decoder searching ``jsgf``, built once per grammar (loading the model takes ~0.2 s)."""
    try:
        from pocketsphinx import Decoder
    except ImportError as e:  # a dependency: only a broken install lacks it
        raise RecognitionError("pocketsphinx is missing: pip install pocketsphinx") from e
    # no filler models between words: with them it took the end of a phrase for noise
    decoder = Decoder(samprate=RECOGNITION_RATE, loglevel="FATAL", fsgusefiller=False)
    decoder.add_jsgf_string("caller", jsgf)
    decoder.activate_search("caller")
    return decoder
