"""The VideoSDK boundary: every private videosdk-agents name we use exists."""

from __future__ import annotations

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
