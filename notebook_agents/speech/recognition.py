"""Speech recognition offline: pocketsphinx (its en-US model is inside the wheel) told what a
caller of this session may say.

Free decoding of synthetic speech is poor ("transfer to weather please" -> "so when the
lease"); the session's grammar (``grammar.py``: its tools, their arguments, greetings,
arithmetic) decodes it, and a caller is heard as the nearest phrase of that grammar, which is
what a rule-based emulator can answer anyway. Every word is pronounceable: one the dictionary
lacks ("greeter") is pronounced by eSpeak NG (``pronunciation.py``).

Only a whole phrase is heard, and rather nothing than a wrong one (nor a wrong argument):

- no lattice rescoring (``bestpath``): its best path ignores where the grammar ends, so a lone
  "hello" came back as the start of a request ("can you") and "hi" as nothing;
- a short lone word with a sound-alike among the lone words ("no" and "hello", "bye" and
  "goodbye" and "hi") is heard only if it fits the audio clearly better than each of them
  alone (``SOUND_ALIKE_MARGIN``): in eSpeak's voices pocketsphinx hears "hi" as "bye" and
  back, a soft-spoken "hello" as "no"; and a clipped "goodbye" as "bye", so a "bye" that
  "goodbye" fits nearly as well, and best of its sound-alikes, is heard as "goodbye";
- a phrase is heard only if a free loop of phones fits the turn not much better than it, on
  its own words' frames (``PHRASE_MARGIN``, ``_Check``): the grammar hears any audio as its
  nearest phrase ("the library closes early during the winter holidays" as "let's what is 2
  times 40 please"); its values are left to the next check, so a value no agent wrote leaves
  its argument out, not the phrase unheard;
- an argument's value (a text's, an enum's member) is heard only if no common English word
  fits its stretch of audio clearly better (``NAME_MARGIN``, ``_Check``): the grammar
  hears any value as the vocabulary's nearest, so a city no agent wrote ("Paris") was heard as
  a word of their instructions ("done"), and a unit no enum lists ("kelvin") as one of its
  members ("celsius"), and the tool ran with it; now its argument is left out, name and all.
  A name may fit worse than a common word and be right (eSpeak's Paris), so each value is
  held to what it falls short on eSpeak's own saying of it (``OWN_TOLERANCE``): a city that
  sounds like one of the vocabulary's ("Nairobi" and "Tokyo") passed before, and rarely does
  now.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ..errors import NotebookAgentsError
from .grammar import Grammar, Vocabulary, grammar, is_value
from .hearing import DEFAULT_HEARING, Hearing, check_hearing
from .pronunciation import pronunciation
from .resampling import resample
from .synthesis import SAMPLE_RATE, synthesize
from .whisper import WHISPER_RATE, hear_freely, prompt_of

RECOGNITION_RATE = 16_000
"""the rate pocketsphinx's en-US model hears at"""
SOUND_ALIKE_MARGIN = 1.2e-3
"""how much better (log-likelihood per 10 ms frame, as pocketsphinx scores) a short lone word
must fit the audio than each sound-alike to be heard. Measured on eSpeak's three voices, 10
calls each: "no" fits 1.13 to 2.77 better than "hello" when said, "hello" said fits "no" at
most 0.44 better; "bye" said fits 2.5 better than "goodbye", "goodbye" said fits "bye" at most
0.65 better; "hi" and "bye" are never 1.0 apart, whichever was said, so neither is heard"""
NAME_MARGIN = 2.25e-3
"""how much better (log-likelihood per 10 ms frame, every senone scored so that two searches'
scores compare) the best of ``COMMON_WORDS`` words may fit a value's stretch of audio than
the value itself, when the value is a name of the vocabulary ("Paris", an enum's member), for
it to be heard; ``WORD_MARGIN`` when it is another word of it ("done"), which a caller says far less
often as a value (the grammar weighs names 5 to 1 too). Measured on "lookup weather location
<city>", 26 cities, eSpeak's three voices at 160 and 190 words a minute, each city in the
vocabulary and (21 of them) not:
- of 150 cities in it, 146 are heard; eSpeak's Paris fits badly (0.7 to 1.8 worse than the
  best word in the American voice, whatever the phrase), London and Tokyo best of all;
- of 126 cities not in it, which the grammar heard as one of its values, 56 as a word ("Paris"
  as "done", 1.1 to 1.6 worse) and 70 as a name: no word is heard now, and 16 names still
  were, each a city that sounds alike (Cairo and Nairobi as "Tokyo", Vienna as "London"),
  until ``OWN_TOLERANCE``.
An enum's members, "set option level <member>" with five enums of two or three members and
two values outside each, the same voices and speeds: of 72 members said, 60 are heard and 12
left out (eSpeak's "red" fits "meant" 2.7 better); of 54 values outside, 8 are still heard as a
member ("purple" as "blue": its first syllable's frames), against 49 without the check."""
WORD_MARGIN = 0.5e-3
OWN_TOLERANCE = 0.5e-3
"""how much more than its own shortfall a value may fit a turn worse than the best common
word (and never more than ``NAME_MARGIN`` or ``WORD_MARGIN``). Its shortfall is how much
better that word fits eSpeak's own saying of the value alone (``OWN_VOICES``, the median;
none when the value fits best), measured once per value (~0.1 s). A name pocketsphinx fits
badly however it is said (eSpeak's Paris, 1.4 to 2.9 short) keeps about ``NAME_MARGIN``; one
it fits best (London, Tokyo) is heard only if it fits nearly best, so a city that sounds like
it (Cairo, Nairobi) no longer passes. Measured on "lookup weather location <city>", 30 cities
in 6 vocabularies of 5, the three voices at 160 and 190 words a minute: of 169 cities said
that the vocabulary holds, 149 are heard (161 with the margins alone); of 837 values heard
that were not said, 22 pass (129). On 30 other cities in 3 other voices (British RP, a male
American, Caribbean): 58 of 64 heard (63), 6 of 272 wrong pass (38). 0.25e-3 let 9 of the
837 pass and heard 141; 0.75e-3, 37 and 153"""
OWN_VOICES = ("en-us", "en", "en-us+f3")
"""eSpeak's voices a value's own shortfall is measured in: its American, British and a
female voice"""
COMMON_WORDS = 10_000
"""how many of English's commonest words a value competes with (the likeliest, on their
own, of pocketsphinx's en-US language model). Measured: 6000 let a few more cities be heard
as another (10 of 126 at 1.25e-3 for a name, against 8), 15000 did no better. Their search is
built once per process, with the first value heard: 0.7 s more for that phrase, 0.34 s of it
holding Python's GIL; then a phrase with a value takes ~0.05 s more (0.09 s, against 0.035)"""
PHRASE_MARGIN = 2.75e-3
"""how much better (log-likelihood per 10 ms frame, every senone scored) a free loop of phones
may fit a turn than the phrase the grammar heard in it, on the phrase's own words' frames (its
values' left out), for the phrase to be heard; ``PHRASE_SLACK`` more over its frames.
Measured (stepped, as heard) on benchmarks/speech.py's 54 phrases and 6 free sentences
(tests/speech/free_speech.py, in three vocabularies), eSpeak's three voices, clean, telephone
and street lines, two takes: 1188 turns. The phrases heard word for word (576) fit the phones
at most 3.8e-3 worse (the female voice's "transfer to concierge" on the telephone line, 139
frames; eSpeak's British "thanks", 45 frames, 3.9e-3); the free sentences (324), heard as some
phrase, 3.6e-3 to 7.8e-3 worse (the longest, 381 frames, least). The starting 3.9e-3 and 40e-3
let 28 of the free sentences be heard; this pair none, the nearest of each 0.25e-3 from the
line (takes of a phrase moved by about 0.2e-3 while synthesis varied). A wrong phrase near
the one said ("what is 2 minus 4" for twelve minus four) fits as well as the right one: 79 of
84 are still heard."""
PHRASE_SLACK = 190e-3
"""added to ``PHRASE_MARGIN`` over the phrase's frames: a short phrase fits a phone loop worse
for its few frames (eSpeak's British "thanks", half a second, 3.5e-3 to 4.5e-3 worse), a long
one's words average out"""
_FRAME_BYTES = 2 * RECOGNITION_RATE // 100
"""a 10 ms frame of int16 audio, the decoder's step"""
_STEP_BYTES = 10 * _FRAME_BYTES
"""how much audio the check decodes while holding Python's GIL: 100 ms"""
_BEAM = 1e-30
_WORD_BEAM = 1e-20
"""the check's beams: every word is scored to its end, so the best is found (a pruned word
fits worse than it would)"""
_PHRASE_BEAM = 1e-60
"""a phrase's beams, wider still: its one path must reach its end, and where the audio is not
the phrase its path fits far worse than a partial one stuck in a word (with the value
searches' beams, "lookup weather location greeter please" and a telephone line's "lookup
weather location friendly" had no path to their end, and were heard as nothing)"""
_PHONES = "phones"
_PHRASE = "phrase"
_LEXICON = "common-words"
_COMMON_WORDS_FILE = "common_words.txt"
_VALUE_SEARCHES = 64
"""values whose own one-word search the value check keeps ready, the most recently used"""
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
    heard = resample(samples, rate, RECOGNITION_RATE)
    trimmed = _without_silence_around(heard)
    if not trimmed.size:
        return ""
    if hearing == "whisper":
        try:
            audio16k = resample(trimmed, RECOGNITION_RATE, WHISPER_RATE)
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


def _new_decoder(**options: Any) -> Any:
    """A pocketsphinx decoder as every search here wants it, with these ``options`` more.

    No filler models between words: with them it took the end of a phrase for noise. No
    lattice rescoring (bestpath): see the module's docstring. No noise removal: it learns the
    noise from one utterance to the next, so the same audio was heard differently after other
    speech."""
    try:
        from pocketsphinx import Decoder
    except ImportError as e:  # a dependency: only a broken install lacks it
        raise RecognitionError("pocketsphinx is missing: pip install pocketsphinx") from e
    return Decoder(
        samprate=RECOGNITION_RATE,
        loglevel="FATAL",
        fsgusefiller=False,
        bestpath=False,
        remove_noise=False,
        **options,
    )


def _decode(decoder: Any, audio: bytes, search: str) -> Any:
    """``decoder``'s hypothesis of the whole ``audio`` in ``search`` (None: nothing of the
    search fits it)."""
    decoder.activate_search(search)
    # a fresh front end: its normalization would otherwise carry over from the last
    # utterance, and the same audio be heard differently after other speech
    decoder.reinit_feat()
    decoder.start_utt()
    decoder.process_raw(audio, full_utt=True)
    decoder.end_utt()
    return decoder.hyp()


@dataclass(frozen=True)
class _Word:
    """A word of a decoding's best path, alternates' marks removed, and its first and last
    10 ms frame."""

    token: str
    first: int
    last: int


@functools.cache
def common_words() -> tuple[str, ...]:
    """English's ``COMMON_WORDS`` commonest words, commonest first: the words of pocketsphinx's
    dictionary its en-US language model (inside the wheel, trained on ordinary English) finds
    likeliest on their own. Shipped as ``common_words.txt``, derived once from the wheel (a
    test derives it again), because reading the model takes 0.75 s and 18 MB."""
    text = resources.files(__package__).joinpath(_COMMON_WORDS_FILE).read_text("utf-8")
    return tuple(text.split())


class _Check:
    """Whether what the grammar heard is what was said, judged on a decoder of its own that
    scores every senone in every frame, so that two searches' fits compare (a decoder scores
    against the best senone its search reached, which differs between searches): a value, by
    how much better the best of English's commonest words fits its frames; a phrase, by how
    much better a free loop of phones fits the turn."""

    def __init__(self) -> None:
        self._decoder = _new_decoder(
            compallsen=True, lm=None, beam=_BEAM, wbeam=_WORD_BEAM, pbeam=_BEAM
        )
        self._decoder.add_allphone_file(_PHONES, None)  # no phone language model: any phone
        self._lexicon = False
        self._values: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def value_heard(
        self, audio: bytes, token: str, written: str, pronunciations: list[str], margin: float
    ) -> bool:
        """Whether the value ``token`` (said as ``pronunciations``, written ``written``) fits
        ``audio``, its own frames, within ``margin`` of the best common word, and within
        what it falls short of that word on eSpeak's own saying of it (``OWN_TOLERANCE``
        more)."""
        with self._lock:
            if not self._lexicon:
                # built at the first value, not the first phrase: a flat word list, not a
                # JSGF text (parsing 10000 alternatives held Python's GIL for 1.3 s), builds in
                # 0.6 s (0.34 s held)
                self._add_word_list(_LEXICON, common_words())
                self._lexicon = True
            search, own = self._value_search(token, written, pronunciations)
            value = self._fit(audio, search)
            best = self._fit(audio, _LEXICON)
        return best - value <= min(margin, own)

    def phrase_heard(self, audio: bytes, words: Sequence[tuple[str, list[str]]]) -> bool:
        """Whether the phrase of ``words`` (each token and its pronunciations, as the grammar
        heard them in ``audio``, the whole turn) fits the turn within ``PHRASE_MARGIN`` (and
        ``PHRASE_SLACK`` over its frames) of a free loop of phones: judged on the frames of
        its own words, its values' left out (the value check judges them: a value no agent
        wrote fits badly, and its argument is left out, not the phrase)."""
        with self._lock:
            search = self._phrase_search(words)
            mean = self._cepstral_mean(audio)
            phrase = self._segments(audio, search, mean)
            phones = self._segments(audio, _PHONES, mean)
        if not phrase:
            return False
        values = [(first, last) for token, first, last, _ in phrase if is_value(token)]
        frames = sum(last - first + 1 for _, first, last, _ in phrase) - sum(
            last - first + 1 for first, last in values
        )
        if frames <= 0:
            return False
        phrase_fit = sum(fit for token, _, _, fit in phrase if not is_value(token)) / frames
        phones_fit = sum(fit * _outside(first, last, values) for _, first, last, fit in phones)
        return phones_fit / frames - phrase_fit <= PHRASE_MARGIN + PHRASE_SLACK / frames

    def _segments(self, audio: bytes, search: str, mean: str) -> list[tuple[str, int, int, float]]:
        """The best path of ``search`` over ``audio``, fed in ``_STEP_BYTES`` steps so that
        other threads run between them (pocketsphinx holds Python's GIL while it decodes),
        normalized by the whole turn's cepstral ``mean`` as a decoding in one piece would be:
        each word's token (alternates' marks removed), first and last frame and acoustic
        log-likelihood; [] when nothing of it fits."""
        decoder = self._decoder
        decoder.activate_search(search)
        decoder.reinit_feat()
        decoder.set_cmn(mean)
        decoder.start_utt()
        for start in range(0, len(audio), _STEP_BYTES):
            decoder.process_raw(audio[start : start + _STEP_BYTES])
        decoder.end_utt()
        if decoder.hyp() is None:
            return []
        return [
            (
                re.sub(r"\(\d+\)$", "", s.word),
                s.start_frame,
                s.end_frame,
                math.log(max(float(s.ascore), 1e-300)),
            )
            for s in decoder.seg()
            if s.end_frame >= s.start_frame
        ]

    def _cepstral_mean(self, audio: bytes) -> str:
        """The cepstral mean of the whole ``audio``, from its features alone (no search)."""
        decoder = self._decoder
        decoder.activate_search(_PHONES)  # an utterance starts only with a search active
        decoder.reinit_feat()
        decoder.start_utt()
        decoder.process_raw(audio, no_search=True, full_utt=True)
        decoder.end_utt()
        return str(decoder.get_cmn(False))

    def _fit(self, audio: bytes, search: str) -> float:
        """How well ``search``'s best path fits the audio: its acoustic log-likelihood per
        frame (-inf when nothing of it does)."""
        decoder = self._decoder
        if _decode(decoder, audio, search) is None:
            return -math.inf
        fit = sum(math.log(max(float(s.ascore), 1e-300)) for s in decoder.seg())
        return fit / max(int(decoder.n_frames()), 1)

    def _add_word_list(self, search: str, words: Iterable[str]) -> None:
        """A search that hears any one of ``words``, alone."""
        fsg = self._decoder.create_fsg(search, 0, 1, [(0, 1, 1.0, word) for word in words])
        self._decoder.add_fsg(search, fsg)

    def _add(self, token: str, pronunciations: list[str]) -> None:
        for index, phones in enumerate(pronunciations):
            word = token if index == 0 else f"{token}({index + 1})"
            if self._decoder.lookup_word(word) is None:
                self._decoder.add_word(word, phones, False)

    def _phrase_search(self, words: Sequence[tuple[str, list[str]]]) -> str:
        """A search that hears these words in a row and nothing else (each in any of its
        pronunciations: an FSG search takes a word's alternates too)."""
        for token, pronunciations in words:
            self._add(token, pronunciations)
        chain = [(index, index + 1, 1.0, token) for index, (token, _) in enumerate(words)]
        # one search, made anew for each phrase: a chain of a few words builds in well under
        # a millisecond
        fsg = self._decoder.create_fsg(_PHRASE, 0, len(chain), chain)
        # pocketsphinx reads a search's beams from the config when it makes the search
        config = self._decoder.config
        for beam in ("beam", "pbeam", "wbeam"):
            config[beam] = _PHRASE_BEAM
        try:
            self._decoder.add_fsg(_PHRASE, fsg)
        finally:
            config["beam"] = config["pbeam"] = _BEAM
            config["wbeam"] = _WORD_BEAM
        return _PHRASE

    def _value_search(
        self, token: str, written: str, pronunciations: list[str]
    ) -> tuple[str, float]:
        """The value's one-word search, and how much worse than the best common word it may
        fit a turn: its own shortfall (``OWN_TOLERANCE`` more), measured once."""
        search = f"value~{token}"
        if token in self._values:
            self._values.move_to_end(token)
            return search, self._values[token]
        self._add(token, pronunciations)
        self._add_word_list(search, [token])
        shortfalls = sorted(
            self._fit(said, _LEXICON) - self._fit(said, search)
            for said in (_said(written, voice) for voice in OWN_VOICES)
        )
        self._values[token] = max(shortfalls[len(shortfalls) // 2], 0.0) + OWN_TOLERANCE
        if len(self._values) > _VALUE_SEARCHES:
            oldest, _ = self._values.popitem(last=False)
            self._decoder.remove_search(f"value~{oldest}")
        return search, self._values[token]


def _said(text: str, voice: str) -> bytes:
    """``text`` said by eSpeak in ``voice``, as the check hears a turn."""
    samples = resample(synthesize(text, voice=voice), SAMPLE_RATE, RECOGNITION_RATE)
    return _without_silence_around(samples).tobytes()


def _outside(first: int, last: int, spans: list[tuple[int, int]]) -> float:
    """The share of the frames ``first`` to ``last`` outside ``spans``: a phone straddling a
    value's edge counts for its frames on the phrase's side (a phone is a few frames, so this
    errs by at most a fraction of one)."""
    inside = sum(max(0, min(last, end) - max(first, start) + 1) for start, end in spans)
    return 1.0 - inside / (last - first + 1)


_check: _Check | None = None
_making_check = threading.Lock()


def _the_check() -> _Check:
    """The process's check, made on first use (it holds an acoustic model, ~90 MB)."""
    global _check
    with _making_check:
        if _check is None:
            _check = _Check()
        return _check


class _Ear:
    """One pocketsphinx decoder, one utterance at a time, with the grammars of the
    vocabularies it heard last."""

    def __init__(self) -> None:
        self._decoder = _new_decoder()
        self._searches: OrderedDict[Vocabulary, tuple[str, Grammar]] = OrderedDict()
        self._made = 0
        self._lone: set[str] = set()

    def hear(self, audio: bytes, vocabulary: Vocabulary) -> str:
        name, rules = self._search(vocabulary)
        if _decode(self._decoder, audio, name) is None:
            return ""
        words = self._words()
        heard = " ".join(word.token for word in words)
        alikes = rules.sound_alikes.get(heard, ())
        if alikes:
            heard = self._lone_word(audio, heard, alikes, rules.clipped.get(heard, ()))
            if not heard:
                return ""
        check = _the_check()
        if not check.phrase_heard(audio, [(word.token, self._known(word.token)) for word in words]):
            return ""
        unheard = [
            index
            for index, word in enumerate(words)
            if is_value(word.token)
            and not check.value_heard(
                audio[word.first * _FRAME_BYTES : (word.last + 1) * _FRAME_BYTES],
                word.token,
                rules.written[word.token],
                rules.tokens[word.token],
                NAME_MARGIN if word.token in rules.names else WORD_MARGIN,
            )
        ]
        return rules.transcript(heard, unheard)

    def _lone_word(
        self, audio: bytes, heard: str, alikes: tuple[str, ...], clipped: tuple[str, ...]
    ) -> str:
        """The short lone word ``heard``, if it fits the audio clearly better than each of its
        sound-alikes; else, when the best of them (which then fits nearly as well) is a longer
        word ``heard`` is the clipped end of, that one ("goodbye", eSpeak's often heard as
        "bye"); else "" (nothing)."""
        fits = {word: self._fit(audio, word) for word in (heard, *alikes)}
        if all(fits[heard] - fits[other] >= SOUND_ALIKE_MARGIN for other in alikes):
            return heard
        best = max(alikes, key=fits.__getitem__)
        return best if best in clipped else ""

    def _words(self) -> list[_Word]:
        """The words of the last decoding's best path."""
        return [
            _Word(re.sub(r"\(\d+\)$", "", segment.word), segment.start_frame, segment.end_frame)
            for segment in self._decoder.seg()
            if segment.word != "(NULL)" and segment.end_frame >= segment.start_frame
        ]

    def _fit(self, audio: bytes, word: str) -> float:
        """How well ``word`` alone fits the audio: its log-likelihood per frame."""
        search = f"lone~{word}"
        if word not in self._lone:
            self._decoder.add_jsgf_string(
                search, f"#JSGF V1.0;\ngrammar lone;\npublic <word> = {word};\n"
            )
            self._lone.add(word)
        hypothesis = _decode(self._decoder, audio, search)
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
        known = self._known(words) if " " not in words else []
        espeak = pronunciation(words)
        if espeak and not known and " " not in words:
            self._add(words, espeak)
        return [*known, espeak] if espeak and espeak not in known else known

    def _known(self, word: str) -> list[str]:
        """The dictionary's ways of saying ``word`` (a grammar's token too), the usual first."""
        known: list[str] = []
        alternate = word
        while (phones := self._decoder.lookup_word(alternate)) is not None:
            known.append(phones)
            alternate = f"{word}({len(known) + 1})"
        return known

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
