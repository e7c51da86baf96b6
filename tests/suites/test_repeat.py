"""Repeat and scale (issue 32): a scenario run k times says how many runs passed and whether it
is flaky (its model failing 1 response in 5, the emulator's ``fail_every`` fault, makes that
reproducible offline); scenarios run concurrently with the verdicts they get one at a time;
pytest under pytest-xdist gives the outcomes it gives without."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerError
from notebook_agents.suites import (
    Outcome,
    ScenarioResult,
    SuiteArgumentError,
    SuiteResult,
    load_suite,
    run_suite,
)
from notebook_agents.views.suite_view import SuiteView
from tests.conftest import API_KEY
from tests.kernel import Kernel
from tests.plugin_run import Reported, pytest_in_subprocess
from tests.runner.test_runner import agent_threads, stuck_tool_server, until
from tests.suites.test_suites import STUCK_SUITE


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk.")

    @function_tool
    async def book_room(self, context: RunContext[None]) -> str:
        """Book a room for the caller."""
        return "booked"


def front_desk_server(emulator: Emulator, jobs: list[list[float]]) -> AgentServer:
    """A user's server: its model's faults from the scenario's userdata (``{fail_every: 5}``:
    it fails 1 response in 5); each job's start and end (``perf_counter``) noted in ``jobs``."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        simulation = ctx.simulation_context()
        faults = simulation.userdata() if simulation is not None else {}
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(**faults), api_key=API_KEY, modalities=["text"]
        )
        session: AgentSession[None] = AgentSession(llm=model)
        job = [time.perf_counter(), float("inf")]
        jobs.append(job)
        session.on("close", lambda _: job.__setitem__(1, time.perf_counter()))
        await session.start(agent=FrontDesk(), room=ctx.room)

    return server


FRONT_DESK = """
name: Front desk
scenarios:
  - label: answers every time
    repeat: 3
    turns:
      - user: good morning
        expect: ['next_event().is_message(role="assistant")']
  - label: answers 4 times in 5
    repeat: 5
    userdata: {fail_every: 5}     # its model fails 1 response in 5
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']
  - label: never books
    repeat: 2
    turns:
      - user: good evening
        expect: ['next_event().is_function_call(name="book_room")']
"""


async def front_desk_suite(
    emulator: Emulator, tmp_path: Path, **options: Any
) -> tuple[SuiteResult, list[list[float]], list[str]]:
    """``FRONT_DESK`` run with ``options``: its result, each job's start and end, and the
    labels ``on_result`` was given, as they came."""
    path = tmp_path / "scenarios.yaml"
    path.write_text(FRONT_DESK)
    jobs: list[list[float]] = []
    reported: list[str] = []
    result = await run_suite(
        path,
        lambda: front_desk_server(emulator, jobs),
        on_result=lambda scenario: reported.append(scenario.label),
        **options,
    )
    return result, jobs, reported


def most_at_once(jobs: list[list[float]]) -> int:
    """The most jobs that ran at one time."""
    edges = sorted([(start, 1) for start, _ in jobs] + [(end, -1) for _, end in jobs])
    running = most = 0
    for _, change in edges:  # an end sorts before a start at the same instant
        running += change
        most = max(most, running)
    return most


def verdicts(result: SuiteResult) -> list[tuple[str, Outcome, str, str]]:
    """What each scenario came to: its outcome, its runs and the first line of why."""
    return [(s.label, s.outcome, s.repetition, s.reason.split("\n")[0]) for s in result]


SAID = {"answers every time": "good morning", "answers 4 times in 5": "hello"}


def said_in(run: ScenarioResult) -> list[str]:
    assert run.trace is not None
    return [event.data["text"] for event in run.trace.of_kind("user_message")]


async def test_a_scenario_whose_model_fails_1_response_in_5_is_flaky_4_of_5(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    result, jobs, _ = await front_desk_suite(emulator, tmp_path)

    answers, flaky, never = result
    # one at a time, each run on a job of its own: the fifth response is the one that fails
    assert [run.outcome for run in flaky.runs] == [Outcome.PASSED] * 4 + [Outcome.ERROR]
    assert (flaky.passes, flaky.repeats, flaky.flaky, flaky.pass_at_k) == (4, 5, True, True)
    assert not flaky.passed and flaky.outcome is Outcome.ERROR  # pass^5 does not hold
    assert flaky.repetition == "4/5 passed · flaky"
    assert flaky.reason == flaky.runs[4].reason
    assert flaky.reason.startswith("turn 0 (hello): the turn went wrong: ")
    assert "response failed" in flaky.reason
    assert flaky.trace is flaky.runs[4].trace  # the run to look at: the one that failed
    assert flaky.seconds == pytest.approx(sum(run.seconds for run in flaky.runs))
    # every run passed: not flaky; every run failed: not flaky either, a plain failure
    assert (answers.passed, answers.repetition, answers.flaky) == (True, "3/3 passed", False)
    assert (never.outcome, never.repetition, never.flaky) == (Outcome.FAILED, "0/2 passed", False)
    assert not never.pass_at_k
    assert result.flaky == [flaky] and not result.passed
    assert result.summary() == "Front desk: 1 passed, 1 failed, 1 error (1 flaky)"
    assert len(jobs) == 10 and most_at_once(jobs) == 1
    for scenario in (answers, flaky):  # each run's trace is its own session's
        assert [said_in(run) for run in scenario.runs] == [[SAID[scenario.label]]] * len(
            scenario.runs
        )

    table = SuiteView(result).table
    assert table.repeated and table.summary == result.summary()
    assert [(row["runs"], row["flaky"]) for row in table.rows] == [
        ("3/3 passed", False),
        ("4/5 passed · flaky", True),
        ("0/2 passed", False),
    ]


async def test_scenarios_run_two_at_once_give_the_verdicts_they_give_one_at_a_time(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    one_at_a_time, _, _ = await front_desk_suite(emulator, tmp_path)
    result, jobs, reported = await front_desk_suite(emulator, tmp_path, concurrency=2)

    assert verdicts(result) == verdicts(one_at_a_time)
    assert len(jobs) == 10 and most_at_once(jobs) == 2  # two at once, never more
    assert sorted(reported) == sorted(scenario.label for scenario in result)
    for scenario in result:  # no run's session saw another's turns
        if scenario.label in SAID:
            assert all(said_in(run) == [SAID[scenario.label]] for run in scenario.runs)


async def test_run_suites_repeat_runs_every_scenario_so_many_times(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    result, jobs, _ = await front_desk_suite(emulator, tmp_path, repeat=2)
    # the fault's fifth response never comes in two runs
    assert [s.repetition for s in result] == ["2/2 passed", "2/2 passed", "0/2 passed"]
    assert len(jobs) == 6 and result.flaky == []


async def test_a_scenarios_error_is_its_own_while_another_runs_beside_it(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    suite = tmp_path / "stuck.yaml"
    suite.write_text(STUCK_SUITE.format(stuck="wait forever", tool="wait_forever"))
    stuck, after = await run_suite(suite, lambda: stuck_tool_server(emulator), concurrency=2)
    assert (stuck.outcome, stuck.turn) == (Outcome.ERROR, 0)
    assert "the agent did not answer within 3 s" in stuck.reason
    assert after.outcome is Outcome.PASSED, after.reason


async def test_one_server_for_every_scenario_is_refused_two_at_once_and_nothing_is_left(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    """One ``AgentServer`` runs one job here (a second runner of it would stop the first): at
    once, a fresh server per scenario is needed, said before anything starts, or as soon as a
    function hands the running one out again."""
    path = tmp_path / "scenarios.yaml"
    path.write_text(FRONT_DESK)
    jobs: list[list[float]] = []
    server = front_desk_server(emulator, jobs)
    with pytest.raises(RunnerError, match=r"concurrency=2 needs a fresh AgentServer for each"):
        await run_suite(path, server, concurrency=2)
    assert jobs == []

    with pytest.raises(RunnerError, match="returned a server already running another scenario"):
        await run_suite(path, lambda: server, concurrency=2)
    await until(lambda: agent_threads() == [], "agent_threads() == []")  # the first was stopped
    assert all(end < float("inf") for _, end in jobs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repeat": 0}, "repeat= is how many times to run the scenario, a whole number from 1"),
        ({"repeat": 2.0}, "repeat= is how many times to run the scenario"),
        ({"concurrency": 0}, "concurrency= is how many scenarios run at once, a whole number"),
        ({"concurrency": True}, "concurrency= is how many scenarios run at once"),
    ],
)
async def test_a_repeat_or_concurrency_that_is_no_count_is_refused(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(FRONT_DESK)
    made: list[AgentServer] = []

    def make() -> AgentServer:
        made.append(AgentServer())
        return made[-1]

    with pytest.raises(SuiteArgumentError, match=message):
        await run_suite(path, make, **options)
    assert made == []


STUCK_TWICE = """
name: Two at once
scenarios:
  - label: first
    turns:
      - user: wait forever
        expect: ['contains_function_call(name="wait_forever")']
  - label: second
    turns:
      - user: wait forever
        expect: ['contains_function_call(name="wait_forever")']
"""


@pytest.mark.slow
def test_an_interrupted_cell_stops_every_scenario_running_at_once(tmp_path: Path) -> None:
    """In a real kernel: two scenarios' runners at once, started from tasks of the cell's
    ``run_suite``; an interrupt cancels the cell and stops both (nothing left but the emulator
    the notebook started), the kernel lives, and the next run goes on."""
    (tmp_path / "stuck.yaml").write_text(STUCK_TWICE)
    with Kernel(cwd=str(tmp_path)) as kernel:
        kernel.run_ok(
            "import asyncio\n"
            "from notebook_agents import Emulator, _cells\n"
            "from notebook_agents.suites import run_suite\n"
            "from tests.runner.test_runner import agent_threads, stuck_tool_server, until\n"
            "emulator = Emulator().start()\n"
            "async def two_running():\n"
            "    while agent_threads().count('job_thread_runner') < 2:\n"
            "        await asyncio.sleep(0.01)\n"
            "    print('two running', flush=True)\n",
            timeout=60,
        )
        cell = kernel.submit(
            "watch = asyncio.ensure_future(two_running())\n"
            "await run_suite('stuck.yaml', lambda: stuck_tool_server(emulator), concurrency=2)"
        )
        kernel.wait_output(cell, "two running", timeout=60)
        kernel.interrupt()
        kernel.wait(cell, timeout=30)
        assert cell.error is not None and cell.error["ename"] == "CancelledError"
        kernel.run_ok("await until(lambda: agent_threads() == [], 'agent_threads() == []')")
        assert kernel.eval("[type(started).__name__ for started in _cells._started]") == [
            "Emulator"
        ]
        assert kernel.is_alive()
        kernel.run_ok("emulator.stop()")


XDIST_AGENT = '''
import os
from pathlib import Path

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk.")

    @function_tool
    async def book_room(self, context: RunContext) -> str:
        """Book a room for the caller."""
        return "booked"


def make_server(emulator) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "one process")
        with Path(__file__).with_name("workers.txt").open("a") as noted:
            noted.write(worker + "\\n")
        simulation = ctx.simulation_context()
        faults = simulation.userdata() if simulation is not None else {}
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(**faults), api_key="offline", modalities=["text"]
        )
        await AgentSession(llm=model).start(agent=FrontDesk(), room=ctx.room)

    return server
'''

XDIST_CONFTEST = """
import pytest

from agent import make_server
from notebook_agents import Emulator


@pytest.fixture
def agent_server():
    with Emulator() as emulator:  # each test its own, in whichever worker runs it
        yield lambda: make_server(emulator)
"""

XDIST_SUITE = FRONT_DESK + textwrap.dedent(
    """
      - label: a caller plays it
        instructions: You want a room for two.
      - label: answers again
        turns:
          - user: good night
            expect: ['next_event().is_message(role="assistant")']
    """
).replace("\n", "\n  ")
"""the front desk's suite and two more scenarios, so two workers each get some"""


def first_lines(reported: dict[str, Reported]) -> dict[str, tuple[str, str]]:
    return {name: (test.outcome, test.message.split("\n")[0]) for name, test in reported.items()}


@pytest.mark.slow
def test_pytest_under_xdist_gives_the_outcomes_it_gives_in_one_process(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(XDIST_AGENT)
    (tmp_path / "conftest.py").write_text(XDIST_CONFTEST)
    suite = tmp_path / "scenarios.yaml"
    suite.write_text(XDIST_SUITE)
    assert len(load_suite(suite).scenarios) == 5
    workers = tmp_path / "workers.txt"

    one_process, _ = pytest_in_subprocess(tmp_path, suite)
    assert set(workers.read_text().split("\n")[:-1]) == {"one process"}
    workers.unlink()
    two_workers, _ = pytest_in_subprocess(tmp_path, suite, options=["-n", "2"])
    assert set(workers.read_text().split("\n")[:-1]) == {"gw0", "gw1"}

    # the same outcome and message (its head: livekit's context after it holds times and ids)
    assert first_lines(two_workers) == first_lines(one_process)
    assert {name: test.outcome for name, test in one_process.items()} == {
        "answers every time": "passed",
        "answers 4 times in 5": "failed",
        "never books": "failed",
        "a caller plays it": "skipped",
        "answers again": "passed",
    }
    assert one_process["answers 4 times in 5"].message.startswith(
        "Failed: error (4/5 passed · flaky; its first run that did not pass): turn 0 (hello): "
        "the turn went wrong: "
    )

    # --repeat-scenarios=2: run_suite(..., repeat=2), the fault's fifth response never comes
    options = ["-n", "2", "--repeat-scenarios=2"]
    repeated, _ = pytest_in_subprocess(tmp_path, suite, options=options)
    assert repeated["answers 4 times in 5"].outcome == "passed"
    assert repeated["never books"].message.startswith("Failed: failed (0/2 passed; its first run")
