"""TimelineView in JupyterLab in headless chromium: a live realtime handoff's phases appear at
the handoff once livekit's spans of it ended (the call still on), as a strip of segments where
the kernel's times put them on the axis, each in its phase's colour; the handoff's hover text
lists the phases with their truth; it reads in the light and the dark theme."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from .cells import AGENTS
from .conftest import hover_until, run_cell, run_notebook, screenshot
from .test_theme_browser import MEASURE, problems, set_theme
from .test_timeline_layout_browser import drawn_to_its_width
from .themes import THEMES

CELLS = [
    AGENTS
    + """from notebook_agents import LatencyModel
from notebook_agents.views import TimelineView


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(rtt_ms=20), api_key="offline", modalities=["text"]
    )
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
await runner.ready()
view = TimelineView(runner.trace, LatencyModel(rtt_ms=20))
view""",
]

GEOMETRY = """root => {
    const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.right]; };
    return {
        ticks: [...root.querySelectorAll(".na-tick-label")].map((el) => {
            const [l, r] = box(el);
            return [(l + r) / 2, parseFloat(el.textContent)];
        }),
        segments: [...root.querySelectorAll(".na-phase")].map((el) => [
            el.dataset.phase, ...box(el), getComputedStyle(el).fill]),
        frame: box(root.querySelector(".na-phases-frame")),
    };
}"""


def rgb(color: str) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def check_strip(timeline: Locator, kernel: dict[str, Any]) -> None:
    """Each segment where the kernel's seconds fall on the axis its ticks label (read with
    the segments in one go: one drawing), in the kernel's order and colours."""
    (strip,) = kernel["phases"]
    drawn = timeline.evaluate(GEOMETRY)
    # the ticks of the stretch between idle gaps the strip is in: there time runs linearly
    after = max((g["end"] for g in kernel["gaps"] if g["end"] <= strip["start"]), default=-1.0)
    until = min((g["start"] for g in kernel["gaps"] if g["start"] >= strip["end"]), default=1e9)
    ticks = [(float(x), float(t)) for x, t in drawn["ticks"] if after <= t <= until]
    (x0, t0), (x1, t1) = ticks[0], ticks[-1]

    def x(t: float) -> float:
        return x0 + (t - t0) * (x1 - x0) / (t1 - t0)

    shown = [s for s in strip["segments"] if s["end"] > s["start"]]  # a moment draws nothing
    assert [d[0] for d in drawn["segments"]] == [s["name"] for s in shown]
    for (name, left, right, fill), segment in zip(drawn["segments"], shown, strict=True):
        assert abs(left - x(segment["start"])) < 1.0, (name, left, x(segment["start"]))
        assert abs(right - x(segment["end"])) < 1.0, (name, right, x(segment["end"]))
        assert fill == rgb(segment["color"]), (name, fill)
    left, right = drawn["frame"]
    assert abs(left - x(strip["start"])) < 1.5 and abs(right - x(strip["end"])) < 1.5
    # how wide it is follows from how long the whole call was (longer on a loaded machine,
    # so narrower: once 30 px for 40 on a quiet one): that it can be hovered is checked by
    # hovering it


def test_a_live_handoffs_phases_drawn_where_the_kernel_put_them(
    lab: tuple[str, Path], page: Page
) -> None:
    _, root = lab
    run_notebook(page, lab, "timeline_phases.ipynb", CELLS)
    timeline = page.locator(".na-timeline")
    expect(timeline.locator(".na-lane")).to_have_count(1, timeout=60_000)
    run_cell(page, 'await runner.send_text("transfer to billing")')
    # picked up live: the call goes on, the spans of the handoff ended after its events
    strip = timeline.locator(".na-phases")
    expect(strip).to_have_count(1, timeout=30_000)
    expect(strip).to_have_attribute("data-mode", "reused+empty")
    expect(timeline.locator(".na-handoff-label")).to_have_text(["reused · empty"])
    expect(strip.locator(".na-phase").first).to_have_attribute("data-phase", "tool_return")
    # each phase as its spans end: the reply's last, once livekit played it
    expect(strip.locator('.na-phase[data-phase="playout"]')).to_have_count(1, timeout=30_000)

    # the call over: the drawing holds still; the kernel's phases beside it
    run_cell(
        page,
        "runner.stop()\nimport json, pathlib\n"
        'kernel = {"phases": view.phases, "gaps": view.gaps}\n'
        'pathlib.Path("phases.json").write_text(json.dumps(kernel))',
    )
    kernel = json.loads((root / "phases.json").read_text())
    assert [s["name"] for s in kernel["phases"][0]["segments"]][:4] == [
        "tool_return", "on_exit", "drain", "close"
    ]  # fmt: skip
    timeline.scroll_into_view_if_needed()
    tooltip = timeline.locator(".na-tooltip")
    found: list[str] = []
    try:
        for theme, color0, name in THEMES:
            set_theme(page, theme, color0)
            drawn_to_its_width(page)
            check_strip(timeline, kernel)  # where the kernel put it, in either theme
            found += problems(theme, page.evaluate(MEASURE, ".na-timeline"), dark=name == "dark")
            screenshot(page, f"timeline-phases-{name}")
            # the handoff's hover text, on the chip (its event, then its phases) and on the
            # strip (the phases alone, each with its ms and truth; the screenshot's)
            for target in (timeline.locator(".na-handoff-chip"), strip.locator(".na-phase").nth(2)):
                hover_until(page, target, tooltip, "phases · Concierge → Billing · reused+empty")
                expect(tooltip).to_contain_text("drain: ")
                expect(tooltip).to_contain_text(" · net 20 ms · client ")
            screenshot(page, f"timeline-phases-{name}-hover")
            page.mouse.move(1, 1)
            expect(tooltip).to_be_hidden()
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
    assert found == [], "\n".join(["what does not read or follow the theme:", *found])
    run_cell(page, "emulator.stop()")
