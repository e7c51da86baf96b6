"""The pytest plugin's eval fixtures: a user's livekit-style eval (an ``AgentSession`` in a test,
as livekit's agent starter writes its tests) runs offline on ``emulator`` and ``llm_model``, with
no conftest.py of the user's. pytest runs as a subprocess, on a test file in a folder of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_examples import DOCS, python_block
from tests.plugin_run import pytest_in_subprocess

CHECKING = DOCS / "guides" / "checking.md"

EVALS = '''
import pytest
from livekit.agents import Agent, AgentSession, RunContext, function_tool, mock_tools

from notebook_agents import ReplyContext, VerdictReply


class Assistant(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are a helpful voice AI assistant.")

    @function_tool
    async def lookup_weather(self, context: RunContext, location: str) -> str:
        """Look up the weather in a location."""
        return "sunny with a temperature of 70 degrees."


@pytest.mark.asyncio
async def test_offers_assistance(llm_model) -> None:
    async with AgentSession(llm=llm_model) as session:
        await session.start(Assistant())
        result = await session.run(user_input="Hello")
        result.expect.next_event().is_message(role="assistant")
        result.expect.no_more_events()


@pytest.mark.asyncio
async def test_looks_up_the_weather(llm_model) -> None:
    async with AgentSession(llm=llm_model) as session:
        await session.start(Assistant())
        result = await session.run(user_input="lookup weather location=Paris")
        result.expect.next_event().is_function_call(
            name="lookup_weather", arguments={"location": "Paris"}
        )
        result.expect.next_event().is_function_call_output(
            output="sunny with a temperature of 70 degrees."
        )
        result.expect.next_event().is_message(role="assistant")
        result.expect.no_more_events()


@pytest.mark.asyncio
async def test_a_mocked_tool(llm_model) -> None:
    async with AgentSession(llm=llm_model) as session:
        await session.start(Assistant())
        with mock_tools(Assistant, {"lookup_weather": lambda: "snowing"}):
            result = await session.run(user_input="lookup weather location=Oslo")
        result.expect.contains_function_call_output(output="snowing")


@pytest.mark.asyncio
async def test_judged_by_a_scripted_verdict(emulator, llm_model) -> None:
    @emulator.settings.rules.add
    def greets(ctx: ReplyContext) -> VerdictReply | None:
        if ctx.judgment is None:
            return None
        return VerdictReply("pass" if "assistant" in ctx.judgment.transcript else "fail", "")

    async with AgentSession(llm=llm_model) as session:
        await session.start(Assistant())
        result = await session.run(user_input="Hello")
        await result.expect.next_event().is_message(role="assistant").judge(
            llm_model, intent="Offers a friendly greeting"
        )


@pytest.mark.asyncio
async def test_a_failing_eval_fails(llm_model) -> None:
    async with AgentSession(llm=llm_model) as session:
        await session.start(Assistant())
        result = await session.run(user_input="Hello")
        result.expect.next_event().is_function_call(name="lookup_weather")
'''
"""a user's evals, as livekit's agent starter writes them, on the plugin's fixtures"""


@pytest.mark.slow
def test_a_livekit_style_eval_runs_offline_on_the_plugins_fixtures(tmp_path: Path) -> None:
    """No conftest.py: the emulator and the model on it are the plugin's fixtures (before,
    pytest stopped at "fixture 'llm_model' not found")."""
    (tmp_path / "test_agent.py").write_text(EVALS)
    outcomes, failures = pytest_on(tmp_path)
    assert outcomes == {
        "test_offers_assistance": "passed",
        "test_looks_up_the_weather": "passed",
        "test_a_mocked_tool": "passed",
        "test_judged_by_a_scripted_verdict": "passed",
        "test_a_failing_eval_fails": "failed",
    }
    assert "Expected FunctionCallEvent" in failures["test_a_failing_eval_fails"]


USERS_AGENT = EVALS.split("@pytest.mark.asyncio", 1)[0]
"""``agent.py`` of the checking guide's eval: its ``Assistant``"""


@pytest.mark.slow
def test_the_checking_guides_eval_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(USERS_AGENT)
    (tmp_path / "test_agent.py").write_text(python_block(CHECKING, "llm_model"))
    outcomes, _ = pytest_on(tmp_path)
    assert outcomes == {"test_offers_assistance": "passed", "test_a_mocked_tool": "passed"}


def pytest_on(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """pytest run on ``folder`` in a subprocess, offline, with no conftest.py above it: each
    test's outcome, and each failure's message, by name."""
    # offline: nothing but the emulator to reach
    unset = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LIVEKIT_URL")
    reported, printed = pytest_in_subprocess(folder, unset=unset, timeout=120)
    assert all(r.outcome in ("passed", "failed") for r in reported.values()), printed
    outcomes = {name: r.outcome for name, r in reported.items()}
    failures = {name: r.message for name, r in reported.items() if r.outcome == "failed"}
    return outcomes, failures
