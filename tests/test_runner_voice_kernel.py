"""A spoken turn interrupted in a REAL ipykernel: the cell says the turn was withdrawn and the
runner is ready, and the next spoken turn is heard alone and answered right."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .kernel import Kernel

SETUP = r"""
import numpy as np
from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from tests.test_runner_voice import LONG_SPEECH, voice_server

emu = Emulator().start()
runner = NotebookRunner(voice_server(emu), audio=True).start()
await runner.ready()

def say_when_heard(event):
    if event.kind == "user_state" and event.data["new"] == "speaking":
        print("speaking", flush=True)

runner.trace.subscribe(say_when_heard)
"""


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    with Kernel() as kernel:
        kernel.run_ok(SETUP, timeout=60)
        yield kernel
        kernel.run_ok("runner.stop(); emu.stop()")


@pytest.mark.timeout(90)
def test_an_interrupted_send_audio_cell_says_the_turn_was_withdrawn(kernel: Kernel) -> None:
    cell = kernel.submit("await runner.send_audio(np.concatenate(LONG_SPEECH))")
    kernel.wait_output(cell, "speaking")  # the caller is mid-sentence
    kernel.interrupt()
    kernel.wait(cell, timeout=30)
    # before: a bare CancelledError, and the next turn heard the rest of this one
    assert cell.error is not None and cell.error["ename"] == "CancelledError"
    assert cell.error["evalue"] == (
        "send_audio() was interrupted: the turn is withdrawn (the rest of its audio dropped, "
        "what was heard of it cleared, any reply cut) and the runner is ready for the next turn"
    )
    assert kernel.eval("await runner.send_audio(synthesize('thank you'))") == (
        'You are the Concierge. You said: "thank you".'
    )
    heard = "[e.data['text'] for e in runner.trace.of_kind('user_message')]"
    assert kernel.eval(heard) == ["thank you"]
