"""TimelineView and ChatView in JupyterLab in headless chromium, on a live two-agent session:
typing in the chat drives the agents, and the timeline draws lanes, marks and the handoff."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from notebook_agents.views._timeline_layout import MARK_STYLES

from .cells import AGENTS
from .conftest import hover_until, run_cell, run_notebook, screenshot, slowed

CELLS = [
    AGENTS
    + """from notebook_agents.views import ChatView, TimelineView


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
    run_notebook(page, lab, "timeline_chat.ipynb", CELLS)

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
        "aria-label", re.compile(r"^Billing bring-up: \d+(\.\d)? ms$")
    )
    expect(chat.locator(".na-line-handoff")).to_have_text([re.compile("Concierge → Billing")])
    expect(chat.locator(".na-line-agent_message.na-on-enter .na-who")).to_have_text(["Billing"])
    expect(chat.locator(".na-chat-status")).to_have_text("")
    screenshot(page, "timeline_chat_live")

    # hover details on a mark, on a loaded machine (the page 20 times slower: Playwright's
    # hover() found the live view's redrawn mark detached at each try there): the live clock
    # holds still under the pointer, so the mark stays where it was found (moved to, not
    # hover()ed: the call's output sits on it). The first message's mark: the tool call's can
    # share its pixel with the handoff's arrow
    timeline.scroll_into_view_if_needed()
    with slowed(page, 20):
        mark = timeline.locator(".na-mark-user_message").first
        hover_until(page, mark, timeline.locator(".na-tooltip"), "hello there")

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
    # a call that is over takes no more turns, and says so where one would type
    expect(chat.locator(".na-chat-status")).to_contain_text("This call has ended.")
    expect(chat.locator(".na-chat-input")).to_be_disabled()
    expect(chat.locator(".na-chat-send")).to_be_disabled()
    screenshot(page, "timeline_chat_closed")
    run_cell(page, "emulator.stop()")


def rgb(color: str) -> str:
    """``#be185d`` as the browser computes it: ``rgb(190, 24, 93)``."""
    return "rgb({}, {}, {})".format(*(int(color[i : i + 2], 16) for i in (1, 3, 5)))


PARTED = [
    """import json
import tempfile
from pathlib import Path

from notebook_agents import Trace
from notebook_agents.trace import TRACE_FORMAT
from notebook_agents.views import TimelineView


def message(item_id, role, text):
    return {"id": item_id, "type": "message", "role": role, "text": text}


said = [
    message("u1", "user", "Hello"),
    message("a1", "assistant", "Hi"),
    message("u2", "user", "Hello again"),
    message("a2", "assistant", "How can I help you?"),
]
parted = {
    "agent": "Weather",
    "message": "Weather's chat context and the model's conversation diverged",
    "missing": [],
    "extra": [],
    "order": True,
    "livekit": said,
    "model": [said[0], said[1], said[3], said[2]],
}
events = [
    ("handoff", 0.0, {"from": None, "to": "Weather", "context_items": said[:2]}),
    ("user_message", 1.0, {"text": "Hello again", "item_id": "u2"}),
    ("agent_message", 1.1, {"text": "How can I help you?", "item_id": "a2", "phase": "turn"}),
    ("context_diverged", 1.2, parted),
    ("context_converged", 2.0, {"agent": "Weather", "items": 4}),
]
path = Path(tempfile.mkdtemp()) / "parted.jsonl"
lines = [{"format": TRACE_FORMAT, "started_at": 0.0}] + [
    {"seq": seq, "t": t, "kind": kind, "agent": "Weather", "data": data}
    for seq, (kind, t, data) in enumerate(events)
]
path.write_text("\\n".join(json.dumps(line) for line in lines))
TimelineView(Trace.load(path))""",
]


def test_a_replayed_parting_is_marked_and_scrubbed_beside_the_agents_context(
    lab: tuple[str, Path], page: Page
) -> None:
    run_notebook(page, lab, "timeline_parted.ipynb", PARTED)

    timeline = page.locator(".na-timeline")
    parted = timeline.locator(".na-mark-context_diverged")
    expect(parted).to_have_count(1, timeout=60_000)
    expect(timeline.locator(".na-mark-context_converged")).to_have_count(1)
    # drawn in the colour the kernel chose for it, as the figure and the legend draw it
    fill = parted.evaluate("mark => getComputedStyle(mark).fill")
    assert fill == rgb(MARK_STYLES["context_diverged"].color)
    key = timeline.locator(".na-key-mark[data-mark='context_diverged'] path")
    assert key.evaluate("key => getComputedStyle(key).fill") == fill
    timeline.scroll_into_view_if_needed()
    hover_until(page, parted, timeline.locator(".na-tooltip"), "model's conversation diverged")

    # scrubbed to while apart: the model's side beside Weather's context, the reply it gave
    # ahead of the words it answers marked; together again, only Weather's context
    timeline.locator(".na-scrubber").fill("1.5")
    model_side = timeline.locator(".na-context-model")
    expect(model_side).to_have_count(1)
    expect(model_side.locator(".na-context-title")).to_have_text("Weather · model (at 1.20 s) (4)")
    expect(model_side.locator(".na-item-moved")).to_have_text("assistant: How can I help you?")
    expect(timeline.locator(".na-context")).to_have_count(2)
    screenshot(page, "timeline_parted_scrubbed")
    timeline.locator(".na-scrubber").fill("2")
    expect(timeline.locator(".na-context-model")).to_have_count(0)
    expect(timeline.locator(".na-context")).to_have_count(1)
