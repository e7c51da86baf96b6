"""The notebooks are documentation: each runs offline, top to bottom, in a real kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_there_are_notebooks() -> None:
    assert [path.name for path in NOTEBOOKS] == [
        "01_prototype.ipynb",
        "02_handoff_benchmark.ipynb",
        "03_teaching_handoffs.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_offline(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": path.parent}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
        for output in outputs
    )
    assert "Traceback" not in text and "never retrieved" not in text  # worker noise stays out
    if path.name == "01_prototype.ipynb":
        assert "You are the Concierge." in text
        assert "You are Billing." in text  # the billing agent spoke after the handoff
        assert "'session': 'reused'" in text
        assert widget_views(outputs) == 4  # state, agent graph, chat, timeline
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 2
    if path.name == "02_handoff_benchmark.ipynb":
        assert "0 failed" in text and "fresh+copied" in text and "truth 6 RTT" in text
        assert widget_views(outputs) == 1  # the benchmark
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 2
    if path.name == "03_teaching_handoffs.ipynb":
        # every claim the text makes is an assert cell of its own: reaching the end proves them
        assert "Exercise 1 passed" in text and "Exercise 2 passed" in text
        assert "the handoff waited" in text and "update_chat_ctx timed out" in text
        assert widget_views(outputs) == 6  # state, graph, chat, timeline + one per failure call
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 1
        solutions = [
            c for c in notebook.cells if c.metadata.get("jupyter", {}).get("source_hidden")
        ]
        assert len(solutions) == 2  # collapsed, one per exercise


def widget_views(outputs: list[Any]) -> int:
    return sum("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
