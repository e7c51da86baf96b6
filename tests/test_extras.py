"""Without its extra, a framework's entry points name the install (this environment has no
VideoSDK: ``make test`` runs the VideoSDK tests in an environment of their own)."""

from __future__ import annotations

import importlib.util

import pytest

import notebook_agents
from notebook_agents import NotebookAgentsError


def test_this_environment_has_no_videosdk() -> None:
    assert importlib.util.find_spec("videosdk") is None


def test_without_the_videosdk_extra_the_runner_and_the_trace_reader_name_the_install() -> None:
    with pytest.raises(ImportError, match=r"pip install 'notebook-agents\[videosdk\]'") as raised:
        notebook_agents.VideoSDKRunner  # noqa: B018
    assert isinstance(raised.value, NotebookAgentsError)  # the package's, as every error it raises
    with pytest.raises(ImportError, match=r"pip install 'notebook-agents\[videosdk\]'"):
        from notebook_agents.videosdk.reading import VideoSDKReader  # noqa: F401
