"""``common_words.txt``, the words a heard text value competes with, is what pocketsphinx's
installed wheel makes of it: its dictionary's plain words, the likeliest of its en-US language
model first. Run this file (``python -m tests.speech.test_common_words``) to write it again."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from pocketsphinx import NGramModel, get_model_path

from notebook_agents.speech.recognition import COMMON_WORDS, common_words

PLAIN_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
"""a dictionary word a caller may say (not "a.m." nor "'bout")"""


def derived(count: int = COMMON_WORDS) -> list[str]:
    """The ``count`` commonest plain words of pocketsphinx's dictionary, by the unigram
    probability of its en-US language model (ties in alphabetical order)."""
    model = Path(get_model_path(), "en-us")
    with (model / "cmudict-en-us.dict").open() as dictionary:
        words = {re.sub(r"\(\d+\)$", "", line.split(maxsplit=1)[0]) for line in dictionary}
    language = NGramModel.readfile(str(model / "en-us.lm.bin"))
    plain = (word for word in words if PLAIN_WORD.fullmatch(word))
    return sorted(plain, key=lambda word: (-language.prob([word]), word))[:count]


def test_the_shipped_common_words_are_the_installed_models_commonest() -> None:
    shipped = common_words()
    assert len(shipped) == COMMON_WORDS
    assert shipped[:5] == ("the", "to", "i", "and", "a")
    assert list(shipped) == derived(), (
        "pocketsphinx's model changed: python -m tests.speech.test_common_words writes "
        "notebook_agents/speech/common_words.txt again"
    )


if __name__ == "__main__":
    shipped = resources.files("notebook_agents.speech").joinpath("common_words.txt")
    Path(str(shipped)).write_text("\n".join(derived()) + "\n", encoding="utf-8")
