"""Real-time factors of the offline speech components on this machine (goal: synthesis < 0.1).

The real-time factor is the time spent over the audio's duration, per phrase, medians over
``--repeats`` runs of several phrases (the first run of each, which loads the engine, is
left out).

    .venv/bin/python benchmarks/speech.py
"""

from __future__ import annotations

import argparse
import statistics
import time

from notebook_agents.speech import SAMPLE_RATE, synthesize

PHRASES = (
    "hello there",
    "transfer to billing",
    "transfer to weather please",
    "what is two plus three",
    "I would like to know the weather in Paris tomorrow morning, please",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    synthesize("warm up")
    factors: list[float] = []
    for _ in range(args.repeats):
        for phrase in PHRASES:
            started = time.perf_counter()
            samples = synthesize(phrase)
            factors.append((time.perf_counter() - started) / (samples.size / SAMPLE_RATE))
    print(
        f"synthesis (eSpeak NG, 24 kHz): median real-time factor {statistics.median(factors):.4f} "
        f"over {len(factors)} phrases (p90 {sorted(factors)[int(0.9 * len(factors))]:.4f})"
    )


if __name__ == "__main__":
    main()
