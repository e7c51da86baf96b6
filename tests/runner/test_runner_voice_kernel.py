"""A spoken turn interrupted in a REAL ipykernel (while the caller speaks, or while the agent's
reply plays): the cell says the turn was withdrawn and the runner is ready, and the next spoken
turn is heard alone and answered right."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel import Kernel

pytestmark = pytest.mark.voice  # its spoken turns are the cells' code, out of the rules' sight

SETUP = r"""
import numpy as np
from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from tests.runner.test_runner_voice import LONG_SPEECH, voice_server

emu = Emulator().start()
runner = NotebookRunner(voice_server(emu), audio=True).start()
await runner.ready()

def say_when_heard(event):
    if event.kind == "user_state" and event.data["new"] == "speaking":
        print("speaking", flush=True)

stop_saying = runner.trace.subscribe(say_when_heard)
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


@pytest.mark.timeout(90)
def test_an_interrupt_while_the_reply_plays_is_the_callers(kernel: Kernel, tmp_path: Path) -> None:
    """It was blamed on the job ("the agent's job cancelled the turn"): nothing woke the
    kernel's loop while the reply played (no views, no subscriber), so the interrupt landed
    only as the turn ended, and the turn, done, read as cancelled by the job."""
    speaking = tmp_path / "speaking"
    kernel.run_ok(
        "stop_saying()  # no subscriber on the kernel's loop: nothing wakes it\n"
        "from pathlib import Path\n"
        f"def touch_when_speaking(event, path=Path({str(speaking)!r})):\n"
        "    if event.new_state == 'speaking':\n"
        "        path.touch()\n"
        "runner.session.on('agent_state_changed', touch_when_speaking)"
    )
    cell = kernel.submit("await runner.send_audio(synthesize('thank you'))")
    kernel.wait_until(speaking.exists, 30, "the agent never spoke", poll=0.05)
    kernel.interrupt()
    kernel.wait(cell, timeout=30)
    assert cell.error is not None and cell.error["ename"] == "CancelledError", cell.traceback
    assert cell.error["evalue"].startswith("send_audio() was interrupted: the turn is withdrawn")
    # cut where it was interrupted (nothing said in full), and the runner takes the next turn
    said = "[e.data['text'] for e in runner.trace.of_kind('agent_message')]"
    whole = "[e for e in runner.trace.of_kind('agent_message') if not e.data['interrupted']]"
    assert kernel.eval(f"len({whole})") == 0, kernel.eval(said)
    assert kernel.eval("await runner.send_audio(synthesize('hello there'))") == (
        'You are the Concierge. You said: "hello there".'
    )
