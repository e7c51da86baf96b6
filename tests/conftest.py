"""Shared fixtures: an in-process emulator on 127.0.0.1 and a dummy API key."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator

# The VideoSDK tests need the videosdk extra, which downgrades protobuf, av and google-api-core
# in a shared environment: `make test` runs them in an environment of their own
# (.venv-videosdk), and this one, without the extra, runs everything else.
if importlib.util.find_spec("videosdk") is None:
    collect_ignore_glob = ["test_videosdk_*.py", "browser/test_videosdk_*.py"]
else:
    collect_ignore_glob = ["test_extras.py"]

# Any non-empty key works against the emulator; tests never contact anything else.
API_KEY = "sk-test-not-a-secret"

MakeModel = Callable[[], openai.realtime.RealtimeModel]


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


def realtime_model(emulator: Emulator) -> openai.realtime.RealtimeModel:
    return openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )


@pytest.fixture
async def models(emulator: Emulator) -> AsyncIterator[MakeModel]:
    """Makes realtime models against the emulator; closes them all after the test."""
    made: list[openai.realtime.RealtimeModel] = []

    def make() -> openai.realtime.RealtimeModel:
        made.append(realtime_model(emulator))
        return made[-1]

    yield make
    for model in made:
        await model.aclose()


@pytest.fixture
def no_livekit_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def runners(no_livekit_env: None) -> Iterator[list[NotebookRunner]]:
    """Runners a test makes; all stopped at the end, whatever happened."""
    made: list[NotebookRunner] = []
    yield made
    for runner in made:
        runner.stop()


async def started(runners: list[NotebookRunner], runner: NotebookRunner) -> NotebookRunner:
    """``runner`` started and ready, stopped when the test ends (it joins ``runners``)."""
    runners.append(runner)
    runner.start()
    await runner.ready()
    return runner
