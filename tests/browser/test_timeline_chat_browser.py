"""TimelineView and ChatView in JupyterLab in headless chromium, on a live two-agent session:
typing in the chat drives the agents, and the timeline draws lanes, marks and the handoff."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import (
    center,
    next_frame,
    open_notebook,
    run_all,
    run_cell,
    screenshot,
    write_notebook,
)

CELLS = [
    """from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner
from notebook_agents.views import ChatView, TimelineView

emulator = Emulator().start()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing.")

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Concierge(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the Concierge.")

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        \"\"\"Hand the caller to billing.\"\"\"
        return Billing()


server = AgentServer()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
await runner.ready()
chat = ChatView(runner)
chat""",
    """timeline = TimelineView(runner.trace)
timeline""",
]


def test_chat_drives_the_agents_and_the_timeline_follows(lab: tuple[str, Path], page: Page) -> None:
    base, root = lab
    write_notebook(root / "timeline_chat.ipynb", CELLS)
    open_notebook(page, base, "timeline_chat.ipynb")
    run_all(page)

    chat, timeline = page.locator(".na-chat"), page.locator(".na-timeline")
    expect(timeline.locator(".na-lane")).to_have_count(1, timeout=60_000)
    expect(timeline.locator(".na-lane-label")).to_have_text(["Concierge"])
    expect(timeline.locator(".na-span").first).to_be_visible()

    # the user types; the reply shows in the transcript under the agent's name
    chat.locator(".na-chat-input").fill("hello there")
    chat.locator(".na-chat-input").press("Enter")
    expect(chat.locator(".na-line-user_message .na-text")).to_have_text(["hello there"])
    expect(chat.locator(".na-line-agent_message")).to_have_count(1, timeout=30_000)
    expect(chat.locator(".na-line-agent_message .na-who")).to_have_text(["Concierge"])
    expect(timeline.locator(".na-mark-user_message")).to_have_count(1)
    expect(timeline.locator(".na-mark-agent_message")).to_have_count(1)

    # a handoff: a second lane, an arrow labelled with how it went, Billing's on_enter reply
    chat.locator(".na-chat-input").fill("please transfer to billing")
    chat.locator(".na-chat-send").click()
    expect(timeline.locator(".na-lane-label")).to_have_text(["Concierge", "Billing"])
    expect(timeline.locator(".na-handoff-label")).to_have_text(["reused · empty"])
    expect(timeline.locator(".na-mark-tool_call")).to_have_count(1)
    expect(timeline.locator(".na-mark-agent_message.na-on-enter")).to_have_count(1)
    expect(timeline.locator(".na-bringup")).to_have_attribute(
        "aria-label", re.compile(r"^Billing bring-up: \d+ ms$")
    )
    expect(chat.locator(".na-line-handoff")).to_have_text([re.compile("Concierge → Billing")])
    expect(chat.locator(".na-line-agent_message.na-on-enter .na-who")).to_have_text(["Billing"])
    expect(chat.locator(".na-chat-status")).to_have_text("")
    screenshot(page, "timeline_chat_live")

    # hover details on a mark: the live clock holds still under the pointer, so the mark
    # stays where it was read (moved to, not hover()ed: the call's output sits on it)
    timeline.scroll_into_view_if_needed()
    page.mouse.move(*center(timeline.locator(".na-timeline-svg")))
    next_frame(page)
    page.mouse.move(*center(timeline.locator(".na-mark-tool_call")))
    expect(timeline.locator(".na-tooltip")).to_be_visible()
    expect(timeline.locator(".na-tooltip")).to_contain_text("transfer_to_billing")

    # scrub to the end: each agent's chat context, from the kernel
    timeline.locator(".na-scrubber").fill(
        timeline.locator(".na-scrubber").get_attribute("max") or "1"
    )
    contexts = timeline.locator(".na-context")
    expect(contexts).to_have_count(2)
    expect(contexts.filter(has_text="Concierge")).to_contain_text("call transfer_to_billing")
    expect(contexts.filter(has_text="Billing (")).to_contain_text("assistant: You are Billing.")
    screenshot(page, "timeline_scrubbed")

    # zooming redraws around the pointer and stops nothing: marks stay drawn
    timeline.scroll_into_view_if_needed()
    box = timeline.locator("svg.na-timeline-svg").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + 20)
    page.mouse.wheel(0, -400)
    expect(timeline.locator(".na-lane")).to_have_count(2)

    run_cell(page, "runner.stop()")
    expect(chat.locator(".na-chat-status")).to_have_text("session closed")
    chat.locator(".na-chat-input").fill("anyone?")
    chat.locator(".na-chat-input").press("Enter")
    expect(chat.locator(".na-chat-status")).to_contain_text("stopped")
    screenshot(page, "timeline_chat_closed")
    run_cell(page, "emulator.stop()")
