"""The triggers a user writes, and the ones the CLI suggests, hand off through the emulator:
a natural request names A's tool in its own words, as a model would read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from livekit.agents import Agent, AgentServer, RunContext, function_tool, llm

from notebook_agents.__main__ import main
from notebook_agents.bench import BenchmarkConfig, YourAgents
from notebook_agents.bench.cli import TRIGGER_EXAMPLE
from notebook_agents.bench.run import run_benchmark


class Billing(Agent):
    def __init__(self, chat_ctx: llm.ChatContext | None = None) -> None:
        super().__init__(instructions="You are Billing at the clinic.", chat_ctx=chat_ctx)


class Pharmacy(Agent):
    def __init__(self, chat_ctx: llm.ChatContext | None = None) -> None:
        super().__init__(instructions="You are the pharmacist.", chat_ctx=chat_ctx)


class FrontDesk(Agent):
    """The new user's clinic: a tool beside the transfers, each returning B with a message."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the clinic front desk. Route callers.")

    @function_tool
    async def opening_hours(self, context: RunContext[None]) -> str:
        """Tell the caller when the clinic is open."""
        return "Monday to Friday, 8 to 6."

    @function_tool
    async def transfer_to_billing(self, context: RunContext[None]) -> tuple[Agent, str]:
        """Transfer the caller to billing."""
        return Billing(chat_ctx=self.chat_ctx), "Transferring you to billing."

    @function_tool
    async def transfer_to_pharmacy(self, context: RunContext[None]) -> tuple[Agent, str]:
        """Transfer the caller to the pharmacy."""
        return Pharmacy(chat_ctx=self.chat_ctx), "Transferring you to the pharmacy."


@pytest.mark.slow
@pytest.mark.parametrize(
    ("trigger", "b"),
    [("Please transfer me to billing", Billing), (TRIGGER_EXAMPLE, Pharmacy)],
)
async def test_a_natural_trigger_hands_off_to_the_tool_it_names(
    trigger: str, b: type[Agent]
) -> None:
    config = BenchmarkConfig(
        agents=YourAgents(FrontDesk, trigger, handoff_to=b),
        rtts_ms=[0.0],
        history_turns=[0],
        trials=1,
        warmup=0,
        modes=["reused+copied", "fresh+empty"],
    )
    result = await run_benchmark(config)
    assert [t.error for t in result.failed_trials()] == []
    assert all(t.handoff_ms is not None for t in result.trials)


def test_the_help_and_the_missing_trigger_error_suggest_the_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert TRIGGER_EXAMPLE in " ".join(capsys.readouterr().out.split())
    assert main(["bench", "--agents", f"{__name__}:FrontDesk", "--out", str(tmp_path)]) == 2
    assert f"--trigger '{TRIGGER_EXAMPLE}'" in capsys.readouterr().err


def make_desk() -> FrontDesk:
    return FrontDesk()


def opening_hours_text() -> str:
    return "Monday to Friday."


def desk_for(caller: str) -> FrontDesk:
    return FrontDesk()


clinic_server = AgentServer()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("function_tool", "livekit's, not an agent of yours"),
        ("opening_hours_text", "a function returning str, not an Agent"),
        ("desk_for", "a function needing caller (the bench calls it with no arguments)"),
        ("clinic_server", "an AgentServer (pass it with --server)"),
    ],
)
def test_agents_that_cannot_make_a_are_refused_before_the_run(
    name: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--agents", f"{__name__}:{name}", "--trigger", TRIGGER_EXAMPLE]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
    assert f"name A's Agent class or a function returning A, e.g. --agents {__name__}:" in err
    assert f"{__name__} has Billing, FrontDesk, Pharmacy" in err  # its agents, not its server
    assert not (tmp_path / "results.json").exists()  # nothing ran


def test_an_agent_class_or_factory_is_taken() -> None:
    from notebook_agents.bench.your_agents import load_agent

    assert load_agent(f"{__name__}:FrontDesk") is FrontDesk
    assert load_agent(f"{__name__}:make_desk") is make_desk
