"""The views in JupyterLab's light and dark themes, in headless chromium: every visible text
of StateView, TimelineView, ChatView, AgentGraphView and a ContextTable reads at WCAG contrast
against what is painted under it, and the surfaces the views draw follow the theme (dark in
dark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from .conftest import next_frame, open_notebook, run_all, run_cell, screenshot, write_notebook
from .test_timeline_chat_browser import CELLS as TIMELINE_CHAT

# Concierge and Billing (whose on_enter speaks), the emulator and the server, as a module the
# notebook imports: the timeline and chat test's first cell
AGENTS = TIMELINE_CHAT[0]

CELLS = [
    """from notebook_agents import NotebookRunner
from notebook_agents.views import AgentGraphView, ChatView, StateView, TimelineView
from theme_agents import emulator, server

runner = NotebookRunner(server).start()
await runner.ready()
StateView(runner.trace)""",
    "TimelineView(runner.trace)",
    "await runner.ready()\nChatView(runner)",  # ChatView wants the kernel's running loop
    "AgentGraphView(runner)",
    'await runner.send_text("hello")\nawait runner.send_text("please transfer to billing")',
    "from notebook_agents.views import ContextTable\nContextTable.at(runner.trace)",
]

VIEWS = ".na-state, .na-timeline, .na-chat, svg.na-graph, .na-context-table"

# measured in the page: each text's colour and what is painted under it, each badge's pill,
# the surfaces the views paint (theme_contrast.js says how)
MEASURE = (Path(__file__).parent / "theme_contrast.js").read_text()


def measure(page: Page) -> dict[str, Any]:
    next_frame(page)  # a redraw already asked for is on the page
    result: dict[str, Any] = page.evaluate(MEASURE, VIEWS)
    return result


def problems(theme: str, measured: dict[str, Any], dark: bool) -> list[str]:
    """What does not read, or does not follow the theme, one line each."""
    found = [
        f"{theme}: {t['what']} contrast {t['ratio']:.2f} < {t['need']} ({t['fg']} on {t['bg']})"
        for t in measured["texts"]
        if t["ratio"] < t["need"]
    ]
    found += [
        f"{theme}: {b['what']} pill {b['pill']} on {b['bg']}: contrast {b['ratio']:.2f} < 3"
        for b in measured["badges"]
        if b["ratio"] < 3
    ]
    # relative luminance: #424242 (the dark theme's layout-color2) is 0.05, #eee 0.86
    found += [
        f"{theme}: {s['what']} is {s['color']} (luminance {s['luminance']:.2f})"
        for s in measured["surfaces"]
        if (s["luminance"] > 0.2 if dark else s["luminance"] < 0.6)
    ]
    return found


def summary(theme: str, measured: dict[str, Any]) -> str:
    texts = measured["texts"]
    lowest = min(texts, key=lambda t: t["ratio"] / t["need"])
    badges = min(b["ratio"] for b in measured["badges"])
    return (
        f"{theme}: {len(texts)} texts, lowest {lowest['ratio']:.2f} (needs {lowest['need']}:"
        f" {lowest['what']}); badge pills >= {badges:.2f}"
    )


def set_theme(page: Page, name: str, layout_color0: str) -> None:
    """Switch JupyterLab's theme as its Settings menu does; returns once its CSS applies."""
    page.evaluate("theme => jupyterapp.commands.execute('apputils:change-theme', { theme })", name)
    page.wait_for_function(
        """(color) => getComputedStyle(document.body)
            .getPropertyValue('--jp-layout-color0').trim() === color""",
        arg=layout_color0,
        timeout=30_000,
    )
    # JupyterLab covers the page with its splash screen while the theme loads
    expect(page.locator("#jupyterlab-splash")).to_have_count(0)


def test_the_views_read_in_the_light_and_the_dark_theme(lab: tuple[str, Path], page: Page) -> None:
    base, root = lab
    (root / "theme_agents.py").write_text(AGENTS)
    write_notebook(root / "theme.ipynb", CELLS)
    page.set_viewport_size({"width": 1280, "height": 1500})  # every view on screen at once
    open_notebook(page, base, "theme.ipynb")
    run_all(page)

    state, timeline = page.locator(".na-state"), page.locator(".na-timeline")
    chat, graph = page.locator(".na-chat"), page.locator("svg.na-graph")
    expect(state.locator(".na-agent")).to_have_text("Billing", timeout=90_000)
    expect(timeline.locator(".na-lane-label")).to_have_text(["Concierge", "Billing"])
    expect(timeline.locator(".na-handoff-label")).to_have_count(1)
    expect(timeline.locator(".na-mark-agent_message.na-on-enter")).to_have_count(1)
    expect(chat.locator(".na-line-handoff")).to_have_count(1)
    expect(chat.locator(".na-line-agent_message.na-on-enter")).to_have_count(1)
    expect(chat.locator(".na-chat-status")).to_have_text("")
    expect(graph.locator(".na-node.na-current")).to_have_attribute("data-id", "Billing")
    expect(graph.locator(".na-edge-label")).to_have_text(["transfer_to_billing"])
    # scrubbed to the end: each agent's chat context under the timeline
    scrubber = timeline.locator(".na-scrubber")
    scrubber.fill(scrubber.get_attribute("max") or "1")
    expect(timeline.locator(".na-context")).to_have_count(2)
    expect(timeline.locator(".na-item-function_call")).to_have_count(1)
    expect(page.locator(".na-context-table")).to_contain_text("call transfer_to_billing")

    found, seen = [], []
    try:
        for theme, color0, dark in (("JupyterLab Light", "white", False),
                                    ("JupyterLab Dark", "#111", True)):  # fmt: skip
            set_theme(page, theme, color0)
            measured = measure(page)
            assert measured["views"] == 5
            screenshot(page, "theme_dark" if dark else "theme_light")
            found += problems(theme, measured, dark)
            seen.append(summary(theme, measured))
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
        run_cell(page, "runner.stop()\nemulator.stop()")
    print("\n".join(seen))
    assert found == [], "\n".join(["what does not read or follow the theme:", *found])
