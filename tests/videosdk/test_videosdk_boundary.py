"""The VideoSDK boundary: every private videosdk-agents name we use exists."""

from __future__ import annotations

from notebook_agents.videosdk import _videosdk_internals as videosdk_internals
from tests.runner.test_runner_faults import missing_names


def test_every_private_videosdk_name_exists() -> None:
    missing = missing_names(videosdk_internals.PRIVATE_NAMES)
    assert not missing, f"videosdk-agents no longer has: {', '.join(missing)}"
