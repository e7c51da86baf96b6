"""The bench's provider axis: one small entry per realtime provider the emulator serves.

An entry says how to build the provider's realtime model for a trial's ``Endpoint`` (the
emulator with the trial's network settings, or a real service), the truth of a handoff on the
emulator (its totals and its phases), and which environment a user's own ``AgentServer``
reads to reach the endpoint (None: it cannot be pointed there by the environment). Adding a
provider is adding an entry to ``PROVIDERS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import llm

from ..emulator import LatencyModel
from ..emulator.server import base_url as emulator_base_url
from ..phases.truth import PhaseTruths, gemini_handoff_truths, handoff_truths
from .gemini_truth import gemini_ground_truth
from .truth import GroundTruth, ground_truth


@dataclass(frozen=True)
class Endpoint:
    """Where a trial's models connect: the emulator at ``url`` (``http://127.0.0.1:PORT``)
    with this trial's ``settings`` (``rtt_ms``, faults), or a foreign OpenAI-compatible
    ``url`` (``emulator`` False, no settings)."""

    url: str
    api_key: str
    emulator: bool = True
    settings: dict[str, Any] = field(default_factory=dict)

    def openai_base_url(self) -> str:
        """The ``base_url`` an OpenAI plugin takes: the settings in its query string."""
        return emulator_base_url(self.url, **self.settings) if self.emulator else self.url


@dataclass(frozen=True)
class Provider:
    """How the bench reaches one realtime provider."""

    name: str
    realtime_model: Callable[[Endpoint, str | None, str], llm.RealtimeModel]
    """(endpoint, model name or None for the provider's default, modality) -> a model"""
    environment: Callable[[Endpoint], dict[str, str]] | None
    """the variables a user's server reads to reach the endpoint; None: there are none"""
    ground_truth: GroundTruth = ground_truth
    """(level, session, context, history turns, network, items=, tool_reply=) ->
    (handoff_ms, reply_ms)"""
    phase_truths: PhaseTruths = handoff_truths
    """(session, context, items, network, tool=, tool_reply=) -> each handoff phase's truth
    (seconds)"""


def _openai_model(endpoint: Endpoint, model: str | None, modality: str) -> Any:
    from livekit.plugins import openai  # the plugin loads only when a model is built

    return openai.realtime.RealtimeModel(
        base_url=endpoint.openai_base_url(),
        api_key=endpoint.api_key,
        model=model or "gpt-realtime",
        modalities=[modality],  # type: ignore[list-item]
        turn_detection=None,
    )


def _openai_environment(endpoint: Endpoint) -> dict[str, str]:
    # what livekit-plugins-openai reads when the user's code passes no base_url or api_key
    return {"OPENAI_BASE_URL": endpoint.openai_base_url(), "OPENAI_API_KEY": endpoint.api_key}


def _gemini_model(endpoint: Endpoint, model: str | None, modality: str) -> Any:
    from google.genai import types  # the google plugin's extra: loaded only for Gemini

    if not endpoint.emulator:
        raise ValueError("the bench measures Gemini Live on the emulator only")
    kwargs: dict[str, Any] = {"model": model} if model else {}
    modalities = [types.Modality.AUDIO if modality == "audio" else types.Modality.TEXT]
    return _gemini_endpoint(endpoint.url).realtime_model(
        overrides=endpoint.settings, modalities=modalities, **kwargs
    )


@functools.cache
def _gemini_endpoint(emulator_url: str) -> Any:
    """The emulator's Gemini Live endpoint (its TLS URL and CA), asked once per emulator."""
    from ..emulator.gemini_live import GeminiEndpoint

    return GeminiEndpoint.of(emulator_url)


def _gemini_ground_truth(
    level: str,
    session: str,
    context: str,
    history_turns: int,
    latency: LatencyModel,
    *,
    items: int | None = None,
    tool_reply: int | None = None,
) -> tuple[float, float] | None:
    # nothing of B's context is acknowledged: its size costs no round trip; the model's own
    # reply to the tool's output is not awaited by the handoff (``gemini_handoff_truths``)
    del items, tool_reply
    return gemini_ground_truth(level, session, context, history_turns, latency)


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("openai", _openai_model, _openai_environment),
    # google's plugin takes its endpoint and CA in HttpOptions only: a user's server cannot
    # be pointed at the emulator by the environment
    "gemini": Provider("gemini", _gemini_model, None, _gemini_ground_truth, gemini_handoff_truths),
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
