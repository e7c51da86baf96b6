"""Agents are named alike in every runner's trace, their class and livekit's id both kept: the
same script run in the kernel (``NotebookRunner``) and in a process of its own
(``AgentProcess``) gives the same names. Before, the kernel's trace named an agent by its class
(``Reception``) and the process's by livekit's id (``reception``), with nothing to map one to
the other."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from notebook_agents import AgentProcess, NotebookRunner, Trace
from notebook_agents.emulator import Emulator
from notebook_agents.trace import check_event_data
from tests.conftest import API_KEY

CLINIC_CONSOLE = '''
"""The user's script: a reception handing off to billing, which has an id of its own."""

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai


class Reception(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the reception. You route callers.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Hand the caller to billing."""
        return Billing()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(
            instructions="You are billing. You answer questions about invoices.",
            id="billing_desk",
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()


server = AgentServer()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(llm=openai.realtime.RealtimeModel(modalities=["text"]))
    await session.start(agent=Reception(), room=ctx.room)
'''

NAMED = [
    # (event's agent, from, to, from_id, to_id, to_class)
    ("Reception", None, "Reception", None, "reception", "clinic_console:Reception"),
    ("billing_desk", "Reception", "billing_desk",
     "reception", "billing_desk", "clinic_console:Billing"),
]  # fmt: skip
"""the class's name, unless livekit's id is the agent's own; both kept, and the class"""


def named(trace: Trace) -> list[tuple[Any, ...]]:
    return [
        (e.agent, e.data["from"], e.data["to"], e.data.get("from_id"), e.data.get("to_id"),
         e.data.get("to_class"))
        for e in trace.of_kind("handoff")
    ]  # fmt: skip


def who_did_what(trace: Trace) -> list[tuple[str, str | None]]:
    kinds = ("user_message", "agent_message", "tool_call", "tool_output")
    return [(e.kind, e.agent) for e in trace.events if e.kind in kinds]


@pytest.mark.slow
async def test_the_kernel_and_a_process_name_the_same_agents_alike(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_livekit_env: None
) -> None:
    script = tmp_path / "clinic_console.py"
    script.write_text(CLINIC_CONSOLE)
    monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url())
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        clinic = importlib.import_module("clinic_console")
        runner = NotebookRunner(clinic.server).start()
        try:
            await runner.ready()
            await runner.greeting()
            await runner.run("transfer to billing")
        finally:
            runner.stop()
    finally:
        sys.modules.pop("clinic_console", None)

    process = AgentProcess(script, emulator=emulator).start()
    try:
        await process.ready()
        await process.run("transfer to billing")
    finally:
        process.stop()

    assert named(runner.trace) == NAMED
    assert named(process.trace) == NAMED
    assert who_did_what(process.trace) == who_did_what(runner.trace)
    assert [e.agent for e in process.trace.of_kind("agent_message")] == [
        "Reception",
        "billing_desk",
    ]
    for event in process.trace.events + runner.trace.events:
        check_event_data(event.kind, event.data)
    # saved and read back, as written
    loaded = Trace.load(process.trace.save(tmp_path / "process.jsonl"))
    assert named(loaded) == NAMED


def test_a_trace_saved_before_agents_had_ids_still_loads(tmp_path: Path) -> None:
    handoff = {"from": None, "to": "reception", "session": None, "context": None}
    lines = [
        {"format": "notebook-agents.trace/5", "started_at": 1.0},
        {"seq": 0, "t": 0.1, "kind": "handoff", "agent": "reception", "data": handoff},
    ]
    path = tmp_path / "before.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (event,) = Trace.load(path).events
    assert event.data == handoff
    check_event_data(event.kind, event.data)
