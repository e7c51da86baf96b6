"""A scenarios file's ``conditions:``: the line a scenario's spoken turns (or one turn's)
cross, read with the file's other fields, run by ``run_suite`` and under pytest."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from livekit.agents import AgentServer

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import (
    SAMPLE_RATE,
    Gain,
    Line,
    Noise,
    PacketLoss,
    Telephone,
    synthesize,
)
from notebook_agents.speech.wav import wav_bytes
from notebook_agents.suites import Outcome, SuiteFileError, load_suite, run_suite, to_scenario
from tests.conftest import API_KEY, started
from tests.suites.test_recording import modules, scenario_data  # noqa: F401  (a fixture)
from tests.suites.test_suites import (
    HEARING_CONFTEST,
    make_hearing_greeter,  # noqa: F401  (a fixture)
    outcomes_under_pytest,
)

SPOKEN_THROUGH_LINES = """
name: Greeter on a bad line
scenarios:
  - label: asks for the weather on the phone in a cafe
    conditions:
      - noise: {kind: babble, snr_db: 20}
      - telephone
    turns:
      - audio: transfer.wav
        expect:
          - contains_agent_handoff(new_agent_type=WeatherAgent)
  - label: a line that loses every frame is heard as nothing
    turns:
      - audio: transfer.wav
        conditions:
          - packet_loss: {rate: 1.0}
        timeout: 5
        expect:
          - contains_agent_handoff(new_agent_type=WeatherAgent)
"""


def _suite(directory: Path, text: str = SPOKEN_THROUGH_LINES) -> Path:
    (directory / "transfer.wav").write_bytes(
        wav_bytes(synthesize("transfer to weather"), SAMPLE_RATE)
    )
    path = directory / "scenarios.yaml"
    path.write_text(text)
    return path


def test_a_scenarios_conditions_are_its_spoken_turns_and_a_turn_may_have_its_own(
    tmp_path: Path,
) -> None:
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    hum = (3000 * np.sin(2 * np.pi * 50 * t)).astype(np.int16)
    (tmp_path / "noises").mkdir()
    (tmp_path / "noises" / "hum.wav").write_bytes(wav_bytes(hum, SAMPLE_RATE))
    suite = load_suite(
        _suite(
            tmp_path,
            """
scenarios:
  - label: a
    conditions: [telephone, {gain: {db: 6}}]
    turns:
      - audio: transfer.wav
      - user: typed, so no line
      - audio: transfer.wav
        conditions: []
      - audio: transfer.wav
        conditions:
          - noise: {kind: noises/hum.wav, snr_db: 5}
          - packet_loss: {rate: 0.1, conceal: repeat, seed: 4}
  - label: b
    turns:
      - audio: transfer.wav
""",
        )
    )
    a, b = suite.scenarios
    assert [turn.conditions for turn in a.turns] == [
        Line(Gain(6), Telephone()),
        None,
        Line(),
        Line(Noise(5, str(tmp_path / "noises" / "hum.wav")), PacketLoss(0.1, "repeat", seed=4)),
    ]
    assert b.turns[0].conditions is None  # the runner's own line


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            "      - audio: transfer.wav\n        conditions: [phone]\n",
            ":5: scenarios[0].turns[0].conditions: condition 1: 'phone' is no condition; the "
            "conditions are noise, gain, telephone, packet_loss, jitter, e.g.\nconditions:\n"
            "  - noise: {kind: babble, snr_db: 10}\n",
        ),
        (
            "      - audio: transfer.wav\n        conditions:\n"
            "          - packet_loss: {rate: 2}\n",
            ":5: scenarios[0].turns[0].conditions: condition 1: PacketLoss(rate=2): give a "
            "number from 0 to 1",
        ),
        (
            "      - user: hi\n        conditions: [telephone]\n",
            ":5: scenarios[0].turns[0].conditions: `conditions:` is the line a spoken turn's "
            "audio crosses: give the turn `audio:` (a WAV file), or take `conditions:` off "
            "this typed turn",
        ),
        (
            "      - audio: transfer.wav\n        conditions:\n"
            "          - noise: {kind: missing.wav}\n",
            ":5: scenarios[0].turns[0].conditions: condition 1: Noise(kind='{folder}/"
            "missing.wav'): no such file; give a WAV file's path",
        ),
    ],
)
def test_conditions_written_wrong_name_the_line_and_the_fix(
    tmp_path: Path, turn: str, message: str
) -> None:
    path = _suite(tmp_path, f"scenarios:\n  - label: a\n    turns:\n{turn}")
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    assert str(raised.value).startswith(f"{path}{message.replace('{folder}', str(tmp_path))}")


@pytest.mark.slow  # real-time spoken turns
async def test_run_suite_plays_each_turn_through_its_line_and_the_trace_says_which(
    make_hearing_greeter: Callable[[], AgentServer],  # noqa: F811
    tmp_path: Path,
) -> None:
    heard, lost = await run_suite(_suite(tmp_path), make_hearing_greeter)
    assert heard.outcome is Outcome.PASSED, heard.reason
    assert heard.trace is not None
    (message,) = heard.trace.of_kind("user_message")
    assert message.data["conditions"] == [
        {"noise": {"snr_db": 20, "kind": "babble", "seed": 0}},
        {"telephone": {}},
    ]
    assert lost.outcome is Outcome.ERROR  # no reply came: the turn went wrong
    assert "no speech was detected in the audio" in lost.reason


@pytest.mark.slow  # pytest in a process of its own, real-time spoken turns
def test_a_scenario_with_conditions_runs_under_pytest(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(HEARING_CONFTEST)
    assert outcomes_under_pytest(tmp_path, _suite(tmp_path)) == {
        "asks for the weather on the phone in a cafe": "passed",
        "a line that loses every frame is heard as nothing": "failed",
    }


def test_the_checking_guides_example_reads_as_it_says(tmp_path: Path) -> None:
    guide = Path(__file__).parents[2] / "docs" / "guides" / "checking.md"
    (example,) = [
        block
        for block in re.findall(r"^```yaml\n(.*?)^```$", guide.read_text(), re.S | re.M)
        if "conditions:" in block
    ]
    (tmp_path / "thanks.wav").write_bytes(wav_bytes(synthesize("thank you"), SAMPLE_RATE))
    (scenario,) = load_suite(_suite(tmp_path, example)).scenarios
    assert [turn.conditions for turn in scenario.turns] == [
        Line(Noise(10, "babble"), Telephone()),
        Line(PacketLoss(0.1, "repeat", seed=1)),
    ]


@pytest.mark.slow  # a real-time spoken turn
async def test_a_call_spoken_through_a_line_is_recorded_with_it(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],  # noqa: F811
    tmp_path: Path,
) -> None:
    """``to_scenario`` writes a spoken turn's line beside its WAV (the audio as given): played
    again, the agent hears it through the same line."""
    clinic = modules(tmp_path / "app")
    runner = await started(
        runners,
        NotebookRunner(clinic.make_server(emulator.base_url(), API_KEY, hears=True), audio=True),
    )
    await runner.greeting()
    line = Line(Noise(20, "road", seed=3), Telephone())
    await runner.send_audio(synthesize("transfer to billing"), conditions=line)
    path = tmp_path / "scenarios.yaml"
    (spoken,) = to_scenario(runner, "pays by voice on the phone", path).turns
    assert spoken.conditions == line
    assert scenario_data(path, "pays by voice on the phone")["turns"][0]["conditions"] == [
        {"noise": {"snr_db": 20, "kind": "road", "seed": 3}},
        {"telephone": {}},
    ]
