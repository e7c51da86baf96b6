"""What a caller of a session may say, as the JSGF grammar pocketsphinx searches, and how a
hypothesis in it is written as a transcript.

The grammar: greetings; the session's tools asked for by their names' words ("transfer to
billing"), with "can you" / "please" around them, each naming its arguments by voice
("lookup weather location Paris": a parameter's name, then its value); "what is 2 plus 3".
A text argument's value is a name of the session's vocabulary ("Paris", "New York": a
keyword, a short text) or, less likely, a word of its longer texts (its instructions); an
enum's value is one of its members, a number's a number word, a boolean's yes/no/true/false.
Numbers come back as digits, as the cloud APIs write them ("what is 2 plus 3"); arguments as
the reply rules read a typed one (``lookup weather location: Paris``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..errors import NotebookAgentsError

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

MAX_WORDS = 500
"""the most words of a vocabulary's longer texts (its instructions) a text argument may be"""
NAME_WORDS = 3
"""the most words a text of the vocabulary has to be a name ("New York"), a value whole"""

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
_NUMBER_VALUES = {**{word: i for i, word in enumerate(_NUMBER_WORDS)}, **_TENS}
_OPERATORS = ("plus", "minus", "times", "divided by")
_BOOLEANS = ("yes", "no", "true", "false")
_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the to of in on at by for from with about into and or but if is are was were be "
        "been am do does did have has had i me my you your we our us it its he she they them "
        "their this that these those what which who how when where why can could would should "
        "will shall may might must not no yes please up out as so than then there here",
    )
)
"""words no argument's value is: the words of longer texts leave them out"""
_NAME_WEIGHT = 5
"""how much likelier a text argument is a name of the vocabulary than another word of it"""
_SHORT = 3
"""a lone word of at most this many phones may be a sound-alike of another"""
_ARG, _VALUE, _CHOICE = "arg~", "val~", "opt~"
"""dictionary tokens of a spoken argument: its name, its value, an enum member"""

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
Kind = Literal["text", "number", "boolean", "choice"]
Pronounce = Callable[[str], list[str]]
"""a word's (or words') pronunciations in ARPAbet, the usual first; none if it cannot be said"""


@dataclass(frozen=True)
class Parameter:
    """A tool parameter a caller may give by voice: ``text`` (a name or word of the
    vocabulary), ``number`` (a number word), ``boolean`` (yes/no/true/false) or ``choice``
    (one of ``choices``, an enum's members, written back as they are)."""

    name: str
    kind: Kind = "text"
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Request:
    """A tool a caller may ask for by its name's words, naming its ``parameters``."""

    tool: str
    parameters: tuple[Parameter, ...] = ()


class VocabularyError(NotebookAgentsError, TypeError):
    """What a session's callers may say given as one string, where a ``Vocabulary`` or a list
    of tool names goes (``transcribe(..., heard_in=["transfer_to_billing"])``)."""


@dataclass(frozen=True)
class Vocabulary:
    """What a caller of a session may say: its tools (and their parameters), and free
    ``texts`` (instructions, descriptions, keywords, a prompt) whose names and words a text
    argument may be, written back as the texts write them ("Paris")."""

    requests: tuple[Request, ...] = ()
    texts: tuple[str, ...] = ()

    @classmethod
    def of(cls, heard: Vocabulary | Iterable[str]) -> Vocabulary:
        """``heard`` itself, or a vocabulary of these tool names (no parameters)."""
        if isinstance(heard, Vocabulary):
            return heard
        if isinstance(heard, str):
            raise VocabularyError(f"tool names are a list of names, not the string {heard!r}")
        return cls(requests=tuple(Request(name) for name in heard))


@dataclass(frozen=True)
class Grammar:
    """A vocabulary's JSGF grammar, the tokens it adds to the dictionary, and how a
    hypothesis in it is written."""

    jsgf: str
    tokens: dict[str, list[str]] = field(default_factory=dict)
    """an argument's dictionary tokens (``val~paris``) and their pronunciations"""
    written: dict[str, str] = field(default_factory=dict)
    """a token's text in the transcript (``val~paris`` -> ``Paris``)"""
    sound_alikes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """short lone words, and the lone words they may be a clipped or misheard form of: one
    phone from them, or from their end ("no" and "hello", "bye" and "goodbye", "hi")"""
    clipped: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """short lone words, and the longer lone words whose end they are ("bye": "goodbye")"""
    names: frozenset[str] = frozenset()
    """the value tokens that are names of the vocabulary ("Paris": a keyword, a capitalized
    run; an enum's members), likelier a caller's value than its other words ("done")"""

    def transcript(self, hypothesis: str, unheard: Collection[int] = ()) -> str:
        """A decoder's hypothesis written as a transcript (arguments as ``name: value``),
        without the arguments whose value is at an ``unheard`` position of it."""
        words: list[str] = []
        tokens = re.sub(r"\(\d+\)", "", hypothesis).split()  # alternates' marks
        left_out = {*unheard, *(i - 1 for i in unheard if tokens[i - 1].startswith(_ARG))}
        for token in (t for i, t in enumerate(tokens) if i not in left_out):
            if token.startswith(_ARG):
                words.append(f"{self.written[token]}:")
            elif token.startswith((_VALUE, _CHOICE)):
                value = self.written[token]
                words.append(f'"{value}"' if " " in value else value)
            else:
                words.append(token)
        return digits(" ".join(words))


def is_value(token: str) -> bool:
    """Whether a token of a hypothesis is an argument's value that is a word: a text's (a
    name or word of the vocabulary) or an enum's member (not a number nor a boolean)."""
    return token.startswith((_VALUE, _CHOICE))


def grammar(heard_in: Vocabulary | Iterable[str], pronounce: Pronounce) -> Grammar:
    """The grammar of what a caller of a session with this vocabulary (or these tool names)
    may say. A phrase with a word ``pronounce`` cannot say is left out: it always parses."""
    return _Builder(pronounce).build(Vocabulary.of(heard_in))


def spoken_words(name: str) -> list[str]:
    """An identifier's words as said: ``transfer_to_billing`` -> ``["transfer", "to",
    "billing"]``, ``lookupInvoice`` -> ``["lookup", "invoice"]``; lower case, letters only."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").lower()
    return re.findall(r"[a-z]+(?:'[a-z]+)?", words)


def digits(words: str) -> str:
    """Number words as digits: ``what is two plus thirty`` -> ``what is 2 plus 30``."""
    return " ".join(
        str(value) if (value := number_value(word)) is not None else word for word in words.split()
    )


def number_value(word: str) -> int | None:
    """The number a number word the grammar hears stands for (``five`` -> 5, ``thirty`` ->
    30; lower case, as the decoder says them), None for any other word: how a spoken number
    and a typed one are read alike."""
    return _NUMBER_VALUES.get(word)


class _Builder:
    def __init__(self, pronounce: Pronounce) -> None:
        self._pronounce = pronounce
        self._tokens: dict[str, list[str]] = {}
        self._written: dict[str, str] = {}
        self._names: list[str] = []

    def build(self, vocabulary: Vocabulary) -> Grammar:
        values = self._values(vocabulary.texts)
        rules: list[str] = []
        requests: dict[str, None] = {}
        lone = [g for g in GREETINGS if " " not in g]
        for index, request in enumerate(vocabulary.requests):
            words = spoken_words(request.tool)
            phrase = " ".join(words)
            if not words or not self._sayable(words) or phrase in requests:
                continue
            if len(words) == 1:
                lone.append(phrase)
            arguments = [
                f"({name} {value})"
                for parameter in request.parameters
                if (name := self._token(_ARG, spoken_words(parameter.name), parameter.name))
                and (value := self._value(parameter, values))
            ]
            if arguments:
                rules.append(f"<arguments{index}> = ({' | '.join(arguments)})+;")
                phrase += f" [<arguments{index}>]"
            requests[phrase] = None
        if values:
            rules.append(f"<value> = {values};")
        alternatives = [f"({r})" for r in [*requests, "what is <number> <operator> <number>"]]
        jsgf = "\n".join(
            [
                "#JSGF V1.0;",
                "grammar caller;",
                "public <utterance> = <greeting> | [<lead>] <request> [please];",
                f"<greeting> = {' | '.join(GREETINGS)};",
                f"<lead> = {' | '.join(_LEADS)};",
                f"<request> = {' | '.join(alternatives)};",
                f"<number> = {' | '.join([*_NUMBER_WORDS, *_TENS])};",
                f"<operator> = {' | '.join(_OPERATORS)};",
                *rules,
                "",
            ]
        )
        phones = {word: self._pronounce(word)[0].split() for word in lone}
        return Grammar(
            jsgf,
            self._tokens,
            self._written,
            _sound_alikes(phones),
            _clipped(phones),
            frozenset(self._names),
        )

    def _sayable(self, words: Iterable[str]) -> bool:
        return all(self._pronounce(word) for word in words)

    def _token(self, prefix: str, words: list[str], text: str) -> str | None:
        """A dictionary token said as ``words`` and written back as ``text``; None if it
        cannot be said."""
        each = [self._pronounce(word) for word in words]
        if not each or not all(each):
            return None
        name = prefix + "_".join(words)
        # the words' usual pronunciations in a row, then the other ways of saying them
        said = [" ".join(p[0] for p in each)]
        others = each[0][1:] if len(words) == 1 else self._pronounce(" ".join(words))
        self._tokens[name] = said + [p for p in others if p not in said]
        self._written.setdefault(name, text)
        return name

    def _values(self, texts: Iterable[str]) -> str:
        """The ``<value>`` rule's expansion: the vocabulary's names, then (less likely) its
        other words; "" when it has none."""
        names, words = (
            [t for s, text in found.items() if (t := self._value_token(s, text))]
            for found in _vocabulary_words(texts)
        )
        self._names = names
        groups = [tokens for tokens in (names, words) if tokens]
        if len(groups) < 2:
            return " | ".join(groups[0]) if groups else ""
        # a name is likelier a value than a word of the instructions ("Berlin" was heard as
        # "friendly" when they weighed the same)
        return f"/{_NAME_WEIGHT}/ ({' | '.join(groups[0])}) | /1/ ({' | '.join(groups[1])})"

    def _value_token(self, said: str, text: str) -> str | None:
        return self._token(_VALUE, said.split(), text)

    def _value(self, parameter: Parameter, values: str) -> str | None:
        """What a caller may say as ``parameter``'s value, a JSGF expansion (None: nothing)."""
        if parameter.kind == "number":
            return "<number>"
        if parameter.kind == "boolean":
            return f"({' | '.join(_BOOLEANS)})"
        if parameter.kind == "choice":
            choices = [
                name
                for choice in parameter.choices
                if (name := self._token(_CHOICE, spoken_words(choice), choice))
            ]
            self._names.extend(choices)
            return f"({' | '.join(choices)})" if choices else None
        return "<value>" if values else None


def _clipped(phones: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """Each short lone word's longer lone words (of ``phones``: each word's phones) that end
    in its phones ("goodbye" for "bye"): what a clipped start of them is heard as."""
    return _short_words_like(
        phones, lambda said, theirs: len(theirs) > len(said) and theirs[-len(said) :] == said
    )


def _sound_alikes(phones: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """Each short lone word's sound-alikes among the other lone words (of ``phones``)."""
    return _short_words_like(
        phones,
        lambda said, theirs: _one_apart(said, theirs) or _one_apart(said, theirs[-len(said) :]),
    )


def _short_words_like(
    phones: dict[str, list[str]], like: Callable[[list[str], list[str]], bool]
) -> dict[str, tuple[str, ...]]:
    """Each short word of ``phones`` (at most ``_SHORT`` phones) and the other words whose
    phones are ``like`` its own, if any."""
    found = {
        word: tuple(
            other for other, theirs in phones.items() if other != word and like(said, theirs)
        )
        for word, said in phones.items()
        if len(said) <= _SHORT
    }
    return {word: others for word, others in found.items() if others}


def _vocabulary_words(texts: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """What a text argument may be, lower case -> as written: the names, and the first
    ``MAX_WORDS`` other words (function words and the names' words left out; capitalized
    where a text capitalizes them other than to start a sentence).

    A name is a text of at most ``NAME_WORDS`` words and no punctuation (a keyword), a phrase
    of at most that many capitalized words between punctuation ("Paris, London"), or a run of
    capitalized words inside a sentence ("the weather in New York")."""
    names: dict[str, str] = {}
    words: dict[str, str] = {}

    def name(said: list[str]) -> None:
        names.setdefault(" ".join(said).lower(), " ".join(said))

    for text in texts:
        sentences = [s for s in re.split(r"[.!?\n]+", text) if _WORD.search(s)]
        for sentence in sentences:
            phrases = [p for p in re.split(r"[,;:()]+", sentence) if _WORD.search(p)]
            for index, phrase in enumerate(phrases):
                said = _WORD.findall(phrase)
                whole = len(sentences) == len(phrases) == 1
                if len(said) <= NAME_WORDS and (whole or all(w[0].isupper() for w in said)):
                    name(said)
                    continue
                first = 1 if index == 0 else 0  # a sentence's first word is capitalized anyway
                for run in re.findall(r"(?:[A-Z][a-z']*(?:\s+|$))+", " ".join(said[first:])):
                    if run.strip().lower() not in _FUNCTION_WORDS:
                        name(run.split())
                for position, word in enumerate(said):
                    lower = word.lower()
                    if lower in _FUNCTION_WORDS or (lower not in words and len(words) >= MAX_WORDS):
                        continue
                    if word != lower and position >= first:
                        words[lower] = word
                    else:
                        words.setdefault(lower, lower)
    in_names = {word for name in names for word in name.split()}
    return names, {w: text for w, text in words.items() if w not in in_names}


def _one_apart(a: list[str], b: list[str]) -> bool:
    """Whether two phone sequences differ by at most one substitution, insertion or deletion."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
