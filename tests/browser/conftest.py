"""Real-browser fixtures: Debian's chromium driven by Playwright, JupyterLab on 127.0.0.1.

Playwright never downloads a browser here: it launches the system ``chromium``. The fixtures
live in this conftest only (two ``sync_playwright()`` at once would collide).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

REPO = Path(__file__).resolve().parents[2]
TOKEN = "browser-test-token"
ARTIFACTS = Path(os.environ.get("BROWSER_ARTIFACTS", REPO / "test-artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail(
            "the browser tests need Debian's chromium: `sudo apt-get install chromium` "
            "(`make test` installs it when run as root)"
        )
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # module scope: Playwright's sync API runs its own event loop on this thread while open,
    # which would break every async test collected after the browser tests
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; any page error or console error fails the test that used it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console error: {message.text}")

    opened.on("console", on_console)
    yield opened
    context.close()
    assert errors == [], "the browser reported errors"


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """JupyterLab on 127.0.0.1 (a free port) over a temporary root; yields (base URL, root)."""
    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("jupyter-home")
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    # the "get notified about Jupyter news?" toast can cover what the test clicks
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONPATH=str(REPO),
    )
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "OPENAI_API_KEY"):
        env.pop(name, None)
    log_path = home / "lab.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0",
                f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root,
        )  # fmt: skip
        try:
            yield (
                _wait_for_lab(server, home / "runtime" / f"jpserver-{server.pid}.json", log_path),
                root,
            )
        finally:
            server.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()


def _wait_for_lab(server: subprocess.Popen[bytes], info: Path, log: Path) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail("jupyter lab exited:\n" + log.read_text())
        if info.exists():
            try:
                base = f"http://127.0.0.1:{json.loads(info.read_text())['port']}"
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                return base
            except (ValueError, KeyError, OSError):
                pass
        time.sleep(0.1)  # polling a server that gives no readiness event; bounded above
    pytest.fail("jupyter lab did not answer within 90 s:\n" + log.read_text())


def open_notebook(page: Page, base: str, name: str) -> None:
    """Open a notebook and wait until its kernel is connected."""
    page.goto(f"{base}/lab/tree/{name}?token={TOKEN}")
    page.wait_for_function(
        """() => {
            const nb = window.jupyterapp && jupyterapp.shell.currentWidget;
            const kernel = nb && nb.sessionContext && nb.sessionContext.session
                && nb.sessionContext.session.kernel;
            return kernel && kernel.connectionStatus === 'connected';
        }""",
        timeout=90_000,
    )


def run_all(page: Page) -> None:
    page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")


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


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
