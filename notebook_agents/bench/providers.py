"""The bench's provider axis: one small entry per realtime provider the emulator serves.

An entry says how to build the provider's realtime model against a base_url (the emulator's,
with the trial's network in it, or a real endpoint), which environment a user's own
``AgentServer`` reads to reach that endpoint, and the truth of a handoff on the emulator.
Adding a provider is adding an entry to ``PROVIDERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from livekit.agents import llm

from ..phases.truth import handoff_truths
from .truth import Truths


@dataclass(frozen=True)
class Provider:
    """How the bench reaches one realtime provider."""

    name: str
    realtime_model: Callable[[str, str, str | None, str], llm.RealtimeModel]
    """(base_url, api_key, model or None for the provider's default, modality) -> a model"""
    environment: Callable[[str, str], dict[str, str]]
    """(base_url, api_key) -> the variables a user's server reads to reach that endpoint"""
    truths: Truths = handoff_truths
    """(session, context, items, network) -> the network's share of each handoff phase on
    the emulator, in seconds by phase name"""


def _openai_model(base_url: str, api_key: str, model: str | None, modality: str) -> Any:
    from livekit.plugins import openai  # the plugin loads only when a model is built

    return openai.realtime.RealtimeModel(
        base_url=base_url,
        api_key=api_key,
        model=model or "gpt-realtime",
        modalities=[modality],  # type: ignore[list-item]
        turn_detection=None,
    )


def _openai_environment(base_url: str, api_key: str) -> dict[str, str]:
    # what livekit-plugins-openai reads when the user's code passes no base_url or api_key
    return {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key}


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("openai", _openai_model, _openai_environment),
}
"""every provider the bench can measure, by the name ``--provider`` takes"""


def provider(name: str) -> Provider:
    """The entry for ``name``; ValueError names the providers there are."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise ValueError(
            f"provider {name!r}: the bench knows {', '.join(sorted(PROVIDERS))}"
        ) from None
