"""A failed expectation's block in JupyterLab in headless chromium: its short columns (the
mark, the index, the time, the agent, the kind) each stay on one line, the event's text takes
the rest of the width and wraps, in the light and the dark theme, and it reads in both."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import next_frame, run_cell, run_notebook
from .test_theme_browser import set_theme
from .themes import THEMES, in_both_themes

# livekit's own events of a turn whose expectation failed at the reply, shown as the runner's
# handler shows them (with the runner's trace, for their times)
CELLS = [
    """from livekit.agents import Agent, AgentHandoffEvent, ChatMessageEvent, llm
from notebook_agents import Trace
from notebook_agents.runner._failed_expectation import FailedExpectation


class WeatherDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the weather desk.")


trace = Trace()  # the runner's, begun before the turn
asked = "what is the weather in Paris, and in Lyon, and in Marseille, this week and the next? " * 3
events = [
    ChatMessageEvent(item=llm.ChatMessage(role="user", content=[asked])),
    AgentHandoffEvent(item=llm.AgentHandoff(old_agent_id=None, new_agent_id="weather_desk"),
                      old_agent=None, new_agent=WeatherDesk()),
    ChatMessageEvent(item=llm.ChatMessage(
        role="assistant", content=[f"You are the weather desk. You said: {asked}"]
    )),
]
FailedExpectation('result.expect.next_event().is_function_call(name="lookup_weather")',
                  "Expected FunctionCallEvent", events, 2, trace)""",
]

SHORT_CELLS = "td:not(:last-child)"

LINES = """(block) => [...block.querySelectorAll('tr')].map((row) => [...row.cells].map((cell) => {
    // one client rect per line box the cell's text is laid out in
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return [cell.textContent, tops.size];
}))"""


def test_the_short_columns_never_break_and_the_text_wraps(
    lab: tuple[str, Path], page: Page
) -> None:
    run_notebook(page, lab, "failed_expectation.ipynb", CELLS)
    block = page.locator(".na-failed-expectation")
    expect(block.locator("tr")).to_have_count(3, timeout=60_000)
    try:
        for theme, color0, _ in THEMES:
            set_theme(page, theme, color0)
            next_frame(page)
            rows = block.evaluate(LINES)
            short = [(text, lines) for row in rows for text, lines in row[:-1] if text]
            assert short and all(lines == 1 for _, lines in short), f"{theme}: {short}"
            assert [row[-1][1] > 1 for row in rows] == [True, False, True], theme  # it wraps
            fits = block.evaluate("b => b.querySelector('table').scrollWidth <= b.clientWidth")
            assert fits, f"{theme}: the table is wider than its block"
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
    assert in_both_themes(page, ".na-failed-expectation", "failed_expectation") == []
    run_cell(page, "events.clear()")
