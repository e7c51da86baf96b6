"""AgentProcess in a REAL ipykernel: the agent processes it starts never outlive the cell run
that replaced them, nor the kernel (shut down, or killed with SIGKILL).

The agent is PR #5229's greeter, unchanged, run by ``python -m livekit.agents console`` in a real
subprocess against an emulator in the kernel; processes are found with psutil by PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.kernel import Kernel

REPO = Path(__file__).resolve().parents[2]
SCRIPT = str(REPO / "tests" / "upstream" / "greeter_weather_console.py")
SETUP = f"""
from notebook_agents import AgentProcess
from notebook_agents.emulator import Emulator
emulator = Emulator().start()
SCRIPT = {SCRIPT!r}
"""
START_CELL = "ap = AgentProcess(SCRIPT, emulator=emulator).start()\nawait ap.ready()"
"""the cell of the issue, as a user writes it"""


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    with Kernel() as kernel:
        kernel.run_ok(SETUP, timeout=60)
        yield kernel


def agent_processes(kernel_pid: int) -> list[psutil.Process]:
    """The kernel's children that run an agent (livekit's ``console --connect-addr``)."""
    found = []
    for child in psutil.Process(kernel_pid).children():
        try:
            if "--connect-addr" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def with_descendants(processes: list[psutil.Process]) -> list[psutil.Process]:
    every = list(processes)
    for process in processes:
        every.extend(process.children(recursive=True))
    return every


def alive(process: psutil.Process) -> bool:
    """Running (a zombie has ended: only its exit status waits to be read)."""
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def assert_all_end(processes: list[psutil.Process], timeout: float) -> None:
    """Every one of ``processes`` ends within ``timeout`` (waited for, not slept); those left
    are killed (by PID: this test's kernel started them) before the test fails naming them."""
    deadline = time.monotonic() + timeout
    left = [p for p in processes if alive(p)]
    while left and time.monotonic() < deadline:
        psutil.wait_procs(left, timeout=0.2)
        left = [p for p in left if alive(p)]
    described = [f"{p.pid} (parent {p.ppid()}): {' '.join(p.cmdline())[:120]}" for p in left]
    for process in left:
        process.kill()
    assert described == []


def start_agent(kernel: Kernel) -> list[psutil.Process]:
    """Run the issue's cell; the agent it left running and its descendants."""
    kernel.run_ok(START_CELL, timeout=90, cell_id="start-agent")
    agents = agent_processes(kernel.pid)
    assert len(agents) == 1, agents
    return with_descendants(agents)


@pytest.mark.timeout(180)
def test_a_rerun_cell_leaves_one_agent_process_and_stops_the_first(kernel: Kernel) -> None:
    first = start_agent(kernel)
    kernel.run_ok("first = ap")
    start_agent(kernel)  # the same cell again
    agents = agent_processes(kernel.pid)
    assert len(agents) == 1 and agents[0].pid != first[0].pid
    assert_all_end(first, 10)
    state = kernel.eval("dict(first=first.state.value, second=ap.state.value)")
    assert state == {"first": "stopped", "second": "running"}
    assert kernel.eval("await ap.send_text('hello')", timeout=60) is not None


@pytest.mark.timeout(180)
def test_a_kernel_shut_down_leaves_no_agent_process(kernel: Kernel) -> None:
    started = start_agent(kernel)
    kernel.shutdown()
    assert_all_end(started, 20)


@pytest.mark.timeout(180)
def test_a_kernel_killed_with_sigkill_leaves_no_agent_process(kernel: Kernel) -> None:
    started = start_agent(kernel)
    os.kill(kernel.pid, signal.SIGKILL)  # the kernel this test started, by its PID
    assert_all_end(started, 20)


EXITS_RUNNING = f"""
import asyncio
from notebook_agents import AgentProcess
from notebook_agents.emulator import Emulator

async def main():
    agent = AgentProcess({SCRIPT!r}, emulator=Emulator().start()).start()
    await agent.ready()
    print(agent.process.pid, flush=True)

asyncio.run(main())  # and exits, the agent still running
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_python_that_exits_with_its_agent_running_stops_it_first(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    exited = subprocess.run(  # a script, as a kernel: its exit runs what it registered
        [sys.executable, "-c", EXITS_RUNNING], env=env, cwd=tmp_path, capture_output=True,
        text=True, timeout=90, check=False,
    )  # fmt: skip
    assert exited.returncode == 0, exited.stderr
    agent = int(exited.stdout.split()[-1])
    # stopped (and reaped) before the exit, not ended later by its watcher
    assert not psutil.pid_exists(agent)
