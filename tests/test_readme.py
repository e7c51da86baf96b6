"""The README's example runs as written: it defines a livekit agent and the emulator its model
talks to, runs it in the kernel with ``NotebookRunner``, and answers a typed turn as it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from notebook_agents import Emulator, NotebookRunner, Trace

from .doc_examples import DOCS, README, ROOT, python_blocks, run


async def test_the_readme_example_answers_its_typed_turn_as_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_livekit_env: None
) -> None:
    (block,) = python_blocks(README)  # the README's one example, complete
    assert "AgentServer()" in block and "@server.rtc_session()" in block
    monkeypatch.chdir(tmp_path)  # where it saves call.jsonl
    namespace: dict[str, Any] = {}
    try:
        await run(block, namespace, README)
    finally:
        if isinstance(runner := namespace.get("runner"), NotebookRunner):
            runner.stop()
        if isinstance(emu := namespace.get("emu"), Emulator):
            emu.stop()
    (promised,) = re.findall(r"print\(reply\)  # (.*)$", block, re.M)
    assert namespace["reply"] == promised == "You are the Concierge. 2 + 3 = 5."
    said = {(e.kind, e.data.get("text")) for e in Trace.load(tmp_path / "call.jsonl").events}
    assert ("user_message", "what is 2 plus 3") in said
    assert ("agent_message", promised) in said


def test_the_readme_links_only_to_pages_that_exist() -> None:
    """Its links into the docs are relative paths: each names a page in docs/."""
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", README.read_text())
    assert links, "the README links into the docs"
    for link in links:
        assert (ROOT / link).is_file(), link
    assert all(page.is_file() for page in (DOCS / "index.md", DOCS / "reference" / "index.md"))


def test_the_readme_table_has_every_shipped_notebook() -> None:
    notebooks = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
    rows = re.findall(r"^\| `(\d\d_\w+)` \|", README.read_text(), re.M)
    assert rows == notebooks
