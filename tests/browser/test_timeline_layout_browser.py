"""TimelineView's layout in JupyterLab in headless chromium, light and dark theme: four handoffs
inside 1.5 s, a long idle gap and nothing in the first second (what a new user met).

Handoff labels never overlap and, like every hover box, stay inside the widget; the view starts
at the first event and shortens the idle gap visibly; the legend names the agent states and
handoff modes on show, in the colours they are drawn in; every text reads in both themes. The
scrubber picks the time the axis shows where it is; an idle gap at the end of the trace is
labelled whole, inside the view.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from notebook_agents.trace import TraceEvent
from notebook_agents.views._timeline_layout import TimelineLayout
from tests.views.test_timeline_view import (
    away_after_the_reply,
    four_handoffs,
    idle_call,
    write_trace,
)

from .conftest import next_frame, open_notebook, run_all, screenshot, write_notebook
from .lab import ARTIFACTS
from .test_theme_browser import MEASURE, problems, set_theme
from .themes import THEMES, in_both_themes

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


DRAWN = """() => {
    const plot = document.querySelector(".na-timeline .na-plot");
    const svg = document.querySelector(".na-timeline svg.na-timeline-svg");
    return {
        plot: plot ? plot.clientWidth : null,
        svg: svg ? Number(svg.getAttribute("width")) : null,
        shown: plot ? plot.checkVisibility({ contentVisibilityAuto: true }) : null,
    };
}"""


def drawn_to_its_width(page: Page) -> None:
    """Return once the timeline is drawn at its plot's width: a theme switch lays JupyterLab
    out anew, and the drawing follows when its ResizeObserver reports the width (a frame or
    more later on a busy machine: the labels were once checked against the old drawing; a
    loaded CI machine once took over 30 s, and what it had drawn is now said)."""
    try:
        page.wait_for_function(
            f"""() => {{
                const drawn = ({DRAWN})();
                return drawn.plot > 0 && drawn.svg === Math.max(drawn.plot, 300);
            }}""",
            timeout=90_000,
        )
    except PlaywrightTimeoutError:
        raise AssertionError(f"never drawn at its width: {page.evaluate(DRAWN)}") from None
    next_frame(page)


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
    band = box(gap.locator(".na-gap-band"))
    assert before_gap[2] <= band[0] and band[2] <= after_gap[0]

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
            drawn_to_its_width(page)
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


def replay(lab: tuple[str, Path], page: Page, name: str, records: list[dict[str, Any]]) -> Locator:
    """A notebook showing a TimelineView of ``records`` (a loaded trace), drawn."""
    base, root = lab
    write_trace(root / f"{name}.jsonl", records)
    cell = f"""from notebook_agents import Trace
from notebook_agents.views import TimelineView

TimelineView(Trace.load("{name}.jsonl"))"""
    write_notebook(root / f"{name}.ipynb", [cell])
    open_notebook(page, base, f"{name}.ipynb")
    run_all(page)
    timeline = page.locator(".na-timeline")
    expect(timeline.locator(".na-mark").first).to_be_visible(timeout=60_000)
    timeline.scroll_into_view_if_needed()
    next_frame(page)
    return timeline


def ticks(timeline: Locator) -> list[tuple[float, float]]:
    """Each tick label's (x on the page, trace seconds)."""
    found = timeline.locator(".na-tick-label").evaluate_all(
        "els => els.map(el => { const r = el.getBoundingClientRect();"
        " return [r.left + r.width / 2, parseFloat(el.textContent)]; })"
    )
    return [(float(x), float(t)) for x, t in found]


def test_the_scrubber_picks_the_time_the_axis_shows_where_it_is(
    lab: tuple[str, Path], page: Page
) -> None:
    """Clicked anywhere along its track (before, inside and after the shortened idle gap),
    the scrubber's cursor is drawn where it was clicked, at the time the axis reads there."""
    timeline = replay(lab, page, "scrub_axis", four_handoffs())
    scrubber = timeline.locator(".na-scrubber")
    track = box(scrubber)
    y = (track[1] + track[3]) / 2
    gap = box(timeline.locator(".na-gap-band"))
    marked = ticks(timeline)
    step = marked[1][1] - marked[0][1]
    # between two ticks a step apart the axis is linear: a third of the way is a third of a step
    between = [
        (x0 + (x1 - x0) / 3, t0 + step / 3, step / (x1 - x0))
        for (x0, t0), (x1, t1) in itertools.pairwise(marked)
        if abs(t1 - t0 - step) < 1e-9
    ]
    assert len(between) >= 2, f"too few ticks to read the axis: {marked}"
    cursor = timeline.locator(".na-cursor")

    def scrub(x: float) -> float:
        """Click the scrubber at ``x``; the cursor is drawn there; the time it picked."""
        page.mouse.click(x, y)
        expect(cursor).to_have_count(1)
        next_frame(page)
        drawn = box(cursor)
        assert abs(drawn[0] - x) <= 1, f"scrubber clicked at x={x:.1f}, cursor at {drawn[0]:.1f}"
        return float(timeline.locator(".na-scrub-time").inner_text().removesuffix(" s"))

    for x, axis_t, seconds_per_px in between:
        picked = scrub(x)
        assert abs(picked - axis_t) <= seconds_per_px + 0.001, (
            f"at x={x:.1f} the axis reads {axis_t:.3f} s, the scrubber {picked:.3f} s"
        )
    picked = scrub((gap[0] + gap[2]) / 2)  # the idle gap: somewhere inside it
    assert 1.9 < picked < 50.0
    screenshot(page, "timeline_scrubbed_in_the_gap")


def test_an_idle_gap_at_the_end_is_labelled_whole_inside_the_view(
    lab: tuple[str, Path], page: Page
) -> None:
    """The caller went away 15 s after the reply (not drawn, but the trace's last event): the
    gap it ends is in the view, the band inside the plot, its label whole inside the view,
    under the band."""
    timeline = replay(lab, page, "away", away_after_the_reply())
    label = timeline.locator(".na-gap-label")
    expect(label).to_have_text("15.0 s idle")
    plot = box(timeline.locator("svg.na-timeline-svg"))
    band = box(timeline.locator(".na-gap-band"))
    assert inside(band, plot), f"the gap's band {band} leaves the plot {plot}"
    named = box(label)
    assert inside(named, plot), f"the label {named} leaves the plot {plot}"
    assert band[0] <= (named[0] + named[2]) / 2 <= band[2] and named[1] >= band[3]
    # the label's glyphs all drawn: as wide as its whole text
    drawn, whole = label.evaluate(
        "el => [el.getBoundingClientRect().width, el.getComputedTextLength()]"
    )
    assert drawn >= whole - 0.5
    assert in_both_themes(page, ".na-timeline", "timeline_idle_at_the_end") == []


def raised_tool() -> list[dict[str, Any]]:
    """A tool that raised, as a live run recorded it: its call, the error (source ``tool``)
    and its failed output within 4 ms, all in the lane's row for tools and errors."""
    call = {"name": "check_stock", "call_id": "c1", "arguments": '{"item": "apples"}'}
    events: list[tuple[float, str, str | None, dict[str, Any]]] = [
        (0.8446, "handoff", "Shop", {"from": None, "to": "Shop", "session": None,
                                     "context": None}),
        (0.8663, "agent_state", "Shop", {"old": "initializing", "new": "listening"}),
        (0.9087, "user_message", "Shop", {"text": "check stock", "item_id": "u1"}),
        (0.9739, "tool_call", "Shop", call),
        (0.9765, "error", "Shop", {"message": "the tool check_stock raised RuntimeError",
                                   "type": "RuntimeError", "source": "tool",
                                   "recoverable": True, "tool": "check_stock",
                                   "call_id": "c1"}),
        (0.9772, "agent_state", "Shop", {"old": "listening", "new": "thinking"}),
        (0.9778, "tool_output", "Shop", {**call, "output": "An internal error occurred",
                                         "is_error": True}),
        (1.0051, "agent_message", "Shop", {"text": "You are Shop.", "item_id": "a1",
                                           "source": "tool_reply", "phase": "turn"}),
        (1.0115, "closed", None, {"reason": "user_initiated"}),
    ]  # fmt: skip
    return [
        {"seq": seq, "t": t, "kind": kind, "agent": agent, "data": data}
        for seq, (t, kind, agent, data) in enumerate(events)
    ]


STROKED_BOX = (
    "el => { const r = el.getBoundingClientRect();"
    " const w = parseFloat(getComputedStyle(el).strokeWidth) / 2 || 0;"
    " return [r.left - w, r.top - w, r.right + w, r.bottom + w]; }"
)


def test_a_raised_tools_call_error_and_failed_output_are_drawn_apart(
    lab: tuple[str, Path], page: Page
) -> None:
    """The error's cross and the failed output's square (both red) were reported drawn one
    over the other: each mark, its outline included, covers no other."""
    timeline = replay(lab, page, "raised_tool", raised_tool())
    marks = timeline.locator(".na-mark")
    expect(marks).to_have_count(5)
    expect(timeline.locator(".na-mark-error")).to_have_count(1)
    drawn = [tuple(map(float, b)) for b in marks.evaluate_all(f"els => els.map({STROKED_BOX})")]
    for i, a in enumerate(drawn):
        for j, b in enumerate(drawn[i + 1 :], i + 1):
            assert not overlap(a, b), f"marks {i} {a} and {j} {b} overlap"


IDLE_CALLS = {"seven": idle_call(), "six": idle_call((3.4, 5.0, 3.3, 3.6, 4.0, 3.2))}
"""two similar calls left idle between turns: one with 7 idle gaps to 36 s, one with 6"""

SIDE_BY_SIDE = [
    """from notebook_agents import Trace
from notebook_agents.views import TimelineView

TimelineView(Trace.load("seven.jsonl"))""",
    # as notebook 07 shows two calls: each in a column of 49% of the output
    """import ipywidgets as widgets

seven = TimelineView(Trace.load("seven.jsonl"))
six = TimelineView(Trace.load("six.jsonl"), like=seven)
widgets.HBox(
    [widgets.VBox([view], layout={"width": "49%"}) for view in (seven, six)],
    layout={"justify_content": "space-between"},
)""",
]

AXIS = """root => {
    const box = (el) => { const r = el.getBoundingClientRect();
                          return [r.left, r.top, r.right, r.bottom]; };
    const union = (els) => { const bs = els.map(box);
        return [Math.min(...bs.map(b => b[0])), Math.min(...bs.map(b => b[1])),
                Math.max(...bs.map(b => b[2])), Math.max(...bs.map(b => b[3]))]; };
    return {
        svg: box(root.querySelector("svg.na-timeline-svg")),
        ticks: [...root.querySelectorAll(".na-tick-label")].map(el =>
            [...box(el), parseFloat(el.textContent)]),
        gaps: [...root.querySelectorAll(".na-gap")].map(g => ({
            text: g.querySelector(".na-gap-label").textContent,
            label: box(g.querySelector(".na-gap-label")),
            band: box(g.querySelector(".na-gap-band")),
        })),
        arrows: [...root.querySelectorAll(".na-handoff")].map(h =>
            union([...h.querySelectorAll(".na-handoff-arrow, .na-handoff-head")])),
        bringUps: [...root.querySelectorAll(".na-bringup")].map(b =>
            [b.getAttribute("aria-label"), box(b.querySelector("rect"))]),
        speaking: box(root.querySelector(".na-span[data-state='speaking']")),
        end: Math.max(...[...root.querySelectorAll(".na-span")].map(el => box(el)[2])),
    };
}"""


def layout_of(records: list[dict[str, Any]]) -> TimelineLayout:
    """What the kernel lays out of ``records``."""
    return TimelineLayout([TraceEvent(r["seq"], r["t"], r["kind"], r["agent"], r["data"])
                           for r in records])  # fmt: skip


def check_axis(timeline: Locator, records: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """Every idle gap named under the times, inside the view, no label over another; a time
    in every stretch between gaps, between its gaps' bands; the two handoffs' arrows apart and
    each bring-up clear of the other handoff's arrow. Returns what was measured."""
    drawn: dict[str, Any] = timeline.evaluate(AXIS)
    kernel = layout_of(records)
    gaps = drawn["gaps"]
    assert len(gaps) == len(kernel.gaps), f"{where}: {len(gaps)} gaps drawn of {len(kernel.gaps)}"
    texts = [g["text"] for g in gaps]
    assert texts in ([g["label"] for g in kernel.gaps], [g["short"] for g in kernel.gaps]), texts
    svg = drawn["svg"]
    labels = [g["label"] for g in gaps] + [tuple(t[:4]) for t in drawn["ticks"]]
    for i, a in enumerate(labels):
        assert inside(a, svg), f"{where}: axis label {a} leaves the timeline {svg}"
        for b in labels[i + 1 :]:
            assert not overlap(a, b), f"{where}: axis labels {a} and {b} overlap"
    bands = [g["band"] for g in gaps]
    edges = [kernel.first_t or 0.0, *(t for g in kernel.gaps for t in (g["start"], g["end"]))]
    edges.append(kernel.last_t or 0.0)
    for k, (start, end) in enumerate(zip(edges[::2], edges[1::2], strict=True)):
        left = bands[k - 1][2] if k else svg[0]
        right = bands[k][0] if k < len(bands) else svg[2]
        low = start if k else -1e9  # the view starts a little before the first event
        high = end if k < len(bands) else 1e9  # and, sharing a wider scale, runs on
        found = [
            t for t in drawn["ticks"]
            if low - 1e-6 <= t[4] <= high + 1e-6 and left <= (t[0] + t[2]) / 2 <= right
        ]  # fmt: skip
        assert found, f"{where}: no time on the axis from {start:.2f} s to {end:.2f} s"
    # to billing and back 0.5 s later: the arrows apart, each bring-up off the other's arrow
    first, back = drawn["arrows"]
    assert not overlap(first, back), f"{where}: the arrows {first} and {back} overlap"
    bring_ups = dict(drawn["bringUps"])
    billing, concierge = (
        next(b for name, b in bring_ups.items() if name.startswith(who))
        for who in ("Billing", "Concierge")
    )
    assert not overlap(billing, back), f"{where}: Billing's bring-up {billing} under {back}"
    assert not overlap(concierge, first), f"{where}: the bring-up {concierge} under {first}"
    return drawn


def test_every_idle_gap_is_named_and_the_axis_has_times_across_the_whole_call(
    lab: tuple[str, Path], page: Page
) -> None:
    """A loaded call with 7 idle gaps to 36 s, whole-width and as notebook 07 shows two calls
    side by side (sharing one time scale), light and dark: every gap's label under the times,
    a time in every stretch between gaps, no label over another, the handoffs 0.5 s apart
    drawn apart. Side by side, the same time is the same length in both (before: no gap
    labelled, times only at 25-35 s, one time in a narrow view, the arrows 3 px apart)."""
    base, root = lab
    for name, records in IDLE_CALLS.items():
        write_trace(root / f"{name}.jsonl", records)
    write_notebook(root / "idle_calls.ipynb", SIDE_BY_SIDE)
    open_notebook(page, base, "idle_calls.ipynb")
    run_all(page)
    timelines = page.locator(".na-timeline")
    expect(timelines).to_have_count(3, timeout=60_000)
    for i in range(3):
        expect(timelines.nth(i).locator(".na-gap-label").first).to_be_visible()
    calls = [("whole width", IDLE_CALLS["seven"]), ("left", IDLE_CALLS["seven"]),
             ("right", IDLE_CALLS["six"])]  # fmt: skip
    found: list[str] = []
    try:
        for theme, color0, name in THEMES:
            set_theme(page, theme, color0)
            timelines.first.scroll_into_view_if_needed()
            drawn_to_its_width(page)
            measured = [
                check_axis(timelines.nth(i), records, f"{theme}, {where}")
                for i, (where, records) in enumerate(calls)
            ]
            # one time scale: the first reply's speech (0.7 s in both) as long in each, each
            # gap as wide; the shorter call ends short of the other's right edge
            left, right = measured[1], measured[2]
            widths = [m["speaking"][2] - m["speaking"][0] for m in (left, right)]
            assert abs(widths[0] - widths[1]) < 0.5, f"{theme}: 0.7 s drawn {widths} px long"
            gap_widths = {
                round(g["band"][2] - g["band"][0], 1) for m in (left, right) for g in m["gaps"]
            }
            assert max(gap_widths) - min(gap_widths) < 0.5, f"{theme}: gaps {gap_widths} px wide"
            assert right["end"] - right["svg"][0] < left["end"] - left["svg"][0] - 20
            found += problems(theme, page.evaluate(MEASURE, ".na-timeline"), dark=name == "dark")
            for i, where in enumerate(("whole", "side_by_side")):
                cell = timelines.nth(i).locator(
                    "xpath=ancestor::div[contains(@class, 'jp-Cell ')][1]"
                )
                cell.scroll_into_view_if_needed()
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                cell.screenshot(path=str(ARTIFACTS / f"timeline_idle_call_{where}_{name}.png"))
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
    assert found == [], "\n".join(["what does not read or follow the theme:", *found])
