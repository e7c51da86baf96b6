"""Checking agents through the runner with livekit's own testing API (``RunResult.expect``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    ChatContext,
    JobContext,
    RunContext,
    RunResult,
    mock_tools,
)
from livekit.agents.voice.speech_handle import SpeechHandle
from livekit.plugins import openai

from notebook_agents import NotebookRunner, RunnerError, TurnError
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from notebook_agents.runner._model_server import InProcessEmulators
from notebook_agents.trace import describe, model_side
from notebook_agents.trace.describe import syncs_to_model
from tests.conftest import API_KEY, started
from tests.upstream import greeter_weather


@pytest.fixture
async def greeter(emulator: Emulator, runners: list[NotebookRunner]) -> NotebookRunner:
    """livekit/agents PR #5229's Greeter/Weather agents, unchanged, on a text-only model."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )
    return await started(runners, NotebookRunner(greeter_weather.make_server(model)))


def expect_the_transfer_to_weather(result: RunResult[Any]) -> None:
    """The Greeter's turn "transfer to weather", in livekit's testing vocabulary."""
    result.expect.next_event().is_function_call(name="transfer_to_weather")
    result.expect.next_event().is_function_call_output()
    result.expect.next_event().is_agent_handoff(new_agent_type=greeter_weather.WeatherAgent)
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()


async def test_run_returns_livekits_run_result_for_expect(greeter: NotebookRunner) -> None:
    result = await greeter.run("transfer to weather")
    assert isinstance(result, RunResult) and result.done()
    expect_the_transfer_to_weather(result)

    weather = await greeter.run("lookup weather location=Paris")
    weather.expect.contains_function_call(name="lookup_weather", arguments={"location": "Paris"})
    assert await greeter.send_text("hello") == 'You are a weather agent. You said: "hello".'


async def test_session_run_from_a_cell_runs_in_the_job_and_returns_the_done_result(
    greeter: NotebookRunner,
) -> None:
    """The first cell a LiveKit developer writes: ``session.run`` on the session ``ready()``
    gave, from the notebook's loop (this test's), not the job's. It used to bind livekit's
    futures to the wrong loop: connection errors, the call ended, and stop() hung."""
    session = await greeter.ready()
    assert session is greeter.session
    turn: Awaitable[RunResult[Any]] = session.run(user_input="transfer to weather")
    result: RunResult[Any] = await asyncio.wait_for(turn, 30)
    assert isinstance(result, RunResult) and result.done()
    expect_the_transfer_to_weather(result)
    assert greeter.trace.of_kind("error") == []
    # not awaited, it says how to get the result (the turn runs anyway)
    pending: RunResult[Any] = session.run(user_input="hello")
    with pytest.raises(RunnerError, match=r"await it .*result = await session\.run"):
        pending.expect.next_event()
    assert not pending.done()
    said = (await pending).expect.next_event().is_message(role="assistant").event().item
    assert said.text_content == 'You are a weather agent. You said: "hello".'
    # awaited, it is the finished result, as livekit's RunResult stays usable after awaiting
    assert pending.done()
    with pytest.raises(RuntimeError, match="no final output"):  # livekit's own, no output_type
        pending.final_output  # noqa: B018
    assert pending.expect[0].is_message(role="assistant").event().item is said
    assert [e.item for e in pending.events] == [said] and await pending is await pending
    greeter.stop()  # raised "did not stop within 10 s" after the misuse
    assert greeter.state is RunnerState.STOPPED


LOOP_BOUND_CALLS: dict[str, Callable[[AgentSession[Any]], object]] = {
    "say": lambda s: s.say("hi"),
    "generate_reply": lambda s: s.generate_reply(instructions="greet"),
    "interrupt": lambda s: s.interrupt(),
    "update_agent": lambda s: s.update_agent(greeter_weather.WeatherAgent()),
    "commit_user_turn": lambda s: s.commit_user_turn(),
    "clear_user_turn": lambda s: s.clear_user_turn(),
    "reset_away_timer": lambda s: s.reset_away_timer(),
    "update_options": lambda s: s.update_options(),
    "shutdown": lambda s: s.shutdown(),
    "aclose": lambda s: s.aclose(),
    "drain": lambda s: s.drain(),
    "wait_for_idle": lambda s: s.wait_for_idle(),
}


async def test_loop_bound_session_calls_from_a_cell_raise_at_once_naming_the_fix(
    greeter: NotebookRunner,
) -> None:
    session = await greeter.ready()
    agent = session.current_agent
    for name, call in LOOP_BOUND_CALLS.items():
        with pytest.raises(RunnerError, match=rf"session\.{name}\(\).*runner\.call\("):
            call(session)
    # nothing was started by them: the same agent, no error, and the call goes on
    assert session.current_agent is agent and greeter.running
    assert greeter.trace.of_kind("error") == []
    assert await greeter.send_text("hello") == 'You are a friendly greeter. You said: "hello".'
    greeter.stop()
    assert greeter.state is RunnerState.STOPPED


AGENT_CALLS: dict[str, Callable[[Agent], object]] = {
    "update_instructions": lambda a: a.update_instructions("You are a terse greeter."),
    "update_tools": lambda a: a.update_tools([]),
    "update_chat_ctx": lambda a: a.update_chat_ctx(ChatContext()),
}


async def test_the_agents_loop_bound_methods_from_a_cell_raise_at_once_naming_the_fix(
    greeter: NotebookRunner,
) -> None:
    """The running agent's updates touch its activity and realtime session on the job's
    loop: from a cell they raise as the call is made, before anything starts, naming
    runner.call, for the first agent and for one handed over to."""
    session = await greeter.ready()
    for name, call in AGENT_CALLS.items():
        # named as a cell reaches the running agent (a newcomer has no `agent` variable)
        named = rf"session\.current_agent\.{name}"
        with pytest.raises(RunnerError, match=rf"{named}\(\).*runner\.call\({named}, "):
            call(session.current_agent)
    assert greeter.trace.of_kind("error") == []
    await greeter.call(session.current_agent.update_instructions, "You are a terse greeter.")
    assert await greeter.send_text("hello") == 'You are a terse greeter. You said: "hello".'

    await greeter.run("transfer to weather")
    weather = session.current_agent
    assert isinstance(weather, greeter_weather.WeatherAgent)
    with pytest.raises(RunnerError, match=r"agent\.update_tools\(\)"):
        AGENT_CALLS["update_tools"](weather)
    assert greeter.running and greeter.trace.of_kind("error") == []
    greeter.stop()
    assert "update_tools" not in vars(weather)  # guarded only while the runner runs


async def test_call_runs_a_session_method_in_the_job_and_awaits_it_there(
    greeter: NotebookRunner,
) -> None:
    session = await greeter.ready()
    handle = await greeter.call(session.generate_reply, user_input="hello")
    assert isinstance(handle, SpeechHandle) and handle.done()
    assert [item.text_content for item in handle.chat_items if item.type == "message"] == [
        'You are a friendly greeter. You said: "hello".'
    ]
    await greeter.call(session.interrupt)  # its future, awaited in the job
    assert await greeter.call(lambda: session.current_agent) is session.current_agent
    with pytest.raises(RunnerError, match=r"call\(\) needs a started runner"):
        await NotebookRunner(greeter.server).call(session.interrupt)


async def test_the_greeting_is_the_starts_run_result(greeter: NotebookRunner) -> None:
    """livekit's ``session.start(capture_run=True)``: the greeter's ``on_enter`` reply, checked
    with ``expect``; the entrypoint's ``await session.start(...)`` still returns None."""
    greeting = await greeter.greeting()
    assert isinstance(greeting, RunResult) and greeting.done()
    greeting.expect.next_event().is_agent_handoff(new_agent_type=greeter_weather.GreeterAgent)
    said = greeting.expect.next_event().is_message(role="assistant").event().item
    greeting.expect.no_more_events()
    assert said.text_content == "You are a friendly greeter. How can I help you?"
    # the greeting is not the first turn's: that turn has its own events only
    result = await greeter.run("hello")
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    assert await greeter.greeting() is greeting


def _ada_server(base_url: str, started: list[object], **start: Any) -> AgentServer:
    """Ada, who says nothing until spoken to; ``started`` gets what her start returned."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(
            base_url=base_url, api_key=API_KEY, modalities=["text"]
        )
        session: AgentSession[None] = AgentSession(llm=model)
        ada = Agent(instructions="You are Ada.")
        started.append(await session.start(agent=ada, room=ctx.room, **start))

    return server


async def test_an_agent_without_a_greeting_has_one_that_says_nothing(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    started_with: list[object] = []
    runner = await started(runners, NotebookRunner(_ada_server(emulator.base_url(), started_with)))
    greeting = await runner.greeting()
    assert greeting.done()
    greeting.expect.next_event().is_agent_handoff()  # Ada entered, and said nothing
    greeting.expect.no_more_events()
    # what the entrypoint's start returned, as without a runner (read on the job's loop: the
    # entrypoint goes on from its start in the step that made the runner ready)
    assert await runner.call(started_with.copy) == [None]
    assert await runner.send_text("hi") == 'You are Ada. You said: "hi".'


async def test_an_entrypoint_capturing_its_start_gets_the_run_the_runner_shows(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    started_with: list[object] = []
    server = _ada_server(emulator.base_url(), started_with, capture_run=True)
    runner = await started(runners, NotebookRunner(server))
    (captured,) = await runner.call(started_with.copy)
    assert isinstance(captured, RunResult) and await runner.greeting() is captured


async def test_a_tool_mocked_on_the_running_agent_and_restored_between_turns(
    greeter: NotebookRunner,
) -> None:
    """livekit's ``mock_tools(Agent, {...}, session=)`` from a cell, on the live session: the
    next turn calls the mock; ``{}`` puts the real tool back for the turn after."""
    session = await greeter.ready()
    await greeter.run("transfer to weather")
    seen: list[str] = []

    def snowing(context: RunContext[Any], location: str) -> str:  # the real tool's parameters
        seen.append(location)
        return f"Snow in {location}."

    mock_tools(greeter_weather.WeatherAgent, {"lookup_weather": snowing}, session=session)
    mocked = await greeter.run("lookup weather location=Paris")
    mocked.expect.contains_function_call(name="lookup_weather", arguments={"location": "Paris"})
    mocked.expect.contains_function_call_output(output="Snow in Paris.")
    assert seen == ["Paris"]

    mock_tools(greeter_weather.WeatherAgent, {}, session=session)
    real = await greeter.run("lookup weather location=Oslo")
    real.expect.contains_function_call_output(output="It is sunny in Oslo.")
    assert seen == ["Paris"]


class _CountedServer:
    """The emulators in this process as the model's side, counting how often they are read."""

    def __init__(self) -> None:
        self.described = 0
        self.ids_read = 0
        self._emulators = InProcessEmulators()

    def conversation(self, session_id: str) -> list[dict[str, Any]] | None:
        self.described += 1
        return self._emulators.conversation(session_id)

    def item_ids(self, session_id: str) -> list[str] | None:
        self.ids_read += 1
        return self._emulators.item_ids(session_id)


async def test_each_turn_reads_the_models_ids_once_and_describes_nothing_while_alike(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The trace compares when a turn's speech is done; the runner's check after the turn
    reads the server again only if the trace heard more since. While the sides agree, only
    the ids are read: the described conversation (a copy of all of it) is not."""
    model_server = _CountedServer()
    server = _ada_server(emulator.base_url(), [])
    runner = await started(runners, NotebookRunner(server, model_server=model_server))
    await runner.send_text("hi")
    before = model_server.ids_read, model_server.described
    for words in ("one", "two", "three"):
        assert await runner.send_text(words) == f'You are Ada. You said: "{words}".'
    assert (model_server.ids_read - before[0], model_server.described - before[1]) == (3, 0)


async def test_each_turns_comparison_looks_only_at_what_the_turn_added(
    emulator: Emulator, runners: list[NotebookRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judging whether an item goes to the model is the per-item work of holding livekit's
    context against the model's: a turn's check does as much of it after twenty turns as
    after one (before, it judged every item of the conversation again)."""
    judged = [0]

    def counted(item: Any) -> bool:
        judged[0] += 1
        return syncs_to_model(item)

    for module in (describe, model_side):
        monkeypatch.setattr(module, "syncs_to_model", counted)
    runner = await started(runners, NotebookRunner(_ada_server(emulator.base_url(), [])))

    async def judged_in(turns: int) -> int:
        judged[0] = 0
        for _ in range(turns):
            await runner.send_text("hello")
        return judged[0]

    await runner.send_text("hi")  # the first comparison is a full one: nothing to build on
    early = await judged_in(3)
    for _ in range(20):
        await runner.send_text("more")
    assert early > 0 and await judged_in(3) == early


async def test_an_early_item_removed_from_livekits_side_alone_fails_the_next_turn(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """Many turns after they last parted, the agent's context drops the caller's first words
    and the model refuses to: the comparison that builds on the last agreement still finds
    it, an item the model holds that livekit lacks."""
    url = f"{emulator.base_url()}?error_on=conversation.item.delete"
    runner = await started(runners, NotebookRunner(_ada_server(url, [])))
    for words in ("first words", "two", "three", "four", "five"):
        await runner.send_text(words)
    assert runner.session is not None
    agent = runner.session.current_agent
    edited = agent.chat_ctx.copy()
    (first,) = [item for item in edited.items if item.id == _said_id(runner, "first words")]
    edited.items.remove(first)
    await runner.call(agent.update_chat_ctx, edited)

    with pytest.raises(TurnError, match="holds 1 item livekit lacks") as raised:
        await runner.send_text("six")
    (parted,) = raised.value.errors
    assert parted.kind == "context_diverged" and parted.data["model_source"] == "server"
    assert [item["text"] for item in parted.data["extra"]] == ["first words"]


def _said_id(runner: NotebookRunner, text: str) -> str:
    """The item id of what the caller said as ``text`` (in the runner's trace)."""
    (said,) = [e for e in runner.trace.of_kind("user_message") if e.data["text"] == text]
    return str(said.data["item_id"])


def test_the_old_model_truth_argument_still_works_and_says_what_to_use_instead(
    emulator: Emulator,
) -> None:
    """``NotebookRunner(model_truth=)`` is ``model_server=`` for one release, warning at the
    user's line; nothing is started."""
    model_server = InProcessEmulators()
    server = _ada_server(emulator.base_url(), [])
    with pytest.warns(DeprecationWarning, match=r"use NotebookRunner\(model_server=\.\.\.\)") as w:
        runner = NotebookRunner(server, model_truth=model_server)
    assert w[0].filename == __file__
    assert runner.trace.model_server is model_server
