"""The VideoSDK boundary: its private names we use exist, and the extra is named when absent."""

from __future__ import annotations

import importlib
import sys

import pytest

from notebook_agents.videosdk import _videosdk_internals as videosdk_internals

from .test_runner_faults import _has


def test_every_private_videosdk_name_exists() -> None:
    missing = [
        f"{getattr(owner, '__qualname__', owner.__name__)}.{name}"
        for owner, names in videosdk_internals.PRIVATE_NAMES.items()
        for name in names
        if not _has(owner, name)
    ]
    assert not missing, f"videosdk-agents no longer has: {', '.join(missing)}"


def test_without_the_extra_the_runner_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("notebook_agents.videosdk")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "videosdk.agents", None)  # as if not installed
    import notebook_agents

    with pytest.raises(ImportError, match=r"pip install 'notebook-agents\[videosdk\]'"):
        notebook_agents.VideoSDKRunner  # noqa: B018
    with pytest.raises(ImportError, match=r"notebook-agents\[videosdk\]"):
        notebook_agents.Trace().attach_videosdk(object())
    monkeypatch.undo()
    assert importlib.import_module("notebook_agents.videosdk").VideoSDKRunner
