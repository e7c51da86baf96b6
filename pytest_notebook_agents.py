"""pytest runs scenarios files as tests: each scenario of a ``scenarios.yaml`` (or
``*.scenarios.yaml``, or any YAML file named on the command line) is a test with the verdict
``run_suite`` gives it in a notebook. And a livekit-style eval (an ``AgentSession`` in a test)
runs offline on two fixtures: ``emulator`` and ``llm_model``, a model on it.

Loaded by the ``pytest11`` entry point when notebook-agents is installed (or ``-p
pytest_notebook_agents``). A module of its own, outside the package, and light: pytest loads it
in every run of an environment that has notebook-agents, and the package (livekit under it)
is imported only once a scenarios file is collected, not seconds into each unrelated run.
The agent comes from a fixture the project defines, ``agent_server`` (an ``AgentServer``, or a
function making one, or a runner such as a ``VideoSDKRunner``, for each scenario); ``judge_llm``
gives ``judge(llm, ...)`` expectations and ``agent_expectations`` their model; ``caller_llm``
plays the caller of a scenario with only ``instructions``: by default the OpenAI-compatible
model ``--caller-model`` names (at ``--caller-base-url``, with the key in ``OPENAI_API_KEY``), at
most ``--caller-max-turns`` turns. A project's own fixture of any of these names (in a
conftest.py) overrides the plugin's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from livekit.plugins import openai

    from notebook_agents.emulator import Emulator
    from notebook_agents.suites.results import ScenarioResult
    from notebook_agents.suites.run import ServerSource, SuiteRun
    from notebook_agents.suites.suite_file import ScriptedScenario

try:  # pytest-asyncio (livekit's evals' runner) runs an async fixture only when it marks it
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # another async plugin (anyio's) takes plain ones
    async_fixture = pytest.fixture  # type: ignore[assignment]

FILE_NAMES = ("scenarios.yaml", "scenarios.yml")
"""the files collected: these names, or ending in ``.`` and one of them"""
_MADE_CALLER = pytest.StashKey["openai.LLM"]()
"""the caller model the plugin made for a test: closed on the loop the test used it on (an
HTTP client's connections belong to one loop)"""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("notebook-agents", "scenarios files (notebook-agents)")
    group.addoption(
        "--caller-model",
        metavar="MODEL",
        help="an OpenAI-compatible model to play the caller of scenarios with only "
        "`instructions` (its key in OPENAI_API_KEY); without one they are skipped as not runnable",
    )
    group.addoption(
        "--caller-base-url",
        metavar="URL",
        help="the caller model's service (default: OPENAI_BASE_URL, else OpenAI's)",
    )
    group.addoption(
        "--caller-max-turns",
        type=int,
        metavar="N",
        help="the caller's turns at most: a call it has not ended stops there (default: "
        "run_suite's max_turns)",
    )
    group.addoption(
        "--repeat-scenarios",
        type=int,
        metavar="K",
        help="run each scenario of a scenarios file K times (a scenario's own `repeat:` "
        "otherwise), as run_suite(..., repeat=K): a test passes if every run did, and a "
        "failure says how many did and whether the scenario is flaky",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    name = file_path.name
    named = name in FILE_NAMES or name.endswith(tuple("." + n for n in FILE_NAMES))
    if named or (file_path.suffix in (".yaml", ".yml") and parent.session.isinitpath(file_path)):
        collector: pytest.Collector = ScenariosFile.from_parent(parent, path=file_path)
        return collector
    return None


class ScenariosFile(pytest.File):
    """A scenarios file: a test per scenario, named by its label. A scenario run k times
    (``repeat:``) is still one test, which runs it k times and passes if every run did: the
    verdict ``run_suite`` gives it, with how many runs passed and whether it is flaky, which
    a test per run could not say. pytest-xdist (``-n 2``) spreads the scenarios over its
    workers, each process running its own agents (and the emulator your fixture starts)."""

    def collect(self) -> Iterator[pytest.Item]:
        from notebook_agents.suites.run import SuiteRun
        from notebook_agents.suites.suite_file import load_suite

        suite = load_suite(self.path)  # a SuiteFileError names the line and the fix
        # one simulation run of the file, as run_suite's (each xdist worker its own)
        run = SuiteRun(suite, repeat=self.config.getoption("repeat_scenarios"))
        for scenario in suite.scenarios:
            yield ScenarioItem.from_parent(
                self, name=scenario.label, callobj=_scenario_test(run, scenario)
            )


class ScenarioItem(pytest.Function):
    """One scenario as a test: pytest's fixtures, reported by its file, line and label."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        scenario = self.obj.scenario
        return self.path, scenario.line - 1 if scenario.line else None, scenario.label


def _scenario_test(run: SuiteRun, scenario: ScriptedScenario) -> Callable[..., None]:
    def scenario_test(
        agent_server: ServerSource, judge_llm: Any, caller_llm: Any, request: pytest.FixtureRequest
    ) -> None:
        from notebook_agents.suites.results import Outcome

        max_turns = request.config.getoption("caller_max_turns")
        limit = {} if max_turns is None else {"max_turns": max_turns}

        async def played() -> ScenarioResult:
            try:  # run_suite's own way through a scenario: the same job, hooks, runs and verdict
                return await run.scenario(
                    scenario, agent_server, judge_llm=judge_llm, caller_llm=caller_llm, **limit
                )
            finally:
                if made := request.node.stash.get(_MADE_CALLER, None):
                    await made.aclose()

        result = asyncio.run(played())
        if result.outcome is Outcome.NOT_RUNNABLE:
            pytest.skip(f"not runnable: {result.reason}")
        if not result.passed:
            runs = f" ({result.repetition}; its first run that did not pass)" if result.runs else ""
            pytest.fail(f"{result.outcome.value}{runs}: {result.reason}", pytrace=False)

    scenario_test.__doc__ = f"{run.suite.name}: {scenario.label}"
    scenario_test.scenario = scenario  # type: ignore[attr-defined]
    return scenario_test


@pytest.fixture
def agent_server() -> ServerSource:
    """The agent the scenarios run against: define this fixture in your conftest.py."""
    raise pytest.UsageError(
        "scenarios files need the agent to run: define a fixture `agent_server` in "
        "conftest.py returning your AgentServer (or a function making one, or a runner, per "
        "scenario)"
    )


@pytest.fixture
def judge_llm() -> Any:
    """The model ``judge(llm, intent=...)`` expectations use: override it in conftest.py
    (none by default: such a scenario is skipped as not runnable)."""
    return None


@pytest.fixture
def caller_llm(request: pytest.FixtureRequest) -> Any:
    """The model playing the caller of a scenario with only ``instructions``: livekit's OpenAI
    ``LLM`` for ``--caller-model`` (at ``--caller-base-url``), or None (such a scenario is
    skipped as not runnable). Override it in conftest.py to give any livekit ``LLM``."""
    model, base_url = (request.config.getoption(o) for o in ("caller_model", "caller_base_url"))
    if model is None:
        if base_url is not None:
            raise pytest.UsageError(
                "--caller-base-url names a service: give the model too, --caller-model MODEL"
            )
        return None
    if not os.environ.get("OPENAI_API_KEY"):
        raise pytest.UsageError(
            f"--caller-model {model} needs its service's key in OPENAI_API_KEY (any value for "
            "a local service that takes none)"
        )
    from livekit.plugins import openai

    made = openai.LLM(model=model, base_url=base_url)
    request.node.stash[_MADE_CALLER] = made
    return made


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """A running ``Emulator`` on 127.0.0.1 for the test, stopped after it: the model services
    it emulates, offline, for a livekit-style eval (``emulator.settings.rules`` scripts
    replies and judges' verdicts)."""
    from notebook_agents.emulator import Emulator

    with Emulator() as running:
        yield running


@async_fixture
async def llm_model(emulator: Emulator) -> AsyncIterator[openai.LLM]:
    """livekit's OpenAI ``LLM`` on the test's ``emulator`` (a placeholder key; closed after
    the test): ``AgentSession(llm=llm_model)`` runs an eval offline, and ``judge(llm_model,
    intent=...)`` gives the verdict an emulator rule scripts."""
    from livekit.plugins import openai

    key = emulator.openai_environment()["OPENAI_API_KEY"]
    model = openai.LLM(base_url=emulator.base_url(), api_key=key, model="gpt-4o-mini")
    try:
        yield model
    finally:
        await model.aclose()
