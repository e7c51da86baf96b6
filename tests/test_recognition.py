"""Speech recognition offline: pocketsphinx hears a caller as the nearest phrase of the
session's own grammar (its tools, greetings, arithmetic), in more than one voice."""

from __future__ import annotations

import numpy as np
import pytest

from notebook_agents.speech import SAMPLE_RATE, synthesize, transcribe
from notebook_agents.speech.recognition import digits, grammar, phrases_of

TOOLS = ("transfer_to_billing", "transfer_to_concierge", "lookupInvoice")


def test_tool_names_become_what_a_caller_says() -> None:
    assert phrases_of(
        ["transfer_to_billing", "lookupInvoice", "get_weather2", "lookupInvoice"]
    ) == (
        "transfer to billing",
        "lookup invoice",
        "get weather",
    )
    assert "(transfer to billing)" in grammar(["transfer to billing"])


def test_number_words_come_back_as_digits() -> None:
    assert digits("what is two plus thirty") == "what is 2 plus 30"
    assert digits("transfer to billing") == "transfer to billing"


@pytest.mark.parametrize("voice", ["en-us", "en", "en-us+f3"])
@pytest.mark.parametrize(
    "said",
    [
        "transfer to billing",
        "can you transfer to concierge please",
        "lookup invoice",
        "hello there",
        "thank you",
    ],
)
def test_a_caller_asking_for_a_tool_or_greeting_is_heard_word_for_word(
    said: str, voice: str
) -> None:
    assert transcribe(synthesize(said, voice=voice), SAMPLE_RATE, TOOLS) == said


def test_which_tool_is_heard_depends_on_the_sessions_tools() -> None:
    """Without the tool in the grammar, "transfer to billing" is not made up."""
    spoken = synthesize("transfer to billing")
    assert transcribe(spoken, SAMPLE_RATE, TOOLS) == "transfer to billing"
    assert "billing" not in transcribe(spoken, SAMPLE_RATE, ["transfer_to_concierge"])


def test_arithmetic_is_heard_with_digits() -> None:
    assert transcribe(synthesize("what is two plus three"), SAMPLE_RATE) == "what is 2 plus 3"


@pytest.mark.parametrize("silence_s", [0.5, 1.0])
@pytest.mark.parametrize("said", ["hello there", "transfer to billing please"])
def test_speech_among_silence_is_heard(said: str, silence_s: float) -> None:
    """A VAD's turn comes with silence around the speech (half a second and more)."""
    quiet = np.zeros(int(silence_s * SAMPLE_RATE), np.int16)
    spoken = np.concatenate([quiet, synthesize(said), quiet])
    assert transcribe(spoken, SAMPLE_RATE, TOOLS) == said


def test_any_rate_is_heard_and_silence_is_nothing() -> None:
    spoken = synthesize("hello there")
    at_48k = np.repeat(spoken, 2)  # the same speech at twice the rate
    assert transcribe(at_48k, 48_000) == "hello there"
    assert transcribe(np.zeros(SAMPLE_RATE, np.int16), SAMPLE_RATE) == ""
