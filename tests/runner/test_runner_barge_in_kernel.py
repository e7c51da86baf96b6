"""A barge-in from cells of a REAL ipykernel: one cell starts a spoken question, the next
speaks over its reply half a second in, as a notebook user tries their agent's interruption
handling."""

from __future__ import annotations

import pytest

from tests.kernel import Kernel

pytestmark = [pytest.mark.voice, pytest.mark.slow]  # real-time speech, in the cells' code

CELLS = [
    r"""
import asyncio
from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.speech import synthesize
from tests.runner.test_runner_barge_in import storyteller_server

emu = Emulator().start()
runner = NotebookRunner(storyteller_server(emu), audio=True).start()
await runner.ready()
""",
    'question = asyncio.ensure_future(runner.send_audio(synthesize("hello there")))',
    'answer = await runner.send_audio(synthesize("thank you"), at=0.5)',
    "cut = await question",
]


@pytest.mark.timeout(120)
def test_a_cell_speaks_over_the_reply_an_earlier_cell_asked_for() -> None:
    with Kernel() as kernel:
        try:
            for cell in CELLS:
                kernel.run_ok(cell, timeout=60)
            barge_in = kernel.eval("runner.trace.of_kind('barge_in')[0].data")
            assert barge_in["interrupted"] and not barge_in["resumed"]
            assert barge_in["stop_s"] > 0
            assert kernel.eval("cut") == barge_in["heard"] != barge_in["text"]
            assert kernel.eval("answer").endswith('You said: "thank you".')
        finally:
            kernel.run_ok("runner.stop(); emu.stop()")
