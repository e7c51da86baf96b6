"""A scenario's barge-in turns (``at:``): read from the file, refused with the line and the fix
when they cannot be, and run by ``run_suite`` over the reply to the turn before."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes
from notebook_agents.suites import Outcome, SuiteFileError, load_suite, run_suite
from tests.runner.test_runner_barge_in import STORY, storyteller_server

BARGE_IN = """\
name: Storyteller
scenarios:
  - label: the caller stops the story
    turns:
      - audio: hello.wav
        expect:
          - next_event().is_message(role="assistant")
      - audio: thanks.wav
        at: 0.5
        expect:
          - next_event().is_message(role="assistant")
"""


def barge_in_suite(directory: Path, text: str = BARGE_IN) -> Path:
    for name, words in [("hello.wav", "hello there"), ("thanks.wav", "thank you")]:
        (directory / name).write_bytes(wav_bytes(synthesize(words), SAMPLE_RATE))
    path = directory / "scenarios.yaml"
    path.write_text(text)
    return path


def test_at_is_read_as_seconds_into_the_reply(tmp_path: Path) -> None:
    suite = load_suite(barge_in_suite(tmp_path))
    assert [turn.at for turn in suite.scenarios[0].turns] == [None, 0.5]
    first_audio = BARGE_IN.replace("at: 0.5", "at: first_audio")
    suite = load_suite(barge_in_suite(tmp_path, first_audio))
    assert suite.scenarios[0].turns[1].at == 0.0


@pytest.mark.parametrize(
    ("at", "message"),
    [
        ("-0.5", "not -0.5"),
        ("soon", "not 'soon'"),
        (".nan", "not nan"),
        ("true", "not True"),
    ],
)
def test_an_at_that_is_no_moment_of_a_reply_names_its_line_and_fix(
    tmp_path: Path, at: str, message: str
) -> None:
    path = barge_in_suite(tmp_path, BARGE_IN.replace("at: 0.5", f"at: {at}"))
    with pytest.raises(SuiteFileError) as refused:
        load_suite(path)
    assert str(refused.value) == (
        f"{path}:9: scenarios[0].turns[1].at: `at:` is when the caller starts speaking over "
        "the reply to the turn before: seconds into it (a number from 0, e.g. `at: 0.5`) or "
        f"`at: first_audio`, {message}"
    )


def test_at_on_a_typed_turn_says_it_is_for_spoken_ones(tmp_path: Path) -> None:
    typed = BARGE_IN.replace("- audio: thanks.wav", "- user: thank you")
    path = barge_in_suite(tmp_path, typed)
    with pytest.raises(SuiteFileError) as refused:
        load_suite(path)
    assert str(refused.value) == (
        f"{path}:9: scenarios[0].turns[1].at: `at:` makes a spoken turn speak over the "
        "agent's reply: give the turn an `audio:` (a WAV), or remove `at:`"
    )


@pytest.mark.slow  # real-time spoken turns
@pytest.mark.voice  # WAVs played into the session in real time
async def test_a_barge_in_turn_runs_over_the_reply_to_the_turn_before(
    emulator: Emulator, tmp_path: Path, no_livekit_env: None
) -> None:
    result = await run_suite(barge_in_suite(tmp_path), lambda: storyteller_server(emulator))

    (scenario,) = result
    assert (scenario.outcome, scenario.reason) == (Outcome.PASSED, "")
    cut, answered = scenario.results
    (cut_reply,) = [e.item for e in cut.events if e.type == "message"]
    assert cut_reply.interrupted and len(cut_reply.text_content or "") < len(STORY)
    (reply,) = [e.item for e in answered.events if e.type == "message"]
    assert reply.text_content == f'{STORY} You said: "thank you".'
    assert scenario.trace is not None
    (barge_in,) = scenario.trace.of_kind("barge_in")
    assert barge_in.data["interrupted"] and barge_in.data["heard"] == cut_reply.text_content
    assert barge_in.data["stop_s"] is not None and barge_in.data["stop_s"] > 0
