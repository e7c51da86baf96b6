"""Handoff races livekit users reported, each runnable offline against the emulator with the
latency or fault that triggers it, and a detector that says from the trace whether it happened:
``run = await run_race(RACES["paused_handback"])``, ``run.verdict``."""

from .case import (
    LoggedProblem,
    RaceCase,
    RaceMark,
    RaceProvider,
    RaceProviderError,
    RaceRun,
    RaceVerdict,
    WireEvent,
)
from .registry import RACES
from .run import run_race

__all__ = [
    "RACES",
    "LoggedProblem",
    "RaceCase",
    "RaceMark",
    "RaceProvider",
    "RaceProviderError",
    "RaceRun",
    "RaceVerdict",
    "WireEvent",
    "run_race",
]
