"""JupyterLab on 127.0.0.1 and Debian's chromium, for the browser tests and the browser
benchmarks: start them, open and run notebooks, take screenshots."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import Browser, Page, Playwright

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


class LabError(RuntimeError):
    """JupyterLab or chromium could not be started; the message says why."""


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise LabError(
            "the browser tests need Debian's chromium: `sudo apt-get install chromium` "
            "(`make test` installs it when run as root)"
        )
    return path


def launch_chromium(playwright: Playwright, *extra_args: str) -> Browser:
    """The system chromium, headless: Playwright never downloads a browser here."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=[*CHROMIUM_ARGS, *extra_args]
    )


@contextlib.contextmanager
def jupyter_lab(root: Path, home: Path) -> Iterator[str]:
    """JupyterLab on 127.0.0.1 (a free port) serving ``root``; yields its base URL."""
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
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
            yield _wait_for_lab(server, home / "runtime" / f"jpserver-{server.pid}.json", log_path)
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
            raise LabError("jupyter lab exited:\n" + log.read_text())
        if info.exists():
            try:
                base = f"http://127.0.0.1:{json.loads(info.read_text())['port']}"
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                return base
            except (ValueError, KeyError, OSError):
                pass
        time.sleep(0.1)  # polling a server that gives no readiness event; bounded above
    raise LabError("jupyter lab did not answer within 90 s:\n" + log.read_text())


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A notebook of code ``cells`` (no outputs), with the python3 kernel."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
             "outputs": [], "source": source}
            for i, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path.write_text(json.dumps(notebook))
    return path


def open_notebook(page: Page, base: str, name: str) -> None:
    """Open a notebook and wait until its kernel is connected."""
    # ?reset: a fresh workspace, else the notebooks of earlier tests reopen beside this one
    page.goto(f"{base}/lab/tree/{name}?reset&token={TOKEN}")
    page.wait_for_function(
        """(name) => {
            const nb = window.jupyterapp && jupyterapp.shell.currentWidget;
            const kernel = nb && nb.context && nb.context.path === name && nb.sessionContext
                && nb.sessionContext.session && nb.sessionContext.session.kernel;
            return kernel && kernel.connectionStatus === 'connected';
        }""",
        arg=name,
        timeout=90_000,
    )
