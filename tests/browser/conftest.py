"""Real-browser fixtures: Debian's chromium driven by Playwright, JupyterLab on 127.0.0.1.

Playwright never downloads a browser here: it launches the system ``chromium``. The fixtures
live in this conftest only (two ``sync_playwright()`` at once would collide); the machinery is
in ``lab.py``, shared with the browser benchmarks.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Locator, Page, expect, sync_playwright

from .lab import ARTIFACTS, LabError, jupyter_lab, launch_chromium, open_notebook, write_notebook

__all__ = [
    "center",
    "hover_until",
    "open_notebook",
    "run_all",
    "run_cell",
    "run_notebook",
    "screenshot",
    "slowed",
    "write_notebook",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # module scope: Playwright's sync API runs its own event loop on this thread while open,
    # which would break every async test collected after the browser tests
    with sync_playwright() as playwright:
        try:
            launched = launch_chromium(playwright)
        except LabError as e:
            pytest.fail(str(e))
        yield launched
        launched.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh page; any page error or console error fails the test that used it. A failed
    test leaves a screenshot of the page as it was, in the artifacts."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console error: {message.text}")

    opened.on("console", on_console)
    yield opened
    if request.node.stash.get(_FAILED, False):
        screenshot(opened, f"failed-{request.node.name}")
    context.close()
    assert errors == [], "the browser reported errors"


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """JupyterLab on 127.0.0.1 (a free port) over a temporary root; yields (base URL, root)."""
    root = tmp_path_factory.mktemp("lab-root")
    try:
        with jupyter_lab(root, tmp_path_factory.mktemp("jupyter-home")) as base:
            yield base, root
    except LabError as e:
        pytest.fail(str(e))


def run_all(page: Page) -> None:
    """Run every cell as the Run All menu does; returns once the run is over.

    Not on the command's promise alone: in CI it once never resolved although every cell of
    notebook 01 had run. The run is also over when the kernel is idle and every code cell has
    run, or one failed (Run All stops there).
    """
    page.evaluate(
        """() => new Promise((resolve) => {
            const panel = jupyterapp.shell.currentWidget;
            const code = () => panel.content.widgets.filter((c) => c.model.type === 'code');
            const failed = (cell) => cell.model.outputs.toJSON().some(
                (output) => output.output_type === 'error');
            const over = () => panel.sessionContext.session.kernel.status === 'idle' && (
                code().some(failed) || code().every((c) => c.model.executionCount !== null));
            const timer = setInterval(() => over() && finish(), 100);
            const finish = () => { clearInterval(timer); resolve(); };
            jupyterapp.commands.execute('notebook:run-all-cells').then(finish, finish);
        })"""
    )


def run_notebook(page: Page, lab: tuple[str, Path], name: str, cells: list[str]) -> None:
    """Write a notebook of ``cells`` into the lab, open it and run all its cells."""
    base, root = lab
    write_notebook(root / name, cells)
    open_notebook(page, base, name)
    run_all(page)


def run_cell(page: Page, code: str) -> None:
    """Append a cell with ``code`` and run it; returns once the kernel replied."""
    page.evaluate(
        """async (code) => {
            const app = window.jupyterapp;
            const panel = app.shell.currentWidget;
            await panel.sessionContext.ready;
            panel.content.activeCellIndex = panel.content.widgets.length - 1;
            await app.commands.execute('notebook:insert-cell-below');
            panel.content.activeCell.model.sharedModel.setSource(code);
            return await app.commands.execute('notebook:run-cell');
        }""",
        code,
    )


CENTER = """els => els.slice(0, 1).map(el => {
    el.scrollIntoView({ block: "nearest", inline: "nearest", behavior: "instant" });
    const r = el.getBoundingClientRect();
    return [r.x + r.width / 2, r.y + r.height / 2];
})"""


def center(locator: Locator, timeout_s: float = 30.0) -> tuple[float, float]:
    """The center in the window of the first element ``locator`` finds, scrolled into view,
    found and measured in one step (one script): a live view redraws its marks every 250 ms,
    and an element found in one round trip can be detached, measuring as nothing, by the
    next. Waits while there is none."""
    deadline = time.monotonic() + timeout_s
    while not (found := locator.evaluate_all(CENTER)):
        remaining_ms = (deadline - time.monotonic()) * 1000
        if remaining_ms <= 0:
            raise AssertionError(f"nothing drawn for {locator} in {timeout_s:.0f} s")
        locator.first.wait_for(state="attached", timeout=remaining_ms)
    x, y = found[0]
    return float(x), float(y)


def hover_until(
    page: Page, target: Locator, tooltip: Locator, text: str, timeout_s: float = 30.0
) -> None:
    """Hover ``target`` until ``tooltip`` says ``text``. A live view draws its elements anew
    as it redraws (a timeline every 250 ms while following the clock, and at each event), so
    Playwright's ``hover()`` can find each one it resolves detached by the time it acts (it
    did for 30 s on a loaded machine). Here each try finds the element where it is drawn then
    (``center``), moves the pointer there and waits for the hover box; a view redrawn under
    the pointer meanwhile only means another try."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.mouse.move(*center(target, timeout_s))
        try:
            expect(tooltip).to_contain_text(text, timeout=2_000)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


@contextlib.contextmanager
def slowed(page: Page, rate: float) -> Iterator[None]:
    """The page's CPU ``rate`` times slower inside (chromium's throttling, as a loaded
    machine's), as fast as it can be again after."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
    try:
        yield
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        cdp.detach()


def next_frame(page: Page) -> None:
    """Return once the page has drawn its next frame (any redraw already asked for is done)."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
