"""A caller's audio through line conditions on its way to a real session: ``send_audio`` /
``run_audio(conditions=)``, ``runner.conditions`` for live audio (``hear``), and the trace's
record of each spoken turn's conditions."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from notebook_agents import NotebookRunner, RunnerError
from notebook_agents.emulator import Emulator
from notebook_agents.speech import (
    SAMPLE_RATE,
    Line,
    LineError,
    Noise,
    PacketLoss,
    Telephone,
    synthesize,
)
from notebook_agents.trace import TraceEvent
from tests.conftest import started
from tests.runner.test_runner_voice import realtime_voice_server, voice_server

pytestmark = pytest.mark.slow  # real-time speech in and out


async def test_a_turn_through_a_line_reaches_the_agent_and_the_trace_keeps_its_conditions(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    line = Line(Noise(20, "babble"), Telephone())
    result = await runner.run_audio(synthesize("hello there"), conditions=line)
    result.expect.contains_message(role="assistant")
    (heard,) = runner.trace.of_kind("user_message")
    assert heard.data["text"] == "hello there"
    assert heard.data["conditions"] == [
        {"noise": {"snr_db": 20, "kind": "babble", "seed": 0}},
        {"telephone": {}},
    ]
    assert Line.read(heard.data["conditions"]) == line
    # the runner's own line for the turns given none; a turn's [] is a clean one
    runner.conditions = Telephone()
    assert runner.trace.caller_conditions == [{"telephone": {}}]
    await runner.send_audio(synthesize("thank you"))
    await runner.send_audio(synthesize("goodbye"), conditions=[])
    await runner.send_text("hello")  # typed: no line
    messages = runner.trace.of_kind("user_message")[1:]
    assert [(m.data["text"], m.data.get("conditions")) for m in messages] == [
        ("thank you", [{"telephone": {}}]),
        ("goodbye", None),
        ("hello", None),
    ]


async def test_a_realtime_model_hears_through_the_line_too(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(realtime_voice_server(emulator), audio=True))
    reply = await runner.send_audio(synthesize("hello there"), conditions=[Noise(25, "road")])
    assert reply == 'You are the Concierge. You said: "hello there".'
    (heard,) = runner.trace.of_kind("user_message")
    assert heard.data["conditions"] == [{"noise": {"snr_db": 25, "kind": "road", "seed": 0}}]


async def test_a_line_that_loses_everything_is_heard_as_nothing(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """What reaches the session is what crossed the line: every frame lost is silence."""
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    with pytest.raises(RunnerError, match="no speech was detected in the audio"):
        await runner.send_audio(synthesize("hello there"), conditions=PacketLoss(1.0), timeout=4.0)


async def test_live_audio_crosses_the_runners_line(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """``hear`` (VoiceView's, a device's): chunk by chunk through ``runner.conditions``."""
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    answered = asyncio.Event()

    def on_event(event: TraceEvent) -> None:
        if event.kind == "user_message":
            answered.set()

    runner.trace.subscribe(on_event)
    runner.conditions = [Noise(20, "white"), Telephone()]
    quiet = np.zeros(SAMPLE_RATE // 2, np.int16)
    spoken = np.repeat(np.concatenate([quiet, synthesize("hello there"), quiet, quiet]), 2)
    for chunk in np.array_split(spoken, len(spoken) // 960):
        runner.hear(chunk, 48_000)
        await asyncio.sleep(0.02)  # the pace a microphone delivers at, not a synchronization
    await asyncio.wait_for(answered.wait(), 30)
    (heard,) = runner.trace.of_kind("user_message")
    assert heard.data["text"] == "hello there"
    assert heard.data["conditions"] == runner.conditions.to_records()


async def test_conditions_given_wrong_are_refused_before_the_turn(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    with pytest.raises(LineError, match="'phone' is no condition"):
        await runner.send_audio(synthesize("hello"), conditions=["phone"])
    with pytest.raises(LineError, match=r"condition 3 \(3\) is a name or one name"):
        runner.conditions = [Telephone(), "noise", 3]
    assert runner.conditions == Line() and not runner.trace.of_kind("user_state")
