"""Notebook 07 (the same two-agent handoff on LiveKit and on VideoSDK) runs offline in a real
kernel of the environment with the videosdk extra."""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.test_notebooks import NOTEBOOKS, executed_cleanly, offline, widget_views

__all__ = ["offline"]  # its autouse fixture: the kernel imports this checkout, offline

FRAMEWORKS = next(path for path in NOTEBOOKS if path.name == "07_frameworks.ipynb")


@pytest.mark.timeout(180)
def test_the_frameworks_notebook_runs_offline() -> None:
    notebook = nbformat.read(FRAMEWORKS, as_version=4)
    outputs, text = executed_cleanly(notebook, FRAMEWORKS)
    # both frameworks answered the same turns, the tool and the handoff on each
    assert text.count("The tool returned:") == 2 and text.count("Billing here") >= 2
    assert widget_views(outputs) == 3  # states, chats and timelines, each side by side
    # the state models as observed: VideoSDK idle between turns and closing at the end
    lines = dict(re.findall(r"^(LiveKit|VideoSDK) +(initializing > .+)$", text, re.M))
    assert "idle" not in lines["LiveKit"] and lines["VideoSDK"].endswith("idle > closing")
