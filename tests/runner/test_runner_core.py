"""What the runners' shared core gives each of them as its own: a forgotten ``await`` names the
runner the user called, not the core's internal classes."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from livekit.agents import AgentServer, JobContext

from notebook_agents import AgentProcess, NotebookRunner, RunnerError

CALLS: dict[str, Callable[[Any], Coroutine[Any, Any, Any]]] = {
    "send_text": lambda runner: runner.send_text("hello"),
    "run": lambda runner: runner.run("hello"),
    "ready": lambda runner: runner.ready(),
    "greeting": lambda runner: runner.greeting(),
    "call": lambda runner: runner.call(print),
}


def _server() -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        raise AssertionError("never started")

    return server


def never_awaited(make: Callable[[], object]) -> list[str]:
    """The "never awaited" warnings of the coroutines ``make`` leaves behind."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()  # its coroutine is dropped at once, never started
        gc.collect()
    return [str(w.message) for w in caught if "was never awaited" in str(w.message)]


RUNNERS: dict[str, Callable[[], NotebookRunner | AgentProcess]] = {
    "NotebookRunner": lambda: NotebookRunner(_server()),
    "AgentProcess": lambda: AgentProcess(),
}


@pytest.mark.parametrize("method", CALLS)
@pytest.mark.parametrize("runner_class", RUNNERS)
def test_a_forgotten_await_names_the_runner_the_user_called(runner_class: str, method: str) -> None:
    runner = RUNNERS[runner_class]()
    warned = never_awaited(lambda: CALLS[method](runner))
    assert warned == [f"coroutine '{runner_class}.{method}' was never awaited"]


def test_a_forgotten_await_of_a_spoken_turn_names_the_runner_too() -> None:
    runner = NotebookRunner(_server())
    warned = never_awaited(lambda: runner.send_audio("hello.wav"))
    assert warned == ["coroutine 'NotebookRunner.send_audio' was never awaited"]


def test_a_subclass_of_a_runner_is_named_as_itself() -> None:
    class FrontDeskRunner(NotebookRunner):
        pass

    runner = FrontDeskRunner(_server())
    warned = never_awaited(lambda: runner.send_text("hello"))
    assert warned == [
        "coroutine 'test_a_subclass_of_a_runner_is_named_as_itself.<locals>.FrontDeskRunner"
        ".send_text' was never awaited"
    ]


def test_submit_text_leaves_no_coroutine_behind_when_refused() -> None:
    runner = NotebookRunner(_server())

    def refused() -> None:
        with pytest.raises(RunnerError, match=r"call runner.start\(\) first"):
            runner.submit_text("hello")

    assert never_awaited(refused) == []
