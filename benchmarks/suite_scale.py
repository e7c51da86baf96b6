"""How long a 50-scenario suite takes one at a time and two at once: ``run_suite`` at
``concurrency=1`` and ``2`` (in this process, one emulator), and pytest on the same file with
pytest-xdist at ``-n 1`` and ``-n 2`` (and without xdist, for reference), each pytest worker
with its own emulator (a session fixture of the project's conftest.py).

The suite is generated: 50 scenarios of two typed turns against a user's front-desk agent on
a realtime model (text), a greeting and a booking (a tool call, its output, the reply), each
turn checked with livekit's expectations; every scenario must pass. By default the emulator
answers at once, so the suite is bound by this machine's CPU (the agents of one process share
its interpreter); ``--rtt-ms`` and ``--first-token-ms`` give it a model's latency, which
scenarios run at once overlap. Rounds alternate the ways
so load drifts over all alike; the median wall time of each is printed with the load average
(1 min) before and after.

    .venv/bin/python benchmarks/suite_scale.py --rounds 3
    .venv/bin/python benchmarks/suite_scale.py --rounds 3 --rtt-ms 20 --first-token-ms 150
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from notebook_agents.emulator import Emulator, LatencyModel
from notebook_agents.suites import run_suite

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = 50

AGENT = '''
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk.")

    @function_tool
    async def book_room(self, context: RunContext, nights: int) -> str:
        """Book a room for the caller."""
        return f"booked for {nights} nights"


def make_server(base_url: str) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(
            base_url=base_url, api_key="offline", modalities=["text"]
        )
        await AgentSession(llm=model).start(agent=FrontDesk(), room=ctx.room)

    return server
'''

CONFTEST = """
import json
import os

import pytest

from agent import make_server
from notebook_agents import Emulator, LatencyModel


@pytest.fixture(scope="session")
def emulator():  # one per process: each xdist worker its own
    latency = LatencyModel(**json.loads(os.environ["SUITE_SCALE_LATENCY"]))
    with Emulator(latency=latency) as running:
        yield running


@pytest.fixture
def agent_server(emulator):
    return lambda: make_server(emulator.base_url())
"""

SUITE = "name: Front desk at scale\nscenarios:\n" + "".join(
    f"  - label: guest {i}\n"
    "    turns:\n"
    f"      - user: good morning, I am guest {i}\n"
    "        expect: ['next_event().is_message(role=\"assistant\")']\n"
    f"      - user: book a room for {i % 7 + 1} nights\n"
    "        expect:\n"
    '          - next_event().is_function_call(name="book_room")\n'
    "          - next_event().is_function_call_output()\n"
    '          - next_event().is_message(role="assistant")\n'
    for i in range(SCENARIOS)
)


def load() -> float:
    return os.getloadavg()[0]


def timed_run_suite(project: Path, emulator: Emulator, concurrency: int) -> float:
    from agent import make_server  # type: ignore[import-not-found]  # the project's, on sys.path

    async def run() -> None:
        result = await run_suite(
            project / "scenarios.yaml",
            lambda: make_server(emulator.base_url()),
            concurrency=concurrency,
        )
        assert result.passed, repr(result)

    start = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - start


sessions: dict[int | None, list[float]] = {}
"""pytest's own time of each run (its session: collection, the workers' start and the tests;
not the interpreter's start and the project's conftest.py import), by ``-n``"""


def timed_pytest(project: Path, latency: LatencyModel, workers: int | None) -> float:
    xdist = ["-n", str(workers)] if workers is not None else ["-p", "no:xdist"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(project)]),
        "SUITE_SCALE_LATENCY": json.dumps(latency.as_query()),
    }
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        env.pop(name, None)
    start = time.perf_counter()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "pytest_notebook_agents", "-q"),
            *("-p", "no:cacheprovider", "--rootdir", str(project), "--confcutdir", str(project)),
            *(*xdist, "scenarios.yaml"),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0 and f"{SCENARIOS} passed" in done.stdout, done.stdout[-2000:]
    session = re.search(r"passed in ([\d.]+)s", done.stdout)
    assert session is not None, done.stdout[-2000:]
    sessions.setdefault(workers, []).append(float(session.group(1)))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--rtt-ms", type=float, default=0.0, help="the emulator's round trip (default 0)"
    )
    parser.add_argument(
        "--first-token-ms",
        type=float,
        default=0.0,
        help="the emulator's time to a response's first token (default 0; a real model's is "
        "hundreds of ms)",
    )
    args = parser.parse_args()
    latency = LatencyModel(rtt_ms=args.rtt_ms, first_token_ms=args.first_token_ms)
    emulating = Emulator(latency=latency)
    with tempfile.TemporaryDirectory() as directory, emulating as emulator:
        project = Path(directory)
        (project / "agent.py").write_text(AGENT)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "scenarios.yaml").write_text(SUITE)
        sys.path.insert(0, str(project))
        ways: dict[str, Callable[[], float]] = {
            "run_suite, concurrency=1": lambda: timed_run_suite(project, emulator, 1),
            "run_suite, concurrency=2": lambda: timed_run_suite(project, emulator, 2),
            "pytest (no xdist)": lambda: timed_pytest(project, latency, None),
            "pytest -n 1": lambda: timed_pytest(project, latency, 1),
            "pytest -n 2": lambda: timed_pytest(project, latency, 2),
        }
        timings: dict[str, list[float]] = {way: [] for way in ways}
        loads = [load()]
        timed_run_suite(project, emulator, 1)  # warm: livekit's imports, the first job
        for round_ in range(args.rounds):
            for way, timed in ways.items():
                timings[way].append(timed())
                print(f"round {round_ + 1} {way:26} {timings[way][-1]:6.2f} s", flush=True)
        loads.append(load())
    print(
        f"\n{SCENARIOS} scenarios, {args.rounds} rounds, rtt {args.rtt_ms:g} ms, first token "
        f"{args.first_token_ms:g} ms, load average {loads[0]:.1f} -> "
        f"{loads[1]:.1f} ({os.cpu_count()} cores)"
    )
    print(f"{'way':26} {'median s':>9} {'per scenario ms':>16} {'pytest session s':>17}")
    in_session = dict(zip(list(ways)[2:], [sessions[None], sessions[1], sessions[2]], strict=True))
    for way, seconds in timings.items():
        median = statistics.median(seconds)
        session = f"{statistics.median(in_session[way]):17.2f}" if way in in_session else ""
        print(f"{way:26} {median:9.2f} {median / SCENARIOS * 1000:16.0f} {session}")


if __name__ == "__main__":
    main()
