"""How well speech was heard: the word error rate, as speech recognition is scored (the word
edits that make what was heard into what was said, over the words said)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import NotebookAgentsError
from .grammar import digits


class NothingSaidError(NotebookAgentsError, ValueError):
    """A word error rate asked of pairs in which nothing was said: it counts errors per word
    said, so give at least one pair whose ``said`` has words."""


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def spoken_form(text: str) -> list[str]:
    """``text``'s words as compared: lower case, no punctuation, number words as digits (a
    recognizer writes "two" or "2", either is right)."""
    return digits(" ".join(_WORD.findall(text.lower()))).split()


def word_error_rate(pairs: Iterable[tuple[str, str]]) -> float:
    """The word error rate of ``(said, heard)`` pairs: substituted, deleted and inserted words
    over the words said, all pairs counted together (0.0 is word for word; it can pass 1.0
    when more was heard than said)."""
    errors = said_words = 0
    for said, heard in pairs:
        reference, hypothesis = spoken_form(said), spoken_form(heard)
        errors += _edits(reference, hypothesis)
        said_words += len(reference)
    if said_words == 0:
        raise NothingSaidError(
            "nothing was said: give at least one (said, heard) pair whose said has words"
        )
    return errors / said_words


def _edits(reference: list[str], hypothesis: list[str]) -> int:
    """The fewest word substitutions, deletions and insertions (Levenshtein, by rows)."""
    row = list(range(len(hypothesis) + 1))
    for i, said in enumerate(reference, start=1):
        previous, row[0] = row[:], i
        for j, heard in enumerate(hypothesis, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (said != heard))
    return row[-1]
