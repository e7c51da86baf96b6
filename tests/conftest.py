"""Shared fixtures: an in-process emulator on 127.0.0.1 and a dummy API key; the rules that
mark each test ``kernel``, ``browser`` or ``videosdk`` (pyproject.toml registers the markers)."""

from __future__ import annotations

import importlib.util
import inspect
import types
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator

# The VideoSDK tests need the videosdk extra, which downgrades protobuf, av and google-api-core
# in a shared environment: `make test` runs them in an environment of their own
# (.venv-videosdk), and this one, without the extra, runs everything else.
if importlib.util.find_spec("videosdk") is None:
    collect_ignore_glob = ["videosdk/*", "browser/test_videosdk_*.py"]
else:
    collect_ignore_glob = ["test_extras.py"]

TESTS = Path(__file__).resolve().parent
STARTS_A_KERNEL = frozenset({"Kernel", "NotebookClient"})
"""tests/kernel.py's real ipykernel; nbclient's, which runs a notebook in one"""
SPEAKS_INTO_A_SESSION = frozenset({"synthesize", "send_audio"})
"""a caller's synthesized speech, played into a session in real time (``send_audio`` alone
is also how a test checks that audio which is no speech is refused, at once)"""


def _names_reached(function: object, seen: set[types.CodeType]) -> set[str]:
    """The names ``function`` uses, with those of the tests' own helpers it calls, however
    deep (imported from another test module too)."""
    code = getattr(inspect.unwrap(function), "__code__", None)  # type: ignore[arg-type]
    if not isinstance(code, types.CodeType):
        return set()
    pending, names = [code], set[str]()
    while pending:
        current = pending.pop()
        if current not in seen:
            seen.add(current)
            names.update(current.co_names)
            pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    scope = getattr(inspect.unwrap(function), "__globals__", {})  # type: ignore[arg-type]
    for name in list(names):
        helper = scope.get(name)
        if inspect.isfunction(helper) and helper.__module__.split(".")[0] == "tests":
            names |= _names_reached(helper, seen)
    return names


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks by rule, so a test added where a rule looks is marked as it is written:
    ``browser`` under tests/browser/; ``videosdk`` under tests/videosdk/ (and a browser
    ``test_videosdk_*.py``); ``kernel`` for a test using a ``kernel`` fixture or starting one
    itself or through its helpers and its module's fixtures (a ``Kernel``, nbclient's
    ``NotebookClient``); ``voice`` likewise for one playing synthesized speech into a session
    or using the machine's devices.
    ``slow`` is the modules' own (``pytestmark``) or the tests'."""
    for item in items:
        if item.path.is_relative_to(TESTS / "browser"):
            item.add_marker(pytest.mark.browser)
        if item.path.is_relative_to(TESTS / "videosdk") or item.path.name.startswith(
            "test_videosdk_"
        ):
            item.add_marker(pytest.mark.videosdk)
        if not isinstance(item, pytest.Function):
            continue
        module = vars(item.module) if item.module is not None else {}
        seen: set[types.CodeType] = set()
        names = _names_reached(item.function, seen)
        for fixture in item.fixturenames:
            if fixture in module:
                names |= _names_reached(module[fixture], seen)
        if "kernel" in item.fixturenames or names & STARTS_A_KERNEL:
            item.add_marker(pytest.mark.kernel)
        if SPEAKS_INTO_A_SESSION.issubset(names) or "LocalDevices" in names:
            item.add_marker(pytest.mark.voice)


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
