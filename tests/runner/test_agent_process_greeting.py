"""An agent script's greeting in another process, found out and failed as honestly as in the
kernel: what went wrong before or during it (a model the emulator does not know, an
``on_enter`` that raised) at once and in livekit's words, in the trace; an agent that does not
greet taking turns without being told so. Agent scripts written as a user writes them, in
real subprocesses, against the emulator."""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from livekit.agents import RunResult, llm

from notebook_agents import AgentProcess, NotebookRunner, RunnerError, TurnError
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState

pytestmark = pytest.mark.slow  # agent scripts started in processes of their own

AGENT = """
import asyncio

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, inference
from livekit.plugins import openai

server = AgentServer()


class Assistant(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are a helpful assistant.")

    async def on_enter(self) -> None:
        ON_ENTER


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(MODELS)
    await session.start(agent=Assistant(), room=ctx.room)
"""
GREETS = 'self.session.generate_reply(instructions="Greet the caller.")'
CASCADED = (
    'stt=inference.STT("deepgram/nova-3"), llm=inference.LLM("LLM_MODEL"), '
    'tts=inference.TTS("cartesia/sonic-3")'
)
GREETING = "You are a helpful assistant. How can I help you?"


def agent_script(
    folder: Path, *, on_enter: str = GREETS, models: str = 'llm=openai.LLM(model="gpt-4.1-mini")'
) -> Path:
    script = folder / "agent.py"
    script.write_text(AGENT.replace("ON_ENTER", on_enter).replace("MODELS", models))
    return script


@pytest.fixture
def processes() -> Iterator[list[AgentProcess]]:
    made: list[AgentProcess] = []
    yield made
    for process in made:
        process.stop()


def said(result: RunResult[None]) -> list[str]:
    return [
        e.item.text_content or ""
        for e in result.events
        if isinstance(e.item, llm.ChatMessage) and e.item.role == "assistant"
    ]


async def test_a_model_the_emulator_does_not_know_fails_at_once_in_livekits_words(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    """livekit's current examples' model, which 1.8.9's catalogue does not list."""
    models = CASCADED.replace("LLM_MODEL", "google/gemma-4-31b-it")
    agent = AgentProcess(agent_script(tmp_path, models=models), emulator=emulator)
    processes.append(agent)
    # the 404 may come before the connection is ready or after: the first wait raises it
    with pytest.raises(RunnerError) as raised:
        await agent.start().ready()
        await agent.greeting(timeout=20)
    message = str(raised.value)
    assert "failed before it greeted (APIStatusError, not recoverable)" in message
    # the emulator's 404 as livekit's inference LLM raised it, naming the fix
    assert "The model `google/gemma-4-31b-it` does not exist in the emulator's catalog" in message
    assert "emulator.settings.models.add(['google/gemma-4-31b-it'])" in message
    assert "greets=False" not in message and "did not greet" not in message
    assert agent.state in (RunnerState.FAILED, RunnerState.STOPPED)
    reported = agent.trace.of_kind("error")[0]
    assert reported.data["source"] == "llm" and not reported.data["recoverable"]
    assert "google/gemma-4-31b-it" in reported.data["message"]


async def test_an_agent_without_a_tts_greets_in_text_as_in_the_kernel(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    """An LLM-only agent: the session is text-only from its start, as the notebook runner's
    offline session is (with audio on at first, its greeting raised "tts_node called but no
    TTS node is available", or not, by how soon the notebook turned audio off)."""
    models = 'llm=inference.LLM("openai/gpt-4.1-mini")'
    agent = AgentProcess(agent_script(tmp_path, models=models), emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    greeting = await agent.greeting(timeout=20)
    assert said(greeting) == [GREETING]
    assert await agent.send_text("hello") == 'You are a helpful assistant. You said: "hello".'
    assert agent.trace.of_kind("error") == []
    assert "no TTS node" not in agent.output


async def test_an_on_enter_that_raises_fails_the_greeting_and_is_traced_as_in_the_kernel(
    emulator: Emulator,
    processes: list[AgentProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = agent_script(tmp_path, on_enter='raise RuntimeError("the CRM is down")')
    agent = AgentProcess(script, emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    with pytest.raises(TurnError) as raised:
        await agent.greeting(timeout=20)
    assert str(raised.value) == (
        "the greeting went wrong: assistant.on_enter raised RuntimeError('the CRM is down') "
        "(no reply)"
    )
    # the session goes on, as livekit's does
    assert await agent.send_text("hello") == 'You are a helpful assistant. You said: "hello".'

    # the kernel's trace records it alike (its agent named by class, the process's by id)
    for name, value in emulator.openai_environment().items():
        monkeypatch.setenv(name, value)
    runner = NotebookRunner(runpy.run_path(str(script))["server"]).start()
    try:
        await runner.ready()
        assert await runner.send_text("hello") == 'You are a helpful assistant. You said: "hello".'
        in_kernel = [(e.agent, e.data) for e in runner.trace.of_kind("error")]
    finally:
        runner.stop()
    in_process = [(e.agent, e.data) for e in agent.trace.of_kind("error")]
    assert in_process == [
        (
            "assistant",
            {
                "message": "assistant.on_enter raised RuntimeError('the CRM is down')",
                "type": "RuntimeError",
                "source": "agent",
                "recoverable": True,
            },
        )
    ]
    (kernel_agent, kernel_data) = in_kernel[0]
    assert len(in_kernel) == 1 and kernel_agent == "Assistant"
    assert kernel_data == {
        **in_process[0][1],
        "message": in_process[0][1]["message"].replace("assistant.", "Assistant."),
    }


async def test_an_agent_that_does_not_greet_takes_turns_without_being_told(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    agent = AgentProcess(agent_script(tmp_path, on_enter="return None"), emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    assert await agent.send_text("hello", timeout=20) == (
        'You are a helpful assistant. You said: "hello".'
    )
    greeting = await agent.greeting()
    greeting.expect.next_event().is_agent_handoff()  # it entered, and said nothing
    greeting.expect.no_more_events()


async def test_an_agent_started_by_hand_that_does_not_greet_takes_turns_after_a_short_settle(
    emulator: Emulator,
    processes: list[AgentProcess],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Started from the printed command, it sends no spans: silent for 2 s, it is taken not
    to greet."""
    agent_script(tmp_path, on_enter="return None")
    agent = AgentProcess(emulator=emulator)
    processes.append(agent)
    agent.start()
    command = capsys.readouterr().out.splitlines()[-1].strip()
    started = subprocess.Popen(  # noqa: ASYNC220
        command, shell=True, cwd=tmp_path, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        await agent.ready()
        assert await agent.send_text("hello", timeout=20) == (
            'You are a helpful assistant. You said: "hello".'
        )
        (await agent.greeting()).expect.next_event().is_agent_handoff()
    finally:
        agent.stop()
        os.killpg(started.pid, signal.SIGTERM)
        started.wait(timeout=10)


async def test_a_greeting_after_a_slow_on_enter_is_waited_for(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    """Silent for longer than the settle, but its on_enter has not returned: it may greet."""
    slow = f"await asyncio.sleep(3)\n        {GREETS}"
    agent = AgentProcess(agent_script(tmp_path, on_enter=slow), emulator=emulator)
    processes.append(agent)
    await agent.start().ready()
    result = await agent.run("hello", timeout=20)
    assert said(result) == ['You are a helpful assistant. You said: "hello".']
    assert said(await agent.greeting()) == [GREETING]
    kinds = [e.kind for e in agent.trace.of_kind("agent_message", "user_message")]
    assert kinds == ["agent_message", "user_message", "agent_message"]


async def test_greets_true_waits_for_a_greeting_as_before(
    emulator: Emulator, processes: list[AgentProcess], tmp_path: Path
) -> None:
    script = agent_script(tmp_path, on_enter="return None")
    agent = AgentProcess(script, emulator=emulator, greets=True)
    processes.append(agent)
    await agent.start().ready()
    waits = r"not over within 3 s, and turns wait for it: greets=True waits for its greeting"
    with pytest.raises(RunnerError, match=waits):
        await agent.run("hello", timeout=3)
