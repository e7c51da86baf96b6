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
from .test_suite_view_browser import CELLS as SUITE_VIEW_CELLS
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


SUITE_CELLS = SUITE_VIEW_CELLS  # the suite view's own test's notebook: a suite run and shown


def test_the_suites_button_saves_the_selected_run_as_a_new_scenario(
    lab: tuple[str, Path], page: Page
) -> None:
    run_notebook(page, lab, "suite_scenario.ipynb", SUITE_CELLS)
    rows = page.locator(".na-suite tbody tr")
    expect(rows).to_have_count(3, timeout=60_000)
    form = page.locator(".na-suite .na-scenario-form")
    status = form.locator(".na-scenario-status")
    form.locator(".na-scenario-path").fill("suite_runs.scenarios.yaml")
    form.locator(".na-scenario-label").fill("looks up as it does")
    form.locator(".na-scenario-save").click()
    expect(status).to_have_text("select a scenario that ran: its run is what is saved")

    rows.nth(1).click()  # the greeter's failed run: the agent answers without the tool
    form.locator(".na-scenario-save").click()
    written = (lab[1] / "suite_runs.scenarios.yaml").resolve()
    expect(status).to_have_text(f"saved in {written}", timeout=30_000)
    (scenario,) = load_suite(written).scenarios
    assert scenario.label == "looks up as it does"
    assert [turn.user for turn in scenario.turns] == ["lookup weather location=Paris"]
    assert [e.text for e in scenario.turns[0].expect] == [
        'next_event().is_message(role="assistant")',
        "no_more_events()",
    ]
    assert in_both_themes(page, ".na-suite", "suite_scenario", {"suite": rows.first}) == []
    run_cell(page, "emulator.stop()")
