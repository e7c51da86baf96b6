"""TimelineView's layout in JupyterLab in headless chromium, light and dark theme: four handoffs
inside 1.5 s, a long idle gap and nothing in the first second (what a new user met).

Handoff labels never overlap and, like every hover box, stay inside the widget; the view starts
at the first event and shortens the idle gap visibly; the legend names the agent states and
handoff modes on show, in the colours they are drawn in; every text reads in both themes.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from ..test_timeline_view import four_handoffs, write_trace
from .conftest import next_frame, open_notebook, run_all, screenshot, write_notebook
from .test_theme_browser import MEASURE, problems, set_theme
from .themes import THEMES

CELLS = [
    """from notebook_agents import Trace
from notebook_agents.views import TimelineView

TimelineView(Trace.load("four_handoffs.jsonl"))""",
]

BOX = "el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }"


def box(locator: Locator) -> tuple[float, float, float, float]:
    left, top, right, bottom = locator.evaluate(BOX)
    return float(left), float(top), float(right), float(bottom)


def boxes(locator: Locator) -> list[tuple[float, float, float, float]]:
    found = locator.evaluate_all(f"els => els.map({BOX})")
    return [(float(a), float(b), float(c), float(d)) for a, b, c, d in found]


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def inside(inner: tuple[float, ...], outer: tuple[float, ...]) -> bool:
    return (
        inner[0] >= outer[0] and inner[1] >= outer[1]
        and inner[2] <= outer[2] and inner[3] <= outer[3]
    )  # fmt: skip


def fill_of(locator: Locator) -> str:
    color: str = locator.evaluate("el => getComputedStyle(el).fill")
    return color


def background_of(locator: Locator) -> str:
    color: str = locator.evaluate("el => getComputedStyle(el).backgroundColor")
    return color


def check_layout(page: Page, theme: str) -> None:
    timeline = page.locator(".na-timeline")
    widget = box(timeline)
    svg = timeline.locator("svg.na-timeline-svg")

    # four labels, each inside the widget, none over another
    labels = timeline.locator(".na-handoff-label")
    expect(labels).to_have_text(
        ["reused · copied", "fresh · empty", "reused · own", "fresh · copied"]
    )
    placed = boxes(labels)
    for i, a in enumerate(placed):
        assert inside(a, widget), f"{theme}: label {i} {a} leaves the widget {widget}"
        for j, b in enumerate(placed[i + 1 :], i + 1):
            assert not overlap(a, b), f"{theme}: labels {i} {a} and {j} {b} overlap"

    # every hover box inside the widget: each handoff's chip and arrow, each bring-up, the gap,
    # the last mark
    hovered = [
        *timeline.locator(".na-handoff-chip").all(),
        *timeline.locator(".na-handoff-arrow").all(),
        timeline.locator(".na-gap"),
        *timeline.locator(".na-bringup").all(),
        timeline.locator(".na-mark").last,
    ]
    tooltip = timeline.locator(".na-tooltip")
    for target in hovered:
        left, top, right, bottom = box(target)
        page.mouse.move((left + right) / 2, (top + bottom) / 2)
        expect(tooltip).to_be_visible()
        shown = box(tooltip)
        assert inside(shown, widget), f"{theme}: hover box {shown} leaves the widget {widget}"
    page.mouse.move(widget[0] + 5, widget[1] + 5)  # off the plot: the hover box goes
    expect(tooltip).to_be_hidden()

    # fitted to what happened: the axis starts at the first event (1 s), not at 0, and the
    # 48 s of nobody doing anything are shortened, with a mark that says how long they were
    width = box(svg)[2] - box(svg)[0]
    ticks = [
        float(t.removesuffix(" s")) for t in timeline.locator(".na-tick-label").all_text_contents()
    ]
    assert 0.9 <= ticks[0] <= 1.4, f"{theme}: the axis starts at {ticks[0]} s"
    marks = boxes(timeline.locator(".na-mark"))
    before_gap, after_gap = marks[1], marks[2]  # Concierge's reply at 1.7 s, the caller at 50 s
    assert after_gap[0] - before_gap[2] < 0.15 * width, f"{theme}: the idle gap is not shortened"
    gap = timeline.locator(".na-gap")
    expect(gap).to_have_count(1)
    expect(gap).to_contain_text("48.1 s idle")
    assert before_gap[2] <= box(gap)[0] and box(gap)[2] <= after_gap[0]

    # the legend: agent states and handoff modes on show, keyed in their drawn colours
    legend = timeline.locator(".na-legend")
    for state in ("listening", "thinking", "speaking"):
        key = legend.locator(f".na-key-state[data-state='{state}']")
        expect(key).to_have_count(1)
        span = timeline.locator(f".na-span[data-state='{state}']").first
        assert background_of(key) == fill_of(span), f"{theme}: {state} key and bar differ"
    modes = legend.locator(".na-key-mode")
    expect(modes).to_have_count(4)
    for mode in ("reused+copied", "fresh+empty", "reused+own", "fresh+copied"):
        key = legend.locator(f".na-key-mode[data-mode='{mode}']")
        chip = timeline.locator(f".na-handoff[data-mode='{mode}'] .na-handoff-chip")
        assert background_of(key) == fill_of(chip), f"{theme}: {mode} key and chip differ"


def test_close_handoffs_read_apart_inside_a_view_fitted_to_the_activity(
    lab: tuple[str, Path], page: Page
) -> None:
    base, root = lab
    write_trace(root / "four_handoffs.jsonl", four_handoffs())
    write_notebook(root / "timeline_layout.ipynb", CELLS)
    open_notebook(page, base, "timeline_layout.ipynb")
    run_all(page)
    timeline = page.locator(".na-timeline")
    expect(timeline.locator(".na-lane")).to_have_count(3, timeout=60_000)
    found: list[str] = []
    try:
        for theme, color0, name in THEMES:
            set_theme(page, theme, color0)
            timeline.scroll_into_view_if_needed()
            next_frame(page)
            check_layout(page, theme)
            # every text reads on what is drawn under it: chips, the gap, the state bars
            found += problems(theme, page.evaluate(MEASURE, ".na-timeline"), dark=name == "dark")
            screenshot(page, f"timeline_four_handoffs_{name}")
            # the hover box of the handoff at the right edge, as a reader sees it
            last = box(timeline.locator(".na-handoff-chip").last)
            page.mouse.move((last[0] + last[2]) / 2, (last[1] + last[3]) / 2)
            expect(timeline.locator(".na-tooltip")).to_be_visible()
            screenshot(page, f"timeline_four_handoffs_{name}_hover")
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
    assert found == [], "\n".join(["what does not read or follow the theme:", *found])
