"""BenchmarkView in JupyterLab in headless chromium: displayed, then live while a cell awaits
``view.run()`` against the emulator: the progress counts up, the table and the plot fill in."""

from __future__ import annotations

import re
from pathlib import Path

from matplotlib.colors import to_rgb
from playwright.sync_api import Locator, Page, expect

from notebook_agents.modes import MODE_COLORS, REALTIME_MODES, mode_label

from .conftest import open_notebook, run_cell, run_notebook, screenshot, write_notebook
from .themes import in_both_themes

TRIALS = 12  # 4 modes x 3 trials at one RTT: a few seconds, long enough to watch it count
CELLS = [
    """from notebook_agents.bench import BenchmarkConfig
from notebook_agents.views import BenchmarkView

config = BenchmarkConfig(levels=["agent"], rtts_ms=[50], history_turns=[2], trials=3, warmup=0)
view = BenchmarkView(config)
view""",
    "result = await view.run()",
    'print(f"{len(result.trials)} trials, {len(result.failed_trials())} failed")',
]
FAILING = """failing = BenchmarkView(BenchmarkConfig(levels=["session"], trials=1, warmup=0,
                                       target="http://127.0.0.1:9/v1"))
failing"""

# Every text the progress counter shows, recorded in the page: the kernel's updates arrive
# faster than a test could poll for each of them.
RECORD_COUNTS = """() => {
    window.benchCounts = [];
    new MutationObserver(() => {
        const count = document.querySelector('.na-bench-count');
        const counts = window.benchCounts;
        if (count && counts[counts.length - 1] !== count.textContent) {
            counts.push(count.textContent);
        }
    }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_benchmark_view_follows_a_run(lab: tuple[str, Path], page: Page) -> None:
    base, root = lab
    write_notebook(root / "benchmark_view.ipynb", CELLS)
    open_notebook(page, base, "benchmark_view.ipynb")
    page.evaluate(RECORD_COUNTS)
    # not awaited (unlike conftest's run_all): the test watches the view while the cells run
    page.evaluate("() => { jupyterapp.commands.execute('notebook:run-all-cells'); }")

    count = page.locator(".na-bench .na-bench-count")
    # polled every animation frame, and half the trials (over a second) still to go: the
    # checks below see the run in progress
    page.wait_for_function(
        """(total) => {
            const match = /^(\\d+) \\/ (\\d+)$/.exec(
                document.querySelector('.na-bench-count')?.textContent ?? '');
            return match && +match[1] > 0 && +match[1] <= total / 2 && +match[2] === total;
        }""",
        arg=TRIALS,
        timeout=90_000,
    )
    expect(page.locator(".na-bench-status")).to_have_text("running…")
    # the first trial is drawn at once; the plot lives in a shadow root, which Playwright's CSS
    # locators reach into
    expect(page.locator(".na-bench-plot svg").first).to_be_visible()
    screenshot(page, "benchmark_view_running")

    expect(count).to_have_text(f"{TRIALS} / {TRIALS}", timeout=90_000)
    expect(page.get_by_text(f"{TRIALS} trials, 0 failed")).to_be_visible(timeout=30_000)
    # before: the status went blank at the end, never saying the run was done
    expect(page.locator(".na-bench-status")).to_have_text(re.compile(r"^done in \d+\.\d s$"))
    expect(page.locator(".na-bench-failed")).to_have_text("")
    expect(page.locator(".na-bench-error")).to_be_hidden()

    counts: list[str] = page.evaluate("() => window.benchCounts")
    done = [int(text.split(" / ")[0]) for text in counts]
    assert done == sorted(done) and done[-1] == TRIALS
    assert any(0 < d < TRIALS for d in done), f"no progress seen between 0 and the end: {counts}"

    rows = page.locator(".na-bench-table tbody tr")
    expect(rows).to_have_count(4)  # one per mode
    modes = page.locator(".na-bench-table td[data-key=mode]").all_text_contents()
    assert sorted(modes) == sorted(mode_label(s, c) for s, c in REALTIME_MODES)
    number = re.compile(r"^\d+\.\d$")
    for key in ("median", "p95", "truth_ms"):
        cells = page.locator(f".na-bench-table td[data-key={key}]").all_text_contents()
        assert len(cells) == 4 and all(number.match(c) for c in cells), (key, cells)
    assert page.locator(".na-bench-table td[data-key=n]").all_text_contents() == ["3"] * 4
    # each mode's row is marked in its colour, the plot's
    for cell in page.locator(".na-bench-table td[data-key=mode]").all():
        marked = cell.evaluate("td => getComputedStyle(td).borderLeftColor")
        red, green, blue = (round(255 * c) for c in to_rgb(MODE_COLORS[cell.inner_text()]))
        assert marked == f"rgb({red}, {green}, {blue})"
    assert_fits_its_output(page.locator(".na-bench-table table"))

    expect(page.locator(".na-bench-plot svg").first).to_be_visible()
    screenshot(page, "benchmark_view_done")

    # a run that fails (a foreign target, no key: refused before any connection) says why
    run_cell(page, FAILING)
    failing = page.locator(".na-bench").nth(1)
    expect(failing.locator(".na-bench-count")).to_have_text("0 / 4")
    expect(failing.locator(".na-bench-status")).to_have_text("not started: await view.run()")
    expect(failing.locator(".na-bench-error")).to_be_hidden()
    run_cell(page, "await failing.run()")
    expect(failing.locator(".na-bench-error")).to_have_text(
        re.compile(r"^BenchmarkConfigError: .*API key")
    )
    expect(failing.locator(".na-bench-status")).to_have_text("")
    failing.scroll_into_view_if_needed()
    screenshot(page, "benchmark_view_error")


def assert_fits_its_output(table: Locator) -> None:
    """The table is no wider than the output area it is in: nothing hidden, no scrolling."""
    width, room = table.evaluate(
        "t => [t.getBoundingClientRect().width,"
        " t.closest('.jp-OutputArea-output').getBoundingClientRect().width]"
    )
    assert 0 < width <= room, f"a table {width:.0f} px wide in an output {room:.0f} px wide"


ASKED_CELLS = [
    """from notebook_agents.bench import BenchmarkConfig, BenchmarkResult, Trial
from notebook_agents.views import BenchmarkView

REASON = ("the model cannot change a live session's tools (capabilities.mutable_tools is "
          "False) and B's tools are not A's tool objects")
modes = [("reused", "copied"), ("reused", "empty"), ("fresh", "copied"), ("fresh", "empty")]
trials = [
    Trial("agent", session if provider == "openai" else "fresh", context, rtt, 2, i,
          provider=provider, reply_ms=40.0 + rtt + i, handoff_ms=20.0 + rtt + i,
          truth_reply_ms=rtt, truth_handoff_ms=rtt, asked_session=session,
          asked_context=context,
          reason=REASON if provider == "gemini" and session == "reused" else None)
    for rtt in (0.0, 20.0) for provider in ("gemini", "openai") for session, context in modes
    for i in range(3)
]
BenchmarkView(BenchmarkResult(config=BenchmarkConfig(), trials=trials))""",
]


def test_a_reason_is_a_note_under_a_table_that_fits(lab: tuple[str, Path], page: Page) -> None:
    """The asked column held each reason in full: 'vs RTT 0' and 'failed' went behind a
    horizontal scroll. Now the cell points at a note said once under the table."""
    run_notebook(page, lab, "benchmark_asked.ipynb", ASKED_CELLS)
    table = page.locator(".na-bench-table table")
    expect(table).to_be_visible(timeout=60_000)
    asked = page.locator(".na-bench-table td[data-key=asked]").all_text_contents()
    assert "reused+copied ×3 [1]" in asked and "reused+empty ×3 [1]" in asked
    notes = page.locator(".na-bench-table .na-table-notes")
    expect(notes).to_contain_text("[1] the model cannot change a live session's tools")
    assert notes.inner_text().count("mutable_tools") == 1
    table.scroll_into_view_if_needed()
    for key in ("latency_error_ms", "failed"):  # before: behind a horizontal scroll
        expect(page.locator(f".na-bench-table th[data-key={key}]")).to_be_in_viewport()
    assert_fits_its_output(table)
    assert in_both_themes(page, ".na-bench", "benchmark_view_asked") == []
