"""Free-form hearing's costs on this machine: Whisper tiny.en (``hearing="whisper"``, the
``whisper`` extra) against the grammar (pocketsphinx, the default).

- memory: the process's resident set before faster-whisper is imported, after, and after the
  model is loaded (the growth is what ``hearing="whisper"`` costs a kernel or an emulator);
- time: the load, then the real-time factor of each clip (recognition time over the clip's
  duration), median and p90 over ``--repeats`` runs;
- accuracy: the word error rate over a corpus of free sentences (none of them a phrase of the
  grammar), each said in eSpeak's three voices, heard by Whisper with and without the
  session's words as its prompt, and by the grammar.

    .venv/bin/python benchmarks/whisper.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import psutil

from notebook_agents.speech import SAMPLE_RATE, Hearing, Vocabulary, synthesize, transcribe
from notebook_agents.speech import word_error_rate as wer
from notebook_agents.speech.whisper import whisper_model

SENTENCES = (
    "i would like to change my appointment to next tuesday afternoon please",
    "the library closes early during the winter holidays",
    "the train to the airport was delayed by heavy snow",
    "please remind me to water the tomato plants tonight",
    "my grandmother bakes bread with walnuts every sunday morning",
    "could you send the blue sweater back to the store",
    "our flight leaves early tomorrow morning",
    "the children built a sandcastle near the water",
    "she painted the kitchen a bright shade of yellow",
    "we should buy fresh oranges at the market",
)
VOICES = ("en-us", "en", "en-us+f3")
SESSION = Vocabulary.of(["transfer_to_billing", "lookup_weather", "book_appointment"])
"""the session's words: tools a caller of an appointments agent might be offered"""
RECOGNIZERS: tuple[tuple[str, Vocabulary, Hearing], ...] = (
    ("whisper", Vocabulary(), "whisper"),
    ("whisper, prompted", SESSION, "whisper"),
    ("grammar", SESSION, "grammar"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    process = psutil.Process()
    before = process.memory_info().rss
    started = time.perf_counter()
    import faster_whisper  # noqa: F401

    imported = process.memory_info().rss
    imported_at = time.perf_counter()
    whisper_model()
    loaded = process.memory_info().rss
    loaded_at = time.perf_counter()
    mb = 1024 * 1024
    print(
        f"memory: RSS {before / mb:.0f} MB before; +{(imported - before) / mb:.0f} MB importing "
        f"faster-whisper ({imported_at - started:.2f} s); +{(loaded - imported) / mb:.0f} MB "
        f"loading tiny.en int8 ({loaded_at - imported_at:.2f} s)"
    )
    clips = [(s, synthesize(s, voice=v)) for s in SENTENCES for v in VOICES]
    factors: dict[str, list[float]] = {name: [] for name, _, _ in RECOGNIZERS}
    heard: dict[str, list[tuple[str, str]]] = {name: [] for name in factors}
    for _ in range(args.repeats):
        for said, samples in clips:
            seconds = samples.size / SAMPLE_RATE
            for name, words, hearing in RECOGNIZERS:
                began = time.perf_counter()
                text = transcribe(samples, SAMPLE_RATE, words, hearing=hearing)
                factors[name].append((time.perf_counter() - began) / seconds)
                heard[name].append((said, text))
    said_words = sum(len(s.split()) for s, _ in clips)
    print(f"corpus: {len(SENTENCES)} sentences x {len(VOICES)} voices ({said_words} words)")
    for name in factors:
        print(
            f"{name}: word error rate {wer(heard[name]):.1%}; "
            + _factors(factors[name])
            + f"; word for word {sum(wer([p]) == 0 for p in heard[name])}/{len(heard[name])}"
        )
    print(f"load average: {', '.join(f'{x:.1f}' for x in psutil.getloadavg())}")


def _factors(factors: Sequence[float]) -> str:
    p90 = sorted(factors)[int(0.9 * len(factors))]
    return f"real-time factor median {statistics.median(factors):.2f} (p90 {p90:.2f})"


if __name__ == "__main__":
    main()
