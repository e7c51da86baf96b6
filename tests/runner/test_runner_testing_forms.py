"""livekit's testing forms from notebook cells, in a REAL ipykernel, on an agent written in the
cell as a user writes it: ``with mock_tools(...)`` around turns (livekit's documented test
form), ``mock_tools(..., session=)``, ``session.run`` + ``expect``, a judge. Each either works
or is refused at once naming the form that works: never silently the real tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel import Kernel

SETUP = r"""
from livekit.agents import (
    Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool, mock_tools,
)
from livekit.plugins import openai
from notebook_agents import NotebookRunner, ReplyContext, VerdictReply
from notebook_agents.emulator import Emulator

emu = Emulator().start()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing.")

    @function_tool
    async def check_balance(self, context: RunContext) -> str:
        "Check the caller's balance."
        return "10 euros."


def billing_server(model: str) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        if model == "llm":
            llm = openai.LLM(base_url=emu.base_url(), api_key="offline", model="gpt-4o-mini")
        elif model == "realtime":
            llm = openai.realtime.RealtimeModel(
                base_url=emu.base_url(), api_key="offline", modalities=["text"]
            )
        else:  # a realtime model that hears
            llm = openai.realtime.RealtimeModel(base_url=emu.base_url(), api_key="offline")
        await AgentSession(llm=llm).start(agent=Billing(), room=ctx.room)

    return server


def outputs(result):
    return [e.item.output for e in result.events if e.type == "function_call_output"]


def mocked(context):  # livekit passes the tool's parameters it takes
    return "99 euros (mocked)."
"""

REAL, MOCKED = ["10 euros."], ["99 euros (mocked)."]


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    with Kernel() as kernel:
        kernel.run_ok(SETUP, timeout=60)
        yield kernel


@pytest.mark.parametrize("model", ["llm", "realtime"])
@pytest.mark.timeout(120)
def test_mock_tools_as_a_context_manager_mocks_the_turns_a_cell_runs_inside_it(
    kernel: Kernel, model: str
) -> None:
    """livekit's ``with mock_tools(Billing, {...}):`` around turns from a cell: the real tool
    ran (the block's context variable was the cell's, the turn ran in the job's)."""
    kernel.run_ok(f"runner = NotebookRunner(billing_server({model!r})).start()")
    kernel.run_ok("session = await runner.ready()")
    kernel.run_ok(
        "with mock_tools(Billing, {'check_balance': mocked}):\n"
        "    in_block = dict(\n"
        "        run=outputs(await runner.run('check balance')),\n"
        "        session_run=outputs(await session.run(user_input='check balance')),\n"
        "        reply=await runner.send_text('check balance'),\n"
        "    )\n"
        "after_block = outputs(await runner.run('check balance'))\n",
        timeout=60,
    )
    assert kernel.eval("in_block") == {
        "run": MOCKED,
        "session_run": MOCKED,
        "reply": "You are Billing. The tool returned: 99 euros (mocked).",
    }
    assert kernel.eval("after_block") == REAL  # the block's scope ends with it
    # both of livekit's forms at once: the block's mocks over the session's, as in livekit
    kernel.run_ok(
        "mock_tools(Billing, {'check_balance': lambda: 'session mock'}, session=session)\n"
        "with mock_tools(Billing, {'check_balance': mocked}):\n"
        "    both = outputs(await runner.run('check balance'))\n"
        "session_only = outputs(await runner.run('check balance'))\n"
        "mock_tools(Billing, {}, session=session)\n"
        "real = outputs(await runner.run('check balance'))\n",
        timeout=60,
    )
    assert kernel.eval("[both, session_only, real]") == [MOCKED, ["session mock"], REAL]
    kernel.run_ok("runner.stop()")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_spoken_turn_inside_mock_tools_is_mocked_and_push_to_talk_is_refused(
    kernel: Kernel,
) -> None:
    """A spoken turn is answered by the session's own tasks, not the cell's: the block's mocks
    are the session's for the turn, then its own again. A push-to-talk turn spans two calls
    the block cannot scope: refused at once, naming the session's form."""
    kernel.run_ok(
        "from notebook_agents.speech import SAMPLE_RATE, synthesize\n"
        "runner = NotebookRunner(billing_server('hears'), audio=True).start()\n"
        "session = await runner.ready()\n"
        "words = synthesize('check balance')\n",
        timeout=60,
    )
    kernel.run_ok(
        "mock_tools(Billing, {'check_balance': lambda: 'session mock'}, session=session)\n"
        "with mock_tools(Billing, {'check_balance': mocked}):\n"
        "    spoken = outputs(await runner.run_audio(words, SAMPLE_RATE))\n"
        "after_block = outputs(await runner.run_audio(words, SAMPLE_RATE))\n",
        timeout=90,
    )
    assert kernel.eval("[spoken, after_block]") == [MOCKED, ["session mock"]]
    refused = kernel.run(
        "with mock_tools(Billing, {'check_balance': mocked}):\n    runner.start_turn()"
    )
    assert refused.error is not None and refused.error["ename"] == "RunnerError"
    assert refused.error["evalue"].startswith(
        "start_turn() with `with mock_tools(...)` around it: a push-to-talk turn spans "
        "start_turn() and end_turn(), which that block does not scope: mock for the session "
        "instead, `mock_tools(YourAgent, {...}, session=runner.session)`"
    )
    kernel.run_ok("runner.stop()")


BILLING_SCRIPT = '''
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing.")

    @function_tool
    async def check_balance(self, context: RunContext) -> str:
        """Check the caller's balance."""
        return "10 euros."


server = AgentServer()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    await AgentSession(llm=openai.LLM(model="gpt-4o-mini")).start(agent=Billing(), room=ctx.room)
'''
"""the same agent as a script another process runs (its model from the environment)"""

ELSEWHERE = (
    "livekit's mocks cannot reach an agent in another process: mock the tool in its script "
    "(`mock_tools(YourAgent, {...}, session=session)` in its entrypoint), or run its server "
    "in the kernel with NotebookRunner, where `with mock_tools(...)` mocks the turns inside"
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_mocks_set_in_a_cell_for_an_agent_process_are_refused_at_once(
    kernel: Kernel, tmp_path: Path
) -> None:
    """The agent runs in another process, which no mock made in the kernel reaches: the turn is
    refused before it is sent, naming the forms that work, and the agent goes on."""
    script = tmp_path / "billing.py"
    script.write_text(BILLING_SCRIPT)
    kernel.run_ok(
        "from notebook_agents import AgentProcess\n"
        f"agent = AgentProcess({str(script)!r}, emulator=emu, greets=False).start()\n"
        "await agent.ready()\n",
        timeout=60,
    )
    refused = kernel.run(
        "with mock_tools(Billing, {'check_balance': mocked}):\n    await agent.run('check balance')"
    )
    assert refused.error is not None and refused.error["ename"] == "RunnerError"
    assert refused.error["evalue"] == f"run() with `with mock_tools(...)` around it: {ELSEWHERE}"
    kernel.run_ok("mock_tools(Billing, {'check_balance': mocked}, session=agent.session)")
    refused = kernel.run("await agent.send_text('check balance')")
    assert refused.error is not None and refused.error["ename"] == "RunnerError"
    assert refused.error["evalue"] == (
        f"send_text() with `mock_tools(..., session=agent.session)`: {ELSEWHERE}"
    )
    kernel.run_ok("mock_tools(Billing, {}, session=agent.session)")
    assert kernel.eval("outputs(await agent.run('check balance'))") == REAL
    kernel.run_ok("agent.stop()")


JUDGE_RULE = """
@emu.settings.rules.add
def knows_the_balance(ctx: ReplyContext) -> VerdictReply | None:
    if ctx.judgment is None:
        return None
    said = "euros" in ctx.judgment.transcript
    return VerdictReply("pass" if said else "fail", "looked for the balance")
"""


@pytest.mark.timeout(120)
def test_livekits_other_testing_forms_work_from_cells(kernel: Kernel) -> None:
    """``session.run`` + ``expect``, the greeting's run, and a judge with the agent's own kind
    of model, each from a cell as in a pytest eval."""
    kernel.run_ok(JUDGE_RULE)
    kernel.run_ok(
        "runner = NotebookRunner(billing_server('llm')).start()\n"
        "session = await runner.ready()\n"
        "judge = openai.LLM(base_url=emu.base_url(), api_key='offline')\n"
        "result = await session.run(user_input='check balance')\n"
        "result.expect.next_event().is_function_call(name='check_balance')\n"
        "result.expect.next_event().is_function_call_output(output='10 euros.')\n"
        "reply = result.expect.next_event().is_message(role='assistant')\n"
        "result.expect.no_more_events()\n"
        "await reply.judge(judge, intent='tells the balance')\n",
        timeout=60,
    )
    failed = kernel.run(
        "hello = (await runner.run('hello')).expect[0].is_message(role='assistant')\n"
        "await hello.judge(judge, intent='tells the balance')"
    )
    assert failed.error is not None and failed.error["ename"] == "AssertionError"
    assert "looked for the balance" in failed.error["evalue"]
    kernel.run_ok("runner.stop()\nawait judge.aclose()")
