"""Runners started from notebook cells, in a REAL ipykernel: re-running a cell replaces what that
cell started, and only that; runners started from other cells keep running side by side.

Every runner here comes from one ``start_call`` function, as in notebook 03: the same entrypoint
(module and qualified name) for all of them, a new ``AgentServer`` each.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernel import Kernel
from tests.runner.test_runner_kernel import LEAKS, SETUP

START_CALL = """
from notebook_agents import _cells

def start_call(name):
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(base_url=EMU_URL, api_key="x", modalities=["text"])
        session = AgentSession(llm=model)
        await session.start(agent=Agent(instructions=f"You are {name}."), room=ctx.room)

    return NotebookRunner(server).start()


def calls(**runners):
    return {name: runner.state.value for name, runner in runners.items()}


def worker_starts(runner):
    return sum(line.message == "starting worker" for line in runner.logs.lines)
"""


def said_hi(name: str) -> str:
    return f'You are {name}. You said: "hi".'


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    with Kernel() as kernel:
        kernel.run_ok(SETUP, timeout=60)
        kernel.run_ok(START_CALL)
        kernel.run_ok(LEAKS + "base_tasks = asyncio.all_tasks() - cell_tasks()")
        # the first call in a kernel starts livekit's lazy parts: the baseline comes after one
        kernel.run_ok("warm = start_call('Ada')\nawait warm.ready()\nwarm.stop()")
        kernel.run_ok("baseline = leak_state()")
        yield kernel


def _nothing_left(kernel: Kernel) -> None:
    state = kernel.eval(
        "dict(threads=agent_threads(), "
        "running=sum(isinstance(s, NotebookRunner) for s in _cells._started), "
        "livekit_propagates=logging.getLogger('livekit').propagate)"
    )
    assert state == {"threads": [], "running": 0, "livekit_propagates": True}
    # threads, sockets, file descriptors and tasks as before the calls (the last ones to go
    # are reaped just after their stop: polled briefly)
    deadline = time.monotonic() + 5
    left = kernel.eval("dict(now=leak_state(), baseline=baseline)")
    while left["now"] != left["baseline"] and time.monotonic() < deadline:
        left = kernel.eval("dict(now=leak_state(), baseline=baseline)")
    assert left["now"] == left["baseline"]


@pytest.mark.timeout(90)
def test_two_cells_starting_calls_through_one_function_both_keep_running(kernel: Kernel) -> None:
    first_cell = "first = start_call('Ada')\nawait first.ready()"
    second_cell = "second = start_call('Bo')\nawait second.ready()"
    kernel.run_ok(first_cell, cell_id="first")
    kernel.run_ok(second_cell, cell_id="second")
    both = kernel.eval(
        "dict(calls=calls(first=first, second=second), threads=agent_threads(), "
        "replies=[await first.send_text('hi'), await second.send_text('hi')], "
        "starts=[worker_starts(first), worker_starts(second)])"
    )
    assert both == {
        "calls": {"first": "running", "second": "running"},
        "threads": ["job_thread_runner"] * 2 + ["notebook-agents-server"] * 2,
        "replies": [said_hi("Ada"), said_hi("Bo")],
        "starts": [1, 1],  # each runner's logs are its own server's
    }

    # re-running the first cell replaces the call it started, and only that one
    assert _rerun_first(kernel, first_cell) == _replaced_only_first("Ada")
    # so does an edited first cell: it is the same cell (JupyterLab sends its id)
    assert _rerun_first(kernel, "first = start_call('Cy')\nawait first.ready()") == (
        _replaced_only_first("Cy")
    )

    # each stops on its own
    kernel.run_ok("second.stop()")
    one_left = kernel.eval("dict(calls=calls(first=first, second=second), threads=agent_threads())")
    assert one_left == {
        "calls": {"first": "running", "second": "stopped"},
        "threads": ["job_thread_runner", "notebook-agents-server"],
    }
    assert kernel.eval("await first.send_text('hi')") == said_hi("Cy")
    kernel.run_ok("first.stop()")
    _nothing_left(kernel)


def _rerun_first(kernel: Kernel, code: str) -> Any:
    """Run ``code`` as the cell "first" again: the calls, and what each says to "hi"."""
    kernel.run_ok("replaced = first")
    kernel.run_ok(code, cell_id="first")
    return kernel.eval(
        "dict(calls=calls(replaced=replaced, first=first, second=second), "
        "replies=[await first.send_text('hi'), await second.send_text('hi')])"
    )


def _replaced_only_first(name: str) -> dict[str, Any]:
    return {
        "calls": {"replaced": "stopped", "first": "running", "second": "running"},
        "replies": [said_hi(name), said_hi("Bo")],
    }


@pytest.mark.timeout(90)
def test_without_cell_ids_a_cell_is_its_code(kernel: Kernel) -> None:
    # as nbclient or a console sends cells: no id, so a cell is told by its code
    pair_cell = "pair = [start_call(name) for name in ('Ada', 'Bo')]\nawait pair[1].ready()"
    kernel.run_ok(pair_cell)
    kernel.run_ok("other = start_call('Cy')\nawait other.ready()")
    kernel.run_ok("earlier = pair")
    kernel.run_ok(pair_cell)  # the same code again: a re-run of that cell
    state = kernel.eval(
        "dict(earlier=calls(a=earlier[0], b=earlier[1]), pair=calls(a=pair[0], b=pair[1]), "
        "other=other.state.value, reply=await other.send_text('hi'))"
    )
    # both calls a cell starts in one run live; a re-run replaces both, and nothing else
    assert state == {
        "earlier": {"a": "stopped", "b": "stopped"},
        "pair": {"a": "running", "b": "running"},
        "other": "running",
        "reply": said_hi("Cy"),
    }
    kernel.run_ok("for runner in (*pair, other): runner.stop()")
    _nothing_left(kernel)


@pytest.mark.timeout(90)
def test_a_call_started_off_the_cells_code_is_no_cells_to_replace(kernel: Kernel) -> None:
    # a thread (or a widget's callback) starts a call while the cell runs: not the cell's
    threaded = (
        "box = []\n"
        "thread = threading.Thread(target=lambda: box.append(start_call('Th')))\n"
        "thread.start()\n"
        "thread.join()\n"
        "await box[0].ready()\n"
        "started.append(box[0])"
    )
    kernel.run_ok("started = []")
    kernel.run_ok(threaded, cell_id="threaded")
    kernel.run_ok(threaded, cell_id="threaded")
    state = kernel.eval(
        "dict(calls=calls(one=started[0], two=started[1]), "
        "replies=[await runner.send_text('hi') for runner in started])"
    )
    assert state == {
        "calls": {"one": "running", "two": "running"},
        "replies": [said_hi("Th")] * 2,
    }
    kernel.run_ok("for runner in started: runner.stop()")
    _nothing_left(kernel)
