""" "Save as scenario" in JupyterLab in headless chromium: the call typed into ChatView is
written, with the button, into the file named in the form; the file and the refusal of a label
in use show under it, reading in both themes."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from notebook_agents.suites import load_suite

from .cells import AGENTS
from .conftest import run_cell, run_notebook
from .themes import in_both_themes

CELLS = [
    AGENTS
    + """from notebook_agents.views import ChatView


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
await runner.ready()
chat = ChatView(runner)
chat""",
]


def test_the_chats_button_saves_the_call_as_a_scenario(lab: tuple[str, Path], page: Page) -> None:
    run_notebook(page, lab, "chat_scenario.ipynb", CELLS)
    chat = page.locator(".na-chat")
    for said, replies in [("hello", 1), ("please transfer to billing", 2)]:
        chat.locator(".na-chat-input").fill(said)
        chat.locator(".na-chat-input").press("Enter")
        expect(chat.locator(".na-line-agent_message")).to_have_count(replies, timeout=30_000)

    form = chat.locator(".na-scenario-form")
    expect(form.locator(".na-scenario-path")).to_have_value("scenarios.yaml")
    form.locator(".na-scenario-path").fill("chat_call.scenarios.yaml")
    form.locator(".na-scenario-label").fill("transfers to billing")
    form.locator(".na-scenario-save").click()

    written = (lab[1] / "chat_call.scenarios.yaml").resolve()  # the kernel's folder: the lab's
    status = form.locator(".na-scenario-status")
    expect(status).to_have_text(f"saved in {written}", timeout=30_000)
    expect(form.locator(".na-scenario-label")).to_have_value("")
    scenario = load_suite(written)["transfers to billing"]
    assert [turn.user for turn in scenario.turns] == ["hello", "please transfer to billing"]
    assert "next_event().is_agent_handoff(new_agent_type=Billing)" in [
        e.text for e in scenario.turns[1].expect
    ]

    # a label in use: refused, said where the file was, in the error's colour
    form.locator(".na-scenario-label").fill("transfers to billing")
    form.locator(".na-scenario-save").click()
    expect(status).to_contain_text("the label 'transfers to billing' is scenarios[0]'s already")
    expect(status).to_have_class(re.compile("na-error"))
    assert in_both_themes(page, ".na-chat", "chat_scenario", {"chat": chat}) == []
    run_cell(page, "runner.stop()\nemulator.stop()")
