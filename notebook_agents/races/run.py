"""Run a race case against an emulator of its own: triggered, or as its control."""

from __future__ import annotations

from ..emulator import Emulator, LatencyModel, ReplyRules
from ..trace import Trace
from ._harness import Harness
from .case import Provider, RaceCase, RaceRun


class ProviderNotReady(RuntimeError):
    """The case cannot run on this provider here yet."""


async def run_race(
    case: RaceCase, *, triggered: bool = True, provider: Provider = "openai"
) -> RaceRun:
    """Run ``case`` once (``triggered=False``: its control) and detect the race in its trace.

    The emulator runs in this process on 127.0.0.1 with the case's reply rules, and with its
    trigger's latency and faults when triggered; the real OpenAI realtime plugin talks to it.
    """
    if provider not in case.providers:
        raise ProviderNotReady(
            f"{case.name} runs on {', '.join(case.providers)} here; {provider} needs the Gemini "
            "Live emulator (notebook-agents[gemini]) and a case that runs on it"
        )
    settings = {name: str(value) for name, value in case.trigger.items()} if triggered else {}
    run = RaceRun(
        case=case,
        triggered=triggered,
        trace=Trace(),
        latency=LatencyModel.from_query(settings),
        settings=settings,
    )
    with Emulator(rules=ReplyRules(case.rules)) as emulator:
        harness = Harness(run, emulator.base_url(**settings))
        try:
            await case.scenario(harness)
        finally:
            await harness.aclose()
    run.verdict = case.detect(run)
    return run
