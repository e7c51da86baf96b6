"""The VideoSDK examples of docs/frameworks.md run as written (their top-level
awaits, as in a notebook cell)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from notebook_agents.emulator import Emulator
from notebook_agents.runner.errors import RunnerError

from . import videosdk_agents

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "frameworks.md"


def blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(), re.S | re.M)


async def run_cells(code: str, path: Path, names: dict[str, Any]) -> None:
    """``code`` as a notebook cell runs it, its names in ``names``."""
    compiled = compile(code, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    await eval(compiled, names)


async def test_the_frameworks_page_example_hands_off_and_records_the_call() -> None:
    (code,) = [block for block in blocks(DOC) if "class FrontDesk(Agent)" in block]
    names: dict[str, Any] = {"__name__": "frameworks_doc"}
    try:
        await run_cells(code, DOC, names)
    finally:
        names["emulator"].stop()
    runner = names["runner"]
    handoffs = [(e.data["from"], e.data["to"]) for e in runner.trace.of_kind("handoff")]
    assert handoffs == [(None, "FrontDesk"), ("FrontDesk", "Billing")]
    assert runner.trace.events[-1].kind == "closed"
    with pytest.raises(RunnerError, match="stopped"):  # the example stopped it
        await runner.send_text("hello")


async def test_the_checking_example_checks_a_turn_and_speaks_one() -> None:
    (code,) = [block for block in blocks(DOC) if "synthesize(" in block]
    names: dict[str, Any] = {
        "__name__": "frameworks_doc",
        "entrypoint": videosdk_agents.spoken_entrypoint,
        "Billing": videosdk_agents.Billing,
    }
    with Emulator() as names["emu"]:
        await run_cells(code, DOC, names)
    trace = names["runner"].trace
    assert [e.data["to"] for e in trace.of_kind("handoff")] == ["FrontDesk", "Billing"]
    assert len(trace.of_kind("user_transcript")) == 1  # the spoken turn was heard
    assert trace.events[-1].kind == "closed"
