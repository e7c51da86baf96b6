"""Deprecated: ``notebook_agents.analysis.network_truth`` holds every provider's network truth."""

from .._deprecated import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "ground_truth": ("notebook_agents.analysis.network_truth", "openai_ground_truth"),
        "GroundTruth": ("notebook_agents.analysis.network_truth", "GroundTruth"),
    },
)
