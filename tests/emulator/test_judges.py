"""livekit's judges on turns run through the runner, against the emulator: ``judge(llm, intent=)``
on a ``RunResult`` and a ``JudgeGroup`` on the session's history, with an LLM made in the cell
(awaited on the cell's loop) and with the agent's own (from the cell, its requests carried into
the job; or awaited in the job: ``runner.call``)."""

from __future__ import annotations

import pytest
from livekit.agents import Agent, AgentServer, AgentSession, ChatContext, JobContext
from livekit.agents.evals import JudgeGroup, accuracy_judge, task_completion_judge
from livekit.plugins import openai

from notebook_agents import NotebookRunner, ReplyContext, RunnerError, VerdictReply
from notebook_agents.emulator import Emulator, Judgment
from tests.conftest import API_KEY, started

GREETS = "greets the caller"


def make_llm(emulator: Emulator) -> openai.LLM:
    return openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")


@pytest.fixture
def agent_llm(emulator: Emulator) -> openai.LLM:
    """The agent's LLM, made in a cell as a notebook user would, so the cell holds it too.
    Not closed here: the session prewarmed it on the job's loop, which has ended with it."""
    return make_llm(emulator)


def concierge(model: openai.LLM) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(llm=model)
        await session.start(agent=Agent(instructions="You are the Concierge."), room=ctx.room)

    return server


@pytest.fixture
async def runner(agent_llm: openai.LLM, runners: list[NotebookRunner]) -> NotebookRunner:
    return await started(runners, NotebookRunner(concierge(agent_llm)))


@pytest.fixture
def judged(emulator: Emulator) -> list[Judgment]:
    """A scripted judge: a pass when the transcript says hello to a greeting intent, else a
    fail; every other intent is left unscripted. Returns what the judges asked."""
    seen: list[Judgment] = []

    @emulator.settings.rules.add
    def greeting(ctx: ReplyContext) -> VerdictReply | None:
        if ctx.judgment is None or GREETS not in ctx.judgment.intent:
            return None
        seen.append(ctx.judgment)
        if "hello" in ctx.judgment.transcript.lower():
            return VerdictReply("pass", "it says hello")
        return VerdictReply("fail", "no hello in it")

    return seen


async def test_a_judge_made_in_the_cell_gives_the_scripted_verdict_or_fails_naming_the_fix(
    emulator: Emulator, runner: NotebookRunner, judged: list[Judgment]
) -> None:
    judge = make_llm(emulator)  # awaited on the cell's loop, as a notebook cell does
    try:
        hello = await runner.run("hello")
        message = hello.expect[0].is_message(role="assistant")
        await message.judge(judge, intent=GREETS)  # scripted pass: no error
        assert judged[-1].intent == GREETS
        assert judged[-1].transcript == 'You are the Concierge. You said: "hello".'
        assert judged[-1].tool == "check_intent"

        bye = await runner.run("bye")
        with pytest.raises(AssertionError, match="Judgement failed: no hello in it"):
            await bye.expect[0].is_message(role="assistant").judge(judge, intent=GREETS)

        with pytest.raises(AssertionError) as unscripted:
            await message.judge(judge, intent="offers a table for two")
        assert "Judgement failed: The emulator does not judge" in str(unscripted.value)
        assert "VerdictReply" in str(unscripted.value)
        assert "openai.LLM(model='gpt-4o-mini')" in str(unscripted.value)
    finally:
        await judge.aclose()
    # judging took nothing from the call
    assert await runner.send_text("hi") == 'You are the Concierge. You said: "hi".'


async def test_a_judge_group_made_in_the_cell_fails_unscripted_and_passes_scripted(
    emulator: Emulator, runner: NotebookRunner
) -> None:
    judge = make_llm(emulator)
    try:
        await runner.run("hello")
        session = await runner.ready()
        group = JudgeGroup(llm=judge, judges=[task_completion_judge(), accuracy_judge()])
        unscripted = await group.evaluate(session.history)
        assert {j.verdict for j in unscripted.judgments.values()} == {"fail"}
        assert len(unscripted.judgments) == 2 and not unscripted.all_passed

        @emulator.settings.rules.add
        def all_good(ctx: ReplyContext) -> VerdictReply | None:
            return VerdictReply("pass", "fine") if ctx.judgment is not None else None

        scripted = await group.evaluate(session.history)
        assert len(scripted.judgments) == 2 and scripted.all_passed
    finally:
        await judge.aclose()


async def test_the_agents_own_llm_judges_in_the_job_and_the_call_goes_on(
    runner: NotebookRunner, agent_llm: openai.LLM, judged: list[Judgment]
) -> None:
    """livekit's evals judge with the agent's own LLM; its connections belong to the job's
    loop, so the judge is awaited there."""
    hello = await runner.run("hello")
    message = hello.expect[0].is_message(role="assistant")
    await runner.call(message.judge, agent_llm, intent=GREETS)
    with pytest.raises(AssertionError, match="Judgement failed: The emulator does not judge"):
        await runner.call(message.judge, agent_llm, intent="books a table")

    group = JudgeGroup(llm=agent_llm, judges=[accuracy_judge()])
    session = await runner.ready()
    result = await runner.call(group.evaluate, session.history)
    assert result.judgments["accuracy"].verdict == "fail"  # unscripted

    assert len(judged) == 1
    assert await runner.send_text("hi again") == 'You are the Concierge. You said: "hi again".'


async def test_the_agents_own_llm_judges_from_the_cell_and_the_call_goes_on(
    runner: NotebookRunner, agent_llm: openai.LLM, judged: list[Judgment]
) -> None:
    """The LLM the agent runs on, judging in the cell as a notebook user writes it: its chat is
    carried into the job (its connections belong to the job's loop) and its stream relayed.
    It used to give the verdict and then fail the agent's next turn ("bound to a different
    event loop"); a JudgeGroup, which drops judges that raise, gets every verdict."""
    hello = await runner.run("hello")
    message = hello.expect[0].is_message(role="assistant")
    await message.judge(agent_llm, intent=GREETS)  # scripted pass
    assert judged[-1].transcript == 'You are the Concierge. You said: "hello".'
    with pytest.raises(AssertionError, match="Judgement failed: The emulator does not judge"):
        await message.judge(agent_llm, intent="books a table")

    session = await runner.ready()
    group = JudgeGroup(llm=agent_llm, judges=[task_completion_judge(), accuracy_judge()])
    result = await group.evaluate(session.history)
    assert {name: j.verdict for name, j in result.judgments.items()} == {
        "task_completion": "fail",
        "accuracy": "fail",
    }  # unscripted: none dropped, no vacuous pass

    for text in ("hi again", "and again"):
        assert await runner.send_text(text) == f'You are the Concierge. You said: "{text}".'
    assert runner.trace.of_kind("error") == []
    runner.stop()
    assert "chat" not in vars(agent_llm)  # guarded only while the runner runs


async def test_the_agents_own_llm_streams_to_the_cell_as_livekits_llm_stream_does(
    runner: NotebookRunner, agent_llm: openai.LLM
) -> None:
    """Its chat from a cell, made and read in the job, relayed: iterated, collected, as text."""
    ctx = ChatContext()
    ctx.add_message(role="system", content="You are Ada.")
    ctx.add_message(role="user", content="hello")
    said = 'You are Ada. You said: "hello".'
    async with agent_llm.chat(chat_ctx=ctx) as stream:
        assert stream.chat_ctx is ctx
        chunks = [chunk async for chunk in stream]
    assert "".join(c.delta.content for c in chunks if c.delta and c.delta.content) == said
    assert (await agent_llm.chat(chat_ctx=ctx).collect()).text == said
    assert "".join([text async for text in agent_llm.chat(chat_ctx=ctx).to_str_iterable()]) == said
    assert await runner.send_text("hi") == 'You are the Concierge. You said: "hi".'
    assert runner.trace.of_kind("error") == []


async def test_call_needs_a_ready_runner(agent_llm: openai.LLM, no_livekit_env: None) -> None:
    judged: list[str] = []
    runner = NotebookRunner(concierge(agent_llm))
    with pytest.raises(RunnerError, match="needs a started runner"):
        await runner.call(judged.append, "never")
    assert judged == []
