"""One verdict everywhere: the same scenarios file, run by ``run_suite``, shown by a notebook's
``SuiteView`` (``run_suite`` in a real kernel) and run by pytest (a subprocess, the plugin),
gives each scenario the same outcome and reason, its job the same ``userdata`` and the server's
``on_simulation_end`` the same verdict to veto.

The agent is a user's project as the README writes one: ``agent.py`` with ``make_server()``
(its model from the environment), the suite beside it, a ``conftest.py`` for pytest.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from notebook_agents.emulator import Emulator
from notebook_agents.suites import run_suite
from tests.kernel import Kernel
from tests.plugin_run import pytest_in_subprocess

AGENT = '''
import json
from pathlib import Path

from livekit.agents import (
    Agent, AgentServer, AgentSession, JobContext, RunContext, SimulationContext, function_tool,
)
from livekit.plugins import openai

SEEN = Path(__file__).with_name("seen.jsonl")


def note(**seen):
    with SEEN.open("a") as log:
        log.write(json.dumps(seen) + "\\n")


class Concierge(Agent):
    def __init__(self, city: str) -> None:
        super().__init__(instructions="You are the Concierge.")
        self.city = city

    @function_tool
    async def home_city(self, context: RunContext) -> str:
        """The caller's home city."""
        return self.city


async def on_simulation_end(ctx: SimulationContext) -> None:
    note(ended=ctx.scenario.label, simulator=ctx.simulator_verdict.success)
    if reason := ctx.userdata().get("veto"):
        ctx.fail(reason)


def make_server() -> AgentServer:
    server = AgentServer()

    @server.rtc_session(on_simulation_end=on_simulation_end)
    async def entrypoint(ctx: JobContext) -> None:
        simulation = ctx.simulation_context()
        userdata = simulation.userdata() if simulation is not None else {}
        note(started=simulation and simulation.scenario.label, userdata=userdata)
        session = AgentSession(llm=openai.LLM(model="gpt-4o-mini"))
        await session.start(agent=Concierge(userdata.get("city", "unknown")), room=ctx.room)

    return server
'''

SUITE = """
name: Concierge
scenarios:
  - label: knows the caller's city
    userdata: {city: Oslo}
    turns:
      - user: home city
        expect:
          - next_event().is_function_call(name="home_city")
          - next_event().is_function_call_output(output="Oslo")
  - label: vetoed by the server
    userdata: {veto: no table was booked}
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']
  - label: says hello
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']
  - label: calls no tool for a hello
    turns:
      - user: hello
        expect: ['next_event().is_function_call(name="home_city")']
"""

CONFTEST = """
import pytest

from agent import make_server


@pytest.fixture
def agent_server():
    return make_server
"""

VERDICTS = {
    "knows the caller's city": ("passed", ""),
    "vetoed by the server": ("failed", "on_simulation_end: no table was booked"),
    "says hello": ("passed", ""),
    "calls no tool for a hello": ("failed", "turn 0 (hello): next_event().is_function_call"),
}
"""each scenario's outcome and the start of its reason"""

SEEN = [
    {"started": "knows the caller's city", "userdata": {"city": "Oslo"}},
    {"ended": "knows the caller's city", "simulator": True},
    {"started": "vetoed by the server", "userdata": {"veto": "no table was booked"}},
    {"ended": "vetoed by the server", "simulator": True},
    {"started": "says hello", "userdata": {}},
    {"ended": "says hello", "simulator": True},
    {"started": "calls no tool for a hello", "userdata": {}},
    {"ended": "calls no tool for a hello", "simulator": False},
]
"""what the user's server saw of each scenario's job, in order"""

Verdicts = dict[str, tuple[str, str]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "scenarios.yaml").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    return tmp_path


def seen(project: Path) -> list[dict[str, Any]]:
    """What the server noted, once read (the next path starts a new note)."""
    log = project / "seen.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


async def by_run_suite(project: Path) -> Verdicts:
    spec = importlib.util.spec_from_file_location("users_agent", project / "agent.py")
    assert spec is not None and spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    result = await run_suite(project / "scenarios.yaml", agent.make_server)
    return {s.label: (s.outcome.value, s.reason) for s in result}


def by_suite_view(project: Path, emulator: Emulator) -> Verdicts:
    with Kernel(cwd=str(project)) as kernel:
        kernel.run_ok(
            "import os\n"
            f"os.environ.update({emulator.openai_environment()!r})\n"
            "from agent import make_server\n"
            "from notebook_agents import run_suite\n"
            "suite = await run_suite('scenarios.yaml', make_server)\n"
            "view = suite.view()  # the table a notebook shows\n",
            timeout=120,
        )
        rows = kernel.eval("[(r['label'], r['outcome'], r['reason']) for r in view.table.rows]")
    return {label: (outcome, reason) for label, outcome, reason in rows}


def by_pytest(project: Path, emulator: Emulator) -> Verdicts:
    reported, _ = pytest_in_subprocess(project, env=emulator.openai_environment())
    verdicts = {}
    for name, r in reported.items():
        # pytest's "Failed: ", then the plugin's "outcome: reason"
        outcome, _, reason = r.message.removeprefix("Failed: ").partition(": ")
        verdicts[name] = ("passed", "") if r.outcome == "passed" else (outcome, reason)
    return verdicts


def _said(verdicts: Verdicts) -> Verdicts:
    """Each reason without livekit's context around a failure (the events, which hold each
    run's own ids and timings)."""
    return {
        label: (outcome, reason.split("\nContext around failure")[0])
        for label, (outcome, reason) in verdicts.items()
    }


def _started(verdicts: Verdicts) -> Verdicts:
    """Each reason cut to the length ``VERDICTS`` gives (livekit's message follows it)."""
    return {
        label: (outcome, reason[: len(VERDICTS[label][1])])
        for label, (outcome, reason) in verdicts.items()
    }


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_run_suite_the_suite_view_and_pytest_give_one_verdict(
    project: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch, no_livekit_env: None
) -> None:
    """Under pytest the job was no simulation job: the scenario's userdata was lost (its
    expectation failed) and on_simulation_end was never called (its veto passed)."""
    for name, value in emulator.openai_environment().items():
        monkeypatch.setenv(name, value)
    in_process = await by_run_suite(project)
    assert _started(in_process) == VERDICTS
    assert seen(project) == SEEN

    in_a_notebook = by_suite_view(project, emulator)
    assert _said(in_a_notebook) == _said(in_process)
    assert seen(project) == SEEN

    under_pytest = by_pytest(project, emulator)
    assert _said(under_pytest) == _said(in_process)
    assert seen(project) == SEEN
