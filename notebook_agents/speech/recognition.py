"""Speech recognition offline: pocketsphinx (its en-US model is inside the wheel) told what a
caller of this session may say.

Free decoding of synthetic speech is poor ("transfer to weather please" -> "so when the
lease"); the session's grammar (``grammar.py``: its tools, their arguments, greetings,
arithmetic) decodes it, and a caller is heard as the nearest phrase of that grammar, which is
what a rule-based emulator can answer anyway. Every word is pronounceable: one the dictionary
lacks ("greeter") is pronounced by eSpeak NG (``pronunciation.py``).

Only a whole phrase is heard, and rather nothing than a wrong one:

- no lattice rescoring (``bestpath``): its best path ignores where the grammar ends, so a lone
  "hello" came back as the start of a request ("can you") and "hi" as nothing;
- a short lone word with a sound-alike among the lone words ("no" and "hello", "bye" and
  "goodbye" and "hi") is heard only if it fits the audio clearly better than each of them
  alone (``SOUND_ALIKE_MARGIN``): in eSpeak's voices pocketsphinx hears "hi" as "bye" and
  back, a clipped "goodbye" as "bye", a soft-spoken "hello" as "no".
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import NotebookAgentsError
from .grammar import Grammar, Vocabulary, grammar
from .hearing import DEFAULT_HEARING, Hearing, check_hearing
from .pronunciation import pronunciation
from .synthesis import _resample_to
from .whisper import WHISPER_RATE, hear_freely, prompt_of

RECOGNITION_RATE = 16_000
"""the rate pocketsphinx's en-US model hears at"""
SOUND_ALIKE_MARGIN = 1.2e-3
"""how much better (log-likelihood per 10 ms frame, as pocketsphinx scores) a short lone word
must fit the audio than each sound-alike to be heard. Measured on eSpeak's three voices, 10
calls each: "no" fits 1.13 to 2.77 better than "hello" when said, "hello" said fits "no" at
most 0.44 better; "bye" said fits 2.5 better than "goodbye", "goodbye" said fits "bye" at most
0.65 better; "hi" and "bye" are never 1.0 apart, whichever was said, so neither is heard"""
_QUIET_RMS = 100.0
"""loudness (of 32767) under which a 10 ms window is silence, whatever the speech's level"""
_EARS = 2
"""decoders kept (each holds the acoustic model, ~90 MB): two turns are heard at once"""
_SEARCHES = 16
"""grammars each decoder keeps ready, the most recently used"""


class RecognitionError(NotebookAgentsError, RuntimeError):
    """pocketsphinx could not be loaded, or could not hear the audio; the message says why."""


class SampleRateError(NotebookAgentsError, ValueError):
    """Audio given with a rate that is none (0 Hz or less): give the samples' rate in Hz."""


def transcribe(
    samples: np.ndarray,
    rate: int,
    heard_in: Vocabulary | Iterable[str] = (),
    hearing: Hearing = DEFAULT_HEARING,
) -> str:
    """What a caller said in int16 mono ``samples`` at ``rate``, heard as the nearest phrase a
    caller of a session with this vocabulary (or these tool names) may say; "" when nothing
    was heard. A failure of the recognizer is a ``RecognitionError`` naming its cause; the
    next call is heard afresh.

    ``hearing="whisper"`` hears free speech instead (Whisper, the ``whisper`` extra; without
    it a ``MissingExtraError`` names the install), the vocabulary its prompt, written as
    Whisper writes it ("Please remind me to water the plants.")."""
    if rate <= 0:
        raise SampleRateError(f"the audio's rate is {rate} Hz: give its sample rate, e.g. 24000")
    check_hearing(hearing)
    vocabulary = Vocabulary.of(heard_in)
    heard = _resample_to(np.asarray(samples, np.int16), rate, RECOGNITION_RATE)
    trimmed = _without_silence_around(heard)
    if not trimmed.size:
        return ""
    if hearing == "whisper":
        try:
            audio16k = _resample_to(trimmed, RECOGNITION_RATE, WHISPER_RATE)
            return hear_freely(audio16k, prompt_of(vocabulary))
        except Exception as e:
            raise RecognitionError(f"Whisper could not hear the audio: {e!r}") from e
    audio = trimmed.tobytes()
    try:
        with _ears.borrow() as ear:
            return ear.hear(audio, vocabulary)
    except RecognitionError:
        raise
    except Exception as e:
        raise RecognitionError(f"pocketsphinx could not hear the audio: {e!r}") from e


def _without_silence_around(samples: np.ndarray) -> np.ndarray:
    """``samples`` from 30 ms before the first loud 10 ms to 30 ms after the last: with no
    filler models the grammar has no word for silence, and a VAD's turn brings some (with
    100 ms kept, a fifth fewer phrases were heard word for word; a silence word or filler
    models in the grammar did worse still)."""
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


class _Ear:
    """One pocketsphinx decoder, one utterance at a time, with the grammars of the
    vocabularies it heard last."""

    def __init__(self) -> None:
        try:
            from pocketsphinx import Decoder
        except ImportError as e:  # a dependency: only a broken install lacks it
            raise RecognitionError("pocketsphinx is missing: pip install pocketsphinx") from e
        # No filler models between words: with them it took the end of a phrase for noise.
        # No lattice rescoring (bestpath): see the module's docstring. No noise removal: it
        # learns the noise from one utterance to the next, so the same audio was heard
        # differently after other speech.
        self._decoder = Decoder(
            samprate=RECOGNITION_RATE,
            loglevel="FATAL",
            fsgusefiller=False,
            bestpath=False,
            remove_noise=False,
        )
        self._searches: OrderedDict[Vocabulary, tuple[str, Grammar]] = OrderedDict()
        self._made = 0
        self._lone: set[str] = set()

    def hear(self, audio: bytes, vocabulary: Vocabulary) -> str:
        name, rules = self._search(vocabulary)
        hypothesis = self._decode(audio, name)
        if hypothesis is None:
            return ""
        heard = re.sub(r"\(\d+\)", "", hypothesis.hypstr)  # alternate pronunciations' marks
        alikes = rules.sound_alikes.get(heard, ())
        if alikes:
            fit = self._fit(audio, heard)
            if any(fit - self._fit(audio, other) < SOUND_ALIKE_MARGIN for other in alikes):
                return ""
        return rules.transcript(heard)

    def _decode(self, audio: bytes, search: str) -> Any:
        """The decoder's hypothesis (None: no phrase of the search fits the audio)."""
        decoder = self._decoder
        decoder.activate_search(search)
        # a fresh front end: its normalization would otherwise carry over from the last
        # utterance, and the same audio be heard differently after other speech
        decoder.reinit_feat()
        decoder.start_utt()
        decoder.process_raw(audio, full_utt=True)
        decoder.end_utt()
        return decoder.hyp()

    def _fit(self, audio: bytes, word: str) -> float:
        """How well ``word`` alone fits the audio: its log-likelihood per frame."""
        search = f"lone~{word}"
        if word not in self._lone:
            self._decoder.add_jsgf_string(
                search, f"#JSGF V1.0;\ngrammar lone;\npublic <word> = {word};\n"
            )
            self._lone.add(word)
        hypothesis = self._decode(audio, search)
        if hypothesis is None:
            return -math.inf
        frames = max(int(self._decoder.n_frames()), 1)
        return math.log(max(float(hypothesis.best_score), 1e-300)) / frames

    def _search(self, vocabulary: Vocabulary) -> tuple[str, Grammar]:
        """The decoder's search for ``vocabulary``, added (and the oldest dropped) if new."""
        if vocabulary in self._searches:
            self._searches.move_to_end(vocabulary)
            return self._searches[vocabulary]
        rules = grammar(vocabulary, self._pronunciations)
        for token, pronunciations in rules.tokens.items():
            for index, phones in enumerate(pronunciations):
                self._add(token if index == 0 else f"{token}({index + 1})", phones)
        self._made += 1
        name = f"caller{self._made}"
        self._decoder.add_jsgf_string(name, rules.jsgf)
        self._searches[vocabulary] = (name, rules)
        if len(self._searches) > _SEARCHES:
            _, (oldest, _) = self._searches.popitem(last=False)
            self._decoder.remove_search(oldest)
        return name, rules

    def _pronunciations(self, words: str) -> list[str]:
        """How ``words`` are said: the dictionary's ways for a word it has, then eSpeak
        NG's; a word only eSpeak can say is added to the dictionary."""
        known: list[str] = []
        if " " not in words:
            alternate = words
            while (phones := self._decoder.lookup_word(alternate)) is not None:
                known.append(phones)
                alternate = f"{words}({len(known) + 1})"
        espeak = pronunciation(words)
        if espeak and not known and " " not in words:
            self._add(words, espeak)
        return [*known, espeak] if espeak and espeak not in known else known

    def _add(self, word: str, phones: str) -> None:
        if self._decoder.lookup_word(word) is None:
            # no update: updating rebuilds the search, ~0.2 s a word; a new search reads it
            self._decoder.add_word(word, phones, False)


class _Ears:
    """At most ``size`` decoders, made when needed; a turn waits only while all are busy.
    A decoder that failed is dropped, so the next turn gets a fresh one."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._idle: list[_Ear] = []
        self._made = 0
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def borrow(self) -> Iterator[_Ear]:
        with self._changed:
            self._changed.wait_for(lambda: bool(self._idle) or self._made < self._size)
            ear = self._idle.pop() if self._idle else None
            if ear is None:
                self._made += 1
        try:
            if ear is None:
                ear = _Ear()
            yield ear
        except BaseException:
            with self._changed:
                self._made -= 1
                self._changed.notify()
            raise
        with self._changed:
            self._idle.append(ear)
            self._changed.notify()


_ears = _Ears(_EARS)
