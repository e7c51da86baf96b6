"""Real-time factors and accuracy of the offline speech components on this machine (goals:
recognition < 0.3, synthesis < 0.1).

The real-time factor is the time spent over the audio's duration, per phrase, medians over
``--repeats`` runs of several phrases (the first run of each, which loads the engine, is
left out). Recognition hears eSpeak's voice saying what a caller of the handoff agents says,
with the grammar of those agents' tools; accuracy is the share heard word for word.

    .venv/bin/python benchmarks/speech.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from notebook_agents.speech import SAMPLE_RATE, synthesize, transcribe
from notebook_agents.speech.recognition import digits

TOOLS = ("transfer_to_billing", "transfer_to_concierge", "get_weather", "lookupInvoice")
CALLERS = (
    "hello there",
    "thank you",
    "transfer to billing",
    "transfer to billing please",
    "can you transfer to concierge",
    "i would like to transfer to billing",
    "get weather",
    "could you get weather please",
    "lookup invoice",
    "please lookup invoice",
    "what is two plus three",
    "what is seven times eight",
    "what is twelve minus four",
    "what is forty divided by five",
    "what is nineteen plus sixty",
    "what is one times zero",
)
VOICES = ("en-us", "en", "en-us+f3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    synthesize("warm up")
    transcribe(synthesize("hello"), SAMPLE_RATE, TOOLS)
    synthesis: list[float] = []
    recognition: list[float] = []
    misheard: dict[str, list[str]] = {}
    trials = 0
    for _ in range(args.repeats):
        for voice in VOICES:
            for phrase in CALLERS:
                started = time.perf_counter()
                samples = synthesize(phrase, voice=voice)
                synthesized = time.perf_counter()
                heard = transcribe(samples, SAMPLE_RATE, TOOLS)
                heard_at = time.perf_counter()
                seconds = samples.size / SAMPLE_RATE
                synthesis.append((synthesized - started) / seconds)
                recognition.append((heard_at - synthesized) / seconds)
                trials += 1
                if heard != digits(phrase):
                    misheard.setdefault(f"{phrase} ({voice})", []).append(heard)
    print(_line("synthesis (eSpeak NG, 24 kHz)", synthesis))
    print(_line("recognition (pocketsphinx, caller grammar)", recognition))
    wrong = sum(len(h) for h in misheard.values())
    print(f"recognition accuracy: {trials - wrong}/{trials} heard word for word")
    for said, heard_as in misheard.items():
        print(f"  {said!r} heard as {sorted(set(heard_as))}")


def _line(what: str, factors: Sequence[float]) -> str:
    p90 = sorted(factors)[int(0.9 * len(factors))]
    return (
        f"{what}: median real-time factor {statistics.median(factors):.4f} "
        f"over {len(factors)} phrases (p90 {p90:.4f})"
    )


if __name__ == "__main__":
    main()
