"""The shipped notebooks in JupyterLab in headless chromium: every view renders and is live."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from ..test_notebooks import CALLS_03
from .conftest import next_frame, open_notebook, run_all, run_cell, screenshot
from .lab import REPO
from .test_benchmark_view_browser import assert_fits_its_output
from .test_theme_browser import set_theme
from .test_timeline_layout_browser import box, boxes, overlap
from .themes import THEMES, in_both_themes


def assert_marks_apart(timeline: Locator) -> None:
    """No mark on the timeline covers another, nor does a bring-up's label touch an arrow."""
    marks = boxes(timeline.locator(".na-mark"))
    for i, a in enumerate(marks):
        for j, b in enumerate(marks[i + 1 :], i + 1):
            assert not overlap(a, b), f"marks {i} {a} and {j} {b} overlap"
    arrows = boxes(timeline.locator(".na-handoff-arrow, .na-handoff-head"))
    for label in boxes(timeline.locator(".na-bringup-label")):
        for arrow in arrows:
            assert not overlap(label, arrow), f"a bring-up label {label} meets an arrow {arrow}"


def test_prototype_notebook_shows_every_view_live(lab: tuple[str, Path], page: Page) -> None:
    base, root = lab
    shutil.copy(REPO / "notebooks" / "01_prototype.ipynb", root / "01_prototype.ipynb")
    open_notebook(page, base, "01_prototype.ipynb")
    run_all(page)

    # every turn and the handoff were drawn live
    chat = page.locator(".na-chat")
    expect(chat.locator(".na-line-handoff")).to_contain_text("Concierge → Billing", timeout=90_000)
    expect(page.locator(".na-state .na-agent")).to_have_text("Billing")
    expect(page.locator(".na-graph .na-node")).to_have_count(2)
    expect(page.locator(".na-graph .na-current")).to_contain_text("Billing")
    expect(chat.locator(".na-line-user_message")).to_have_count(3)
    timeline = page.locator(".na-timeline")
    expect(timeline.locator(".na-lane-label")).to_have_text(["Concierge", "Billing"])
    expect(timeline.locator(".na-handoff-label")).to_have_text(["reused · empty"])
    screenshot(page, "notebook_01_prototype")

    # at the default zoom every message and tool mark shows, none over another: each reply
    # and the next message, the tool call and its output, come milliseconds apart
    run_cell(page, 'print("marked:", len(runner.trace.of_kind('
             '"user_message", "agent_message", "tool_call", "tool_output")))')  # fmt: skip
    printed = page.locator(".jp-OutputArea-output").filter(has_text="marked:")
    expect(printed).to_have_count(1)
    marked = int(printed.inner_text().split()[-1])
    timeline.scroll_into_view_if_needed()
    expect(timeline.locator(".na-mark")).to_have_count(marked)
    assert_marks_apart(timeline)
    assert in_both_themes(page, ".na-timeline", "notebook_01_timeline") == []

    # after Run All the call is still live: the chat box takes a turn
    chat.locator(".na-chat-input").fill("What is 2 times 3?")
    chat.locator(".na-chat-input").press("Enter")
    reply = chat.locator(".na-line-agent_message", has_text="2 * 3 = 6")
    expect(reply).to_contain_text("You are Billing.", timeout=30_000)
    # hanging up as the notebook says ends the call, and the chat box says so
    run_cell(page, "runner.stop()\nemulator.stop()")
    expect(page.locator(".na-state .na-closed")).to_have_text("session closed")
    expect(chat.locator(".na-chat-input")).to_be_disabled()
    expect(chat.locator(".na-chat-status")).to_contain_text("This call has ended.")


def test_teaching_notebook_shows_each_handoff_and_failure(
    lab: tuple[str, Path], page: Page
) -> None:
    base, root = lab
    shutil.copy(REPO / "notebooks" / "03_teaching_handoffs.ipynb", root / "teaching.ipynb")
    open_notebook(page, base, "teaching.ipynb")
    run_all(page)
    # Run All stops at the first exercise's check: a short notice saying what is missing
    failed_check = page.locator(".jp-OutputArea-output").filter(has_text="Not yet:")
    expect(failed_check).to_contain_text("Weather kept the caller after 'thanks'", timeout=120_000)
    expect(failed_check).not_to_contain_text("Traceback")

    # the first call: every handoff drawn live, labelled with how it went
    main, held, failing = (page.locator(".na-timeline").nth(i) for i in range(3))
    expect(main.locator(".na-lane-label")).to_have_text(["Greeter", "Weather"])
    # there and back three times; the Greeter always comes back to its own context
    there_and_back = [
        *("reused · copied", "reused · own"),
        *("reused · empty", "reused · own"),
        *("fresh · copied", "fresh · own"),
    ]
    expect(main.locator(".na-handoff-label")).to_have_text(there_and_back)
    expect(page.locator(".na-graph .na-node")).to_have_count(2)
    chat = page.locator(".na-chat")
    expect(chat.locator(".na-line-handoff").first).to_contain_text("Greeter → Weather")
    # each failure call: its error marked on the timeline, in the lane where it happened
    for timeline in (held, failing):
        expect(timeline.locator(".na-mark-error")).to_have_count(1)
    main.scroll_into_view_if_needed()
    screenshot(page, "notebook_03_teaching")
    # every mark and every bring-up's label clear of the others and of the arrows
    for timeline in (main, held, failing):
        assert_marks_apart(timeline)

    # each handoff's bring-up band lasts as long as the trace says, in its label and tooltip
    run_cell(
        page,
        "from notebook_agents.analysis import bring_ups, milliseconds\n"
        "print('took', *(f'{b.agent} bring-up: {milliseconds(b.seconds)}'"
        " for b in bring_ups(call.trace.events)), sep='|')",
    )
    printed = page.locator(".jp-OutputArea-output").filter(has_text="took|")
    expect(printed).to_have_count(1)
    took = printed.inner_text().strip().split("|")[1:]
    assert len(took) == len(there_and_back)
    bands = main.locator(".na-bringup")
    expect(bands).to_have_count(len(took))
    assert [band.get_attribute("aria-label") for band in bands.all()] == took
    # dispatched, not moved to: at this zoom the marks around a band cover most of it
    bands.last.locator("rect").dispatch_event("pointermove", {"clientX": 10, "clientY": 10})
    expect(main.locator(".na-tooltip")).to_contain_text(
        "handoff → first words: " + took[-1].split(": ")[1]
    )

    # each solution is folded until the learner asks for it
    solution = page.locator(".jp-MarkdownOutput details").first
    expect(solution.locator("summary")).to_have_text("Solution")
    expect(solution.get_by_text("async def thanks")).to_be_hidden()
    solution.locator("summary").click()
    expect(solution.get_by_text("async def thanks")).to_be_visible()

    # the first call outlived the calls the later sections started: its views at the top are
    # live, and the chat box takes a turn
    state = page.locator(".na-state")
    state.scroll_into_view_if_needed()
    expect(state.locator(".na-agent")).to_have_text("Greeter")
    expect(state.locator(".na-closed")).to_have_text("")
    screenshot(page, "notebook_03_top_views_live")
    chat.scroll_into_view_if_needed()
    expect(chat.locator(".na-chat-input")).to_be_enabled()
    chat.locator(".na-chat-input").fill("What is 2 times 3?")
    chat.locator(".na-chat-input").press("Enter")
    reply = chat.locator(".na-line-agent_message", has_text="2 * 3 = 6")
    expect(reply).to_contain_text("You are the Greeter.", timeout=30_000)
    expect(chat.locator(".na-chat-status")).to_have_text("")
    screenshot(page, "notebook_03_chat_live")

    # every other call was hung up where its part ended; the failed check hung up its own
    run_cell(page, CALLS_03)
    expect(page.locator(".jp-OutputArea-output").filter(has_text="calls:")).to_have_text(
        "calls: call=running held=stopped failing=stopped check=stopped"
    )


def test_benchmark_notebook_fits_and_shows_each_figure_once(
    lab: tuple[str, Path], page: Page
) -> None:
    base, root = lab
    shutil.copy(REPO / "notebooks" / "02_handoff_benchmark.ipynb", root / "benchmark.ipynb")
    open_notebook(page, base, "benchmark.ipynb")
    run_all(page)
    expect(page.locator(".jp-OutputArea-output[data-mime-type*=error]")).to_have_count(0)
    view = page.locator(".na-bench")
    expect(view.locator(".na-bench-count")).to_have_text("40 / 40")
    expect(view.locator(".na-bench-status")).to_have_text(re.compile(r"^done in \d+\.\d s$"))

    # the view's table (reply_ms), the handoff_ms cell's and the phases': HTML, no wider
    # than their outputs
    tables = page.locator(".na-table")
    expect(tables).to_have_count(3)
    for table in tables.all():
        assert_fits_its_output(table)
    notes = page.locator(".na-table-notes").nth(1)
    expect(notes).to_contain_text("95% CI: the median's bootstrap 95% confidence interval")
    expect(notes).to_contain_text("vs RTT 0: the excess minus the same mode's excess at RTT 0")
    phases = tables.last
    expect(phases.locator("caption")).to_contain_text("handoff phases")
    # every mode's (fresh+empty's in brackets: beside the connect)
    expect(phases.locator('td[data-key="phase"]', has_text="session_update")).to_have_count(4)
    # the distributions once (in the view), the cost vs RTT and the phases as images
    expect(view.locator(".na-bench-plot svg").first).to_be_visible()
    images = page.locator(".jp-OutputArea-output.jp-RenderedImage")
    expect(images).to_have_count(2)
    updates = page.locator(".jp-OutputArea-output").filter(has_text="session_update")
    expect(updates.last).to_contain_text("fresh+copied")

    page.set_viewport_size({"width": 1280, "height": 2400})  # each cell whole, the tallest too
    shown = {
        "view": view,
        "table": tables.nth(1),
        "cost_vs_rtt": images.first,
        "phases": images.last,
        "phase_table": phases,
        "session_update": updates.last,
    }
    assert in_both_themes(page, ".na-bench, .na-table-box", "notebook_02", shown) == []


def test_voice_notebook_shows_the_call_its_speech_and_a_microphone(
    lab: tuple[str, Path], page: Page
) -> None:
    base, root = lab
    shutil.copy(REPO / "notebooks" / "04_voice.ipynb", root / "04_voice.ipynb")
    open_notebook(page, base, "04_voice.ipynb")
    run_all(page)
    timeline = page.locator(".na-timeline")
    expect(timeline.locator(".na-lane-label")).to_have_text(["Concierge", "Billing"])
    expect(timeline.locator('.na-speech[data-speaker="user"]')).to_have_count(2)
    expect(timeline.locator('.na-speech[data-speaker="agent"]').first).to_be_visible()
    # the caller's voice and the agents' recording as players; a microphone closed until a click
    expect(page.locator(".jp-OutputArea-output audio")).to_have_count(2)
    voice = page.locator(".na-voice")
    expect(voice.locator(".na-voice-line-agent")).to_contain_text("Billing")
    expect(voice.locator(".na-voice-button")).to_have_attribute("aria-pressed", "false")
    expect(page.locator(".na-state .na-agent")).to_have_text("Billing")
    screenshot(page, "notebook_04_voice")

    # the first spoken turn's waterfall, its waits listed newest first, and the turns' table
    waterfall = page.locator(".na-waterfall")
    expect(waterfall.locator(".na-wf-title")).to_have_text("turn 1 · spoken · Concierge")
    expect(waterfall.locator(".na-wf-pick option")).to_have_text(
        ["newest", re.compile(r"^Concierge → Billing · "), re.compile(r"^turn 2 · spoken · "),
         re.compile(r"^turn 1 · spoken · Concierge · ")]
    )  # fmt: skip
    rows = waterfall.locator(".na-wf-row:not(.na-wf-headings) .na-wf-name")
    expect(rows.first).to_have_text("wait")
    expect(waterfall).to_contain_text("end_of_turn")
    table = page.locator(".na-table")
    expect(table.locator("caption")).to_have_text("where the wait went")
    expect(table).to_contain_text("end_of_turn")
    assert_fits_its_output(table)  # its notes wrap: every one read without scrolling
    # the same words in a second call with a shorter max_delay, both waits measured
    waits = page.locator(".jp-OutputArea-output").filter(has_text="max_delay 1.0 s: waited")
    expect(waits).to_contain_text("max_delay 2.5 s: waited")
    shown = {"waterfall": waterfall, "phase_table": table, "waits": waits}
    page.set_viewport_size({"width": 1280, "height": 2400})  # each cell whole, the tallest too
    assert in_both_themes(page, ".na-waterfall, .na-table-box", "notebook_04", shown) == []


RACE_CHIPS = [
    ["closing session used"],
    ["hand-back refused"],
    ["Bob's own reply"],
    ["ack timed out"],
    ["handoff kept"],
    ["handoff dropped"],
    ["run completed"],
    ["tool reply cut off", "tool reply never came"],
]
"""each timeline's race marks in notebook 06, in order (its eighth: Gemini's reply race)"""

STRAY_RULES = """els => els.flatMap((legend) => {
    const clip = legend.parentElement.getBoundingClientRect();
    const groups = [...legend.querySelectorAll('.na-key-group')]
        .map((g) => g.getBoundingClientRect());
    // a group's rule is its left border: in sight, it must have a group before it on its line
    return groups.filter((g) => g.left >= clip.left && !groups.some(
        (o) => o !== g && Math.abs(o.top - g.top) < 2 && o.right <= g.left + 1))
        .map((g) => `a rule starts a line at ${g.left},${g.top}`);
})"""
"""the legends' rules that start a line of their own (what the new user saw before
'bring-up')"""


def test_race_notebook_marks_each_race_on_its_timeline(lab: tuple[str, Path], page: Page) -> None:
    """Notebook 06 as the new user ran it (a timeline ~970 px wide): each run's timeline has
    a chip naming where its race showed (or what shows a fixed one did not) over a dashed line
    through the lane, in the theme's error or success colour, light and dark; no chip covers
    another; no legend line starts with a stray rule."""
    base, root = lab
    page.set_viewport_size({"width": 1100, "height": 900})
    shutil.copy(REPO / "notebooks" / "06_handoff_races.ipynb", root / "races.ipynb")
    open_notebook(page, base, "races.ipynb")
    run_all(page)
    expect(page.locator(".jp-OutputArea-output[data-mime-type*=error]")).to_have_count(0)
    timelines = page.locator(".na-timeline")
    expect(timelines).to_have_count(8, timeout=120_000)
    for i, chips in enumerate(RACE_CHIPS):
        timeline = timelines.nth(i)
        timeline.scroll_into_view_if_needed()
        expect(timeline.locator(".na-race-label")).to_have_text(chips)
        chip_boxes = boxes(timeline.locator(".na-race-chip, .na-handoff-chip"))
        for j, a in enumerate(chip_boxes):
            for b in chip_boxes[j + 1 :]:
                assert not overlap(a, b), f"timeline {i}: chips {a} and {b} overlap"
    # the refused hand-back between the handoff into the Survey and the task's end
    handback = timelines.nth(1)
    arrows = [(a[0] + a[2]) / 2 for a in boxes(handback.locator(".na-handoff-arrow"))]
    refused = box(handback.locator(".na-race-line"))
    assert arrows[0] < refused[0] < arrows[1], (arrows, refused)
    assert handback.locator(".na-race").get_attribute("aria-label") == "race: hand-back refused"

    colours = {}
    try:
        for theme, color0, name in THEMES:
            set_theme(page, theme, color0)
            next_frame(page)
            error, success = page.evaluate(
                "() => ['--jp-error-color1', '--jp-success-color1'].map((v) => "
                "getComputedStyle(document.body).getPropertyValue(v).trim())"
            )
            race = timelines.nth(1).locator(".na-race-line")
            fixed = timelines.nth(4).locator(".na-race-line")
            colours[name] = (stroke_of(race), stroke_of(fixed))
            assert colours[name] == (rgb(page, error), rgb(page, success)), name
            assert page.locator(".na-legend").evaluate_all(STRAY_RULES) == [], name
    finally:
        set_theme(page, "JupyterLab Light", "white")
    assert colours["light"] != colours["dark"], "the marks do not follow the theme"
    shown = {f"na-timeline_{i}": timelines.nth(i) for i in range(8)}
    assert in_both_themes(page, ".na-timeline", "06_handoff_races", shown) == []


def stroke_of(locator: Locator) -> str:
    stroke: str = locator.evaluate("el => getComputedStyle(el).stroke")
    return stroke


def rgb(page: Page, color: str) -> str:
    """``color`` as the browser computes it (``rgb(...)``)."""
    computed: str = page.evaluate(
        "c => { const e = document.createElement('i'); e.style.color = c; document.body.append(e);"
        " const r = getComputedStyle(e).color; e.remove(); return r; }",
        color,
    )
    return computed
