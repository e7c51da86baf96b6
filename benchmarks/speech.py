"""Real-time factors and accuracy of the offline speech components on this machine (goals:
recognition < 0.3, synthesis < 0.1).

The real-time factor is the time spent over the audio's duration, per phrase, medians over
``--repeats`` runs of several phrases (the first run of each, which loads the engine, is left
out; a phrase is the same samples every run, and so is its outcome). Recognition hears
eSpeak's voice, in three voices, saying what a caller of the handoff and Greeter/Weather
agents says, in those agents' vocabulary (their tools, the weather tool's location, their
instructions and descriptions, a few cities as keywords; and a flight tool whose cabin is an
enum); each phrase class counts the phrases heard word for word, heard as nothing, and heard
wrong (another phrase, which the emulator would answer as if said), and a phrase heard with
its argument left out apart; a city the vocabulary lacks (a cabin the enum lacks) is heard
word for word when its argument is left out (``lookup weather``), and wrong when heard as any
value.

With ``--conditions`` (once per line: a preset's name or its start, or the written form as
YAML) the phrases are heard through each line too (``notebook_agents.speech.line``), and the
counts are given per line.

    .venv/bin/python benchmarks/speech.py
    .venv/bin/python benchmarks/speech.py --repeats 1 --conditions clean --conditions café \
        --conditions telephone --conditions "[{packet_loss: {rate: 0.1, conceal: repeat}}]"
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence

from notebook_agents.speech import (
    SAMPLE_RATE,
    Parameter,
    Request,
    Vocabulary,
    synthesize,
    transcribe,
)
from notebook_agents.speech.grammar import digits
from notebook_agents.speech.line import Line, named_line

CITIES = ("Paris", "London", "Tokyo", "Berlin", "New York")
ELSEWHERE = ("Madrid", "Seattle", "Cairo", "Moscow", "Sydney", "Lisbon", "Nairobi", "Oslo")
"""cities no text of the vocabulary holds: heard word for word is the argument left out"""
FREE = (
    "the library closes early during the winter holidays",
    "i would like to change my appointment to next tuesday afternoon please",
    "the train to the airport was delayed by heavy snow",
    "could you send the blue sweater back to the store",
    "the children built a sandcastle near the water",
    "our flight leaves early tomorrow morning",
)
"""free sentences, none a phrase of the grammar: heard word for word is heard as nothing"""
CABINS = ("economy", "business", "first")
OTHER_CABINS = ("premium", "coach")
"""an enum's members, and values outside it: heard word for word is the argument left out"""
TOOLS = Vocabulary(
    requests=(
        Request("transfer_to_billing"),
        Request("transfer_to_concierge"),
        Request("get_weather"),
        Request("lookupInvoice"),
        Request("transfer_to_greeter"),
        Request("lookup_weather", (Parameter("location"),)),
        Request("book_flight", (Parameter("cabin", "choice", CABINS),)),
    ),
    # what the Greeter/Weather agents tell their model, and the STT's keywords
    texts=(
        "You are a friendly greeter. Ask how you can help; if the user asks about the "
        "weather, transfer them to the weather agent.",
        "You are a weather agent. Answer questions about the weather.",
        "Look up the weather for a location.",
        "The city to look up.",
        *CITIES,
    ),
)
CLASSES: dict[str, tuple[str, ...]] = {
    "greeting, one word": ("hello", "hi", "thanks", "goodbye", "bye", "yes", "no"),
    "greeting, two words": (
        "hello there",
        "hi there",
        "good morning",
        "good afternoon",
        "thank you",
    ),
    "tool request": (
        "transfer to billing",
        "transfer to concierge",
        "get weather",
        "lookup invoice",
        "transfer to greeter",
        "lookup weather",
    ),
    "tool request with lead / please": (
        "transfer to billing please",
        "can you transfer to concierge",
        "i would like to transfer to billing",
        "could you get weather please",
        "please lookup invoice",
        "let's transfer to greeter",
    ),
    "tool request with an argument": tuple(
        f"lookup weather location {city.lower()}" for city in CITIES
    ),
    "tool request with a value outside the vocabulary": tuple(
        f"lookup weather location {city.lower()}" for city in ELSEWHERE
    ),
    "tool request with an enum member": tuple(f"book flight cabin {cabin}" for cabin in CABINS),
    "tool request with a value outside the enum": tuple(
        f"book flight cabin {cabin}" for cabin in OTHER_CABINS
    ),
    "arithmetic": (
        "what is two plus three",
        "what is seven times eight",
        "what is twelve minus four",
        "what is forty divided by five",
        "what is nineteen plus sixty",
        "what is one times zero",
    ),
    # tests/speech/free_speech.CORPUS: no phrase of the grammar; heard word for word is nothing
    "free sentence": FREE,
}
VOICES = ("en-us", "en", "en-us+f3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--conditions",
        action="append",
        type=named_line,
        help="a line to hear the phrases through (repeat for several): a preset's name or "
        "its start (clean, café, street, telephone, ...), or YAML, '[telephone, {noise: "
        "{kind: babble, snr_db: 10}}]'",
    )
    args = parser.parse_args()
    lines: dict[str, Line] = dict(args.conditions or [("clean", Line())])
    synthesize("warm up")
    transcribe(synthesize("hello"), SAMPLE_RATE, TOOLS)
    synthesis: list[float] = []
    recognition: list[float] = []
    took_by_class: dict[str, list[float]] = {name: [] for name in CLASSES}
    outcomes = {line: {name: Counter[str]() for name in CLASSES} for line in lines}
    misheard: dict[str, Counter[str]] = {}
    for _ in range(args.repeats):
        for voice in VOICES:
            for name, phrases in CLASSES.items():
                for phrase in phrases:
                    started = time.perf_counter()
                    said = synthesize(phrase, voice=voice)
                    synthesized = time.perf_counter()
                    seconds = said.size / SAMPLE_RATE
                    synthesis.append((synthesized - started) / seconds)
                    for line_name, line in lines.items():
                        samples = line.apply(said, SAMPLE_RATE)
                        heard_from = time.perf_counter()
                        try:
                            heard = transcribe(samples, SAMPLE_RATE, TOOLS)
                        except Exception as e:  # a failure is counted, not fatal
                            heard = f"<{type(e).__name__}: {e}>"
                        took = time.perf_counter() - heard_from
                        recognition.append(took / seconds)
                        took_by_class[name].append(took)
                        outcome = _outcome(heard, _transcript(phrase))
                        outcomes[line_name][name][outcome] += 1
                        if outcome != "word for word":
                            where = f"{phrase} ({voice}, {line_name})"
                            misheard.setdefault(where, Counter())[heard] += 1
    print(_line("synthesis (eSpeak NG, 24 kHz)", synthesis))
    print(_line("recognition (pocketsphinx, caller grammar)", recognition))
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for line_name, by_class in outcomes.items():
        total = sum(c["word for word"] for c in by_class.values())
        trials = sum(sum(c.values()) for c in by_class.values())
        wrong = sum(c["wrong"] for c in by_class.values())
        print(
            f"recognition accuracy, {line_name}: {total}/{trials} heard word for word, "
            f"{wrong} wrong"
        )
        for name, counts in by_class.items():
            print(
                f"  {name}: {counts['word for word']}/{sum(counts.values())} word for word, "
                f"{counts['nothing']} nothing, {counts['argument left out']} argument left "
                f"out, {counts['wrong']} wrong; heard in {_ms(took_by_class[name])} ms, median"
            )
    for where, heard_as in misheard.items():
        print(f"  {where!r} heard as {dict(heard_as)}")


def _transcript(phrase: str) -> str:
    """What ``phrase`` is heard as, word for word: numbers as digits, an argument as the reply
    rules read a typed one; a value outside the vocabulary (or the enum) left out; a free
    sentence as nothing."""
    if phrase in FREE:
        return ""
    for cabin in OTHER_CABINS:
        if phrase.endswith(f"cabin {cabin}"):
            return phrase.removesuffix(f" cabin {cabin}")
    for cabin in CABINS:
        if phrase.endswith(f"cabin {cabin}"):
            return phrase.replace(f"cabin {cabin}", f"cabin: {cabin}")
    for city in ELSEWHERE:
        if phrase.endswith(f"location {city.lower()}"):
            return phrase.removesuffix(f" location {city.lower()}")
    for city in CITIES:
        if phrase.endswith(f"location {city.lower()}"):
            value = f'"{city}"' if " " in city else city
            return phrase.replace(f"location {city.lower()}", f"location: {value}")
    return digits(phrase)


def _outcome(heard: str, said: str) -> str:
    if heard == said:
        return "word for word"
    if heard == "":
        return "nothing"
    # a "please" heard at the end asks for nothing more (the end of a city left out is heard
    # as one): the emulator answers the request as it would without it
    request = re.split(r" \w+:", said)[0]
    return "argument left out" if heard in (request, f"{request} please") else "wrong"


def _ms(seconds: Sequence[float]) -> str:
    return f"{1000 * statistics.median(seconds):.0f}" if seconds else "-"


def _line(what: str, factors: Sequence[float]) -> str:
    p90 = sorted(factors)[int(0.9 * len(factors))]
    return (
        f"{what}: median real-time factor {statistics.median(factors):.4f} "
        f"over {len(factors)} phrases (p90 {p90:.4f})"
    )


if __name__ == "__main__":
    main()
