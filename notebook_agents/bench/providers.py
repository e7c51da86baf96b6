"""The bench's provider axis: one small entry per realtime provider the emulator serves.

An entry says how to build the provider's realtime model for a trial's ``Endpoint`` (the
emulator with the trial's network settings, or a real service), the truth of a handoff on the
emulator (its totals and its phases), and which environment a user's own ``AgentServer``
reads to reach the endpoint (its code builds its models with no endpoint). Adding a provider
is adding an entry to ``PROVIDERS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import llm

from ..analysis.network_truth import (
    GROUND_TRUTHS,
    GroundTruth,
    PhaseTruths,
    gemini_handoff_truths,
    handoff_truths,
)
from ..emulator import EmulatorError, GeminiEndpoint
from ..emulator.gemini_live import genai_types, require_gemini
from ..emulator.server import base_url as emulator_base_url
from .results import BenchmarkConfigError


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
    environment: Callable[[Endpoint], dict[str, str]]
    """the variables a user's server reads to reach the endpoint"""
    ground_truth: GroundTruth = GROUND_TRUTHS["openai"]
    """(level, session, context, history turns, network, items=, tool_reply=) ->
    (handoff_ms, reply_ms)"""
    phase_truths: PhaseTruths = handoff_truths
    """(session, context, items, network, tool=, tool_reply=) -> each handoff phase's truth
    (seconds)"""
    require: Callable[[], None] | None = None
    """raises, naming the extra to install, when the provider's client side is missing"""
    lends_environment: bool = True
    """whether a trial of another provider sets this one's environment too, so an agent that
    pins this provider's model is still made (and the trial names that): not where making the
    environment costs something (Gemini's starts a TLS site and replaces ``SSL_CERT_FILE``)"""

    def installed(self) -> bool:
        """Whether the provider's client side is installed (``require`` would not raise)."""
        if self.require is None:
            return True
        try:
            self.require()
        except EmulatorError:
            return False
        return True


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
    kwargs: dict[str, Any] = {"model": model} if model else {}
    types = genai_types()  # the google plugin's extra, loaded only for Gemini
    modalities = [types.Modality.AUDIO if modality == "audio" else types.Modality.TEXT]
    return _gemini_endpoint(endpoint).realtime_model(
        overrides=endpoint.settings, modalities=modalities, **kwargs
    )


def _gemini_environment(endpoint: Endpoint) -> dict[str, str]:
    # what google-genai reads when the user's RealtimeModel() has no http_options: the URL
    # (the settings in its path), the CA file, a placeholder key
    return _gemini_endpoint(endpoint).environment(**endpoint.settings)


def _gemini_endpoint(endpoint: Endpoint) -> GeminiEndpoint:
    if not endpoint.emulator:
        raise BenchmarkConfigError("the bench measures Gemini Live on the emulator only")
    return _emulator_gemini(endpoint.url)


@functools.cache
def _emulator_gemini(emulator_url: str) -> GeminiEndpoint:
    """The emulator's Gemini Live endpoint (its TLS URL, CA and CA file), asked once per
    emulator (``forget_endpoints`` when it stops: a later one may take its port)."""
    return GeminiEndpoint.of(emulator_url)


def forget_endpoints() -> None:
    """Forget the endpoints asked of an emulator that has stopped (its CA file is gone)."""
    _emulator_gemini.cache_clear()


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("openai", _openai_model, _openai_environment),
    "gemini": Provider(
        "gemini",
        _gemini_model,
        _gemini_environment,
        GROUND_TRUTHS["gemini"],
        gemini_handoff_truths,
        require=require_gemini,
        lends_environment=False,
    ),
}
"""every provider the bench can measure, by the name ``--provider`` takes"""


def provider(name: str) -> Provider:
    """The entry for ``name``; ``BenchmarkConfigError`` names the providers there are."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise BenchmarkConfigError(
            f"provider {name!r}: the bench knows {', '.join(sorted(PROVIDERS))}"
        ) from None
