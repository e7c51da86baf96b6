"""Deprecated: ``notebook_agents.analysis.network_truth`` holds every provider's network truth."""

from .._deprecated import moved_names

__getattr__ = moved_names(
    __name__,
    {"gemini_ground_truth": ("notebook_agents.analysis.network_truth", "gemini_ground_truth")},
)
