"""StateView in JupyterLab in headless chromium, in the light and the dark theme: it renders,
follows the live agent, and says how the session ended, with no state left over from it."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import run_cell, run_notebook
from .themes import in_both_themes

CELLS = [
    """from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner
from notebook_agents.views import StateView

emulator = Emulator().start()
server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Agent(instructions="You are Ada."), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
view = StateView(runner.trace)
view""",
    """await runner.ready()
await runner.send_text("hello")""",
]


def test_state_view_renders_and_follows_the_agent(lab: tuple[str, Path], page: Page) -> None:
    run_notebook(page, lab, "state_view.ipynb", CELLS)

    agent = page.locator(".na-state .na-agent")
    agent_state = page.locator(".na-state .na-agent-state")
    # the view was displayed before the session started: these arrive as live updates
    expect(agent).to_have_text("Agent", timeout=60_000)
    expect(agent_state).to_have_attribute("data-state", "listening", timeout=60_000)
    expect(page.locator(".na-state .na-user-state")).to_have_text("listening")
    time_in_state = page.locator(".na-field:has(.na-agent-state) .na-since")
    expect(time_in_state).to_have_text(re.compile(r"^\d+\.\d s$"))
    # each badge in the colour the kernel sent for its state
    expect(agent_state).to_have_css("background-color", "rgb(3, 105, 161)")  # listening
    assert in_both_themes(page, ".na-state", "state_view_live") == []

    run_cell(page, "runner.stop()")
    expect(page.locator(".na-state .na-closed")).to_have_text("session closed")
    # no state left over from the call (livekit's last ones were listening)
    expect(agent_state).to_have_text("closed")
    expect(agent_state).to_have_attribute("data-state", "closed")
    expect(page.locator(".na-state .na-user-state")).to_have_text("–")
    expect(time_in_state).to_have_text("")
    assert in_both_themes(page, ".na-state", "state_view_closed") == []
    run_cell(page, "emulator.stop()")


FAILING = [
    # the same agent, but its entrypoint raises once the session has started
    CELLS[0] + '\n    raise ValueError("the CRM is down")',
    """runner = NotebookRunner(server).start()
view = StateView(runner.trace)
view""",
    "await runner.ready()",
]


def test_state_view_says_why_the_session_failed(lab: tuple[str, Path], page: Page) -> None:
    run_notebook(page, lab, "state_view_failed.ipynb", FAILING)

    closed = page.locator(".na-state .na-closed")
    expect(closed).to_have_text(re.compile(r"^session failed: .*the CRM is down"), timeout=60_000)
    expect(closed).to_have_attribute("data-failed", "true")
    assert in_both_themes(page, ".na-state", "state_view_failed") == []
    run_cell(page, "runner.stop()\nemulator.stop()")
