"""An independent ear for the tests: pocketsphinx, held to a few words, says what it hears."""

from __future__ import annotations

import numpy as np

from notebook_agents.speech import SAMPLE_RATE
from notebook_agents.speech.synthesis import _resample_to

EARS_RATE = 16_000
WORDS = ("transfer", "to", "billing", "weather", "hello", "there", "please", "what", "is")


def heard(samples: np.ndarray, rate: int = SAMPLE_RATE, words: tuple[str, ...] = WORDS) -> str:
    """The words pocketsphinx hears in int16 mono ``samples``, held to ``words``."""
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=EARS_RATE, loglevel="FATAL")
    decoder.add_jsgf_string(
        "words", f"#JSGF V1.0;\ngrammar words;\npublic <u> = ({' | '.join(words)})+;\n"
    )
    decoder.activate_search("words")
    decoder.start_utt()
    decoder.process_raw(_resample_to(samples, rate, EARS_RATE).tobytes(), full_utt=True)
    decoder.end_utt()
    hypothesis = decoder.hyp()
    return hypothesis.hypstr if hypothesis is not None else ""
