"""Run a race case against an emulator of its own: triggered, or as its control."""

from __future__ import annotations

from ..emulator import Emulator, LatencyModel, ReplyRules
from ..emulator.gemini_live import require_gemini
from ..trace import Trace
from ._harness import Harness
from .case import RaceCase, RaceProvider, RaceProviderError, RaceRun


async def run_race(
    case: RaceCase, *, triggered: bool = True, provider: RaceProvider = "openai"
) -> RaceRun:
    """Run ``case`` once (``triggered=False``: its control) and detect the race in its trace.

    The emulator runs in this process on 127.0.0.1 with the case's reply rules, and with its
    trigger's latency and faults when triggered; livekit's unmodified realtime plugin of
    ``provider`` (OpenAI Realtime, or Gemini Live over the emulator's TLS site) talks to it.
    """
    if provider not in case.providers:
        raise RaceProviderError(
            f"{case.name} runs on {', '.join(case.providers)} only: {case.only_because}; "
            f"pick a case whose providers include {provider!r}"
        )
    if provider == "gemini":
        require_gemini()
    settings = {name: str(value) for name, value in case.trigger.items()} if triggered else {}
    run = RaceRun(
        case=case,
        triggered=triggered,
        trace=Trace(),
        latency=LatencyModel.from_query(settings),
        settings=settings,
    )
    with Emulator(rules=ReplyRules(case.rules)) as emulator:
        harness = Harness(run, emulator, provider)
        try:
            await case.scenario(harness)
        finally:
            await harness.aclose()
    run.verdict = case.detect(run)
    return run
