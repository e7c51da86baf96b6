"""Deprecated: ``notebook_agents.analysis.network_truth`` holds every provider's network truth."""

from __future__ import annotations

import warnings
from typing import Any

from ..analysis import network_truth

_RENAMED = {
    "ground_truth": "openai_ground_truth",
    "GroundTruth": "GroundTruth",
}


def __getattr__(name: str) -> Any:
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = _RENAMED[name]
    warnings.warn(
        f"{__name__}.{name} is deprecated and will be removed in the next release: use "
        f"notebook_agents.analysis.network_truth.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(network_truth, new)
