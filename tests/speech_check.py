"""An independent ear for the tests: pocketsphinx says which of a few phrases it hears.

eSpeak's voice varies a little from call to call (its noise, a pause a millisecond longer),
and free decoding of it is marginal; told the phrases it may hear, pocketsphinx tells them
apart reliably, which is what the tests ask: is this audio that sentence, not another.
"""

from __future__ import annotations

import numpy as np

from notebook_agents.speech import SAMPLE_RATE
from notebook_agents.speech.resampling import resample

EARS_RATE = 16_000
PHRASES = (
    "transfer to billing",
    "transfer to weather please",
    "hello there",
    "what is two plus three",
)


def heard(samples: np.ndarray, among: tuple[str, ...] = PHRASES, rate: int = SAMPLE_RATE) -> str:
    """Which of ``among`` pocketsphinx hears in int16 mono ``samples`` ("" if none)."""
    from pocketsphinx import Decoder

    # no filler models between words: with them it took the end of a phrase for noise
    decoder = Decoder(samprate=EARS_RATE, loglevel="FATAL", fsgusefiller=False)
    decoder.add_jsgf_string(
        "phrases", f"#JSGF V1.0;\ngrammar phrases;\npublic <u> = {' | '.join(among)};\n"
    )
    decoder.activate_search("phrases")
    decoder.start_utt()
    decoder.process_raw(resample(samples, rate, EARS_RATE).tobytes(), full_utt=True)
    decoder.end_utt()
    hypothesis = decoder.hyp()
    return hypothesis.hypstr if hypothesis is not None else ""


def envelope_match(a: np.ndarray, b: np.ndarray, window: int = SAMPLE_RATE // 40) -> float:
    """How alike two recordings' loudness over time is (Pearson's r of their 25 ms RMS
    envelopes, over the shorter): near 1 for the same speech, low for other speech."""
    count = min(a.size, b.size) // window

    def envelope(x: np.ndarray) -> np.ndarray:
        frames = x[: count * window].astype(np.float64).reshape(count, window)
        return np.asarray(np.sqrt((frames**2).mean(axis=1)), dtype=np.float64)

    return float(np.corrcoef(envelope(a), envelope(b))[0, 1])
