"""`make lab` on a fresh clone, as a new user runs it: how long until the first notebook shows?

Clones this repository's HEAD into a temporary folder, with empty pip and uv caches (a fresh
machine has none), runs `make lab` there and times, from the command's start:

- `.venv` set up (its `.installed` marker written),
- JupyterLab answering (the URL it prints),
- notebook 01 shown in headless chromium with its kernel connected,
- notebook 01's first code cell run (the kernel's first import of the package),
- `.venv-videosdk` built beside the lab (notebook 07's kernel).

Then it ends what it started: `make lab`'s process group, the VideoSDK build beside it included.

    .venv/bin/python benchmarks/make_lab.py
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.browser.lab import launch_chromium

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "01_prototype.ipynb"
WAIT_MS = 300_000
LAB_URL = re.compile(rb"(http://127\.0\.0\.1:\d+/lab\?token=[0-9a-f]+)")


def lab_url(make: subprocess.Popen[bytes], log: Path, started: float, timeout: float) -> str:
    """The URL with its token that JupyterLab prints once it answers."""
    while time.perf_counter() - started < timeout:
        found = LAB_URL.search(log.read_bytes())
        if found:
            return found.group(1).decode()
        if make.poll() is not None:
            raise SystemExit(f"make lab ended ({make.returncode}) first:\n{log.read_text()}")
        time.sleep(0.2)  # polling a file another process writes
    raise SystemExit(f"no JupyterLab URL after {timeout:.0f} s:\n{log.read_text()}")


def first_notebook(url: str) -> tuple[float, float]:
    """Open the first notebook; the times its kernel connected and its first code cell ran."""
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.goto(url.replace("/lab?", f"/lab/tree/{NOTEBOOK}?reset&"))
        page.wait_for_function(
            """(name) => {
                const nb = window.jupyterapp && jupyterapp.shell.currentWidget;
                const kernel = nb && nb.context && nb.context.path === name
                    && nb.sessionContext && nb.sessionContext.session
                    && nb.sessionContext.session.kernel;
                return kernel && kernel.connectionStatus === 'connected';
            }""",
            arg=NOTEBOOK,
            timeout=WAIT_MS,
        )
        shown = time.perf_counter()
        page.evaluate(
            """async () => {
                const notebook = jupyterapp.shell.currentWidget.content;
                notebook.activeCellIndex = notebook.widgets.findIndex(
                    (cell) => cell.model.type === 'code');
                await jupyterapp.commands.execute('notebook:run-cell');
            }"""
        )
        page.wait_for_function(
            """() => {
                const notebook = jupyterapp.shell.currentWidget.content;
                const cell = notebook.widgets.find((cell) => cell.model.type === 'code');
                return cell.model.executionCount !== null;
            }""",
            timeout=WAIT_MS,
        )
        ran = time.perf_counter()
        browser.close()
    return shown, ran


def lab_config(scratch: Path) -> Path:
    folder = scratch / "jupyter-config"
    folder.mkdir()
    (folder / "jupyter_server_config.json").write_text(
        json.dumps({"LabApp": {"expose_app_in_browser": True}})
    )
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=900, help="seconds (default 900)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="make-lab-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        env = {
            **os.environ,
            "XDG_CACHE_HOME": str(Path(scratch) / "cache"),  # uv's and pip's: empty
            "PIP_NO_CACHE_DIR": "1",
            "BROWSER": "true",  # JupyterLab opens no browser of its own
            # one setting added to make lab's (none of its own changed): the page can then ask
            # JupyterLab itself whether the notebook's kernel is connected and its cell ran
            "JUPYTER_CONFIG_PATH": str(lab_config(Path(scratch))),
        }
        env.pop("VIRTUAL_ENV", None)
        log = Path(scratch) / "make-lab.log"
        started, wall_started = time.perf_counter(), time.time()
        with log.open("wb") as out:
            make = subprocess.Popen(
                ["make", "lab"],
                cwd=clone,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its group: the lab and the build beside it
            )
        try:
            url = lab_url(make, log, started, args.timeout)
            answering = time.perf_counter()
            venv_s = (clone / ".venv" / ".installed").stat().st_mtime - wall_started
            shown, ran = first_notebook(url)
            videosdk = clone / ".venv-videosdk" / ".installed"
            while not videosdk.exists() and time.perf_counter() - started < args.timeout:
                time.sleep(0.5)  # polling for a file the build beside the lab writes last
            videosdk_s = videosdk.stat().st_mtime - wall_started if videosdk.exists() else None
        finally:
            os.killpg(make.pid, signal.SIGTERM)
            make.wait(30)
    load = os.getloadavg()[0]
    print(f".venv set up:          {venv_s:6.1f} s")
    print(f"JupyterLab answering:  {answering - started:6.1f} s")
    print(f"{NOTEBOOK} shown:  {shown - started:6.1f} s (kernel connected)")
    print(f"first code cell ran:   {ran - started:6.1f} s")
    built = f"{videosdk_s:6.1f} s" if videosdk_s is not None else "not within --timeout"
    print(f".venv-videosdk built:  {built} (beside the lab)")
    print(f"load average (1 min) at the end: {load:.2f}")


if __name__ == "__main__":
    main()
