"""The Chrome export of a real call opens in speedscope, offline: the npm package's own build
(`make viewers` installs the version tests/browser/viewers/package-lock.json pins) in Debian's
chromium, the file chosen as a user chooses it. speedscope picks its importer by the file's
name before its content: ``call.chrome.json`` was read as another format ("Failed to load
format TypeError: t.sort is not a function").

Perfetto's UI (ui.perfetto.dev) is a web page with no offline package, and Debian's chromium
turns chrome://tracing off (an internal debugging page): neither is opened here."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from notebook_agents import NotebookRunner
from notebook_agents.__main__ import main
from notebook_agents.emulator import Emulator
from tests.trace.test_trace_spans import finished, handoff_server

from .lab import REPO

SPEEDSCOPE = REPO / "tests" / "browser" / "viewers" / "node_modules" / "speedscope"


@pytest.fixture(scope="module")
def handed_over(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real call saved once it ended: the Concierge hands over to Billing on the emulator
    (both agents' states, livekit's spans). Made on a thread of its own: Playwright's sync API
    holds this thread's event loop."""
    saved = tmp_path_factory.mktemp("call") / "call.jsonl"

    async def call() -> None:
        runners: list[NotebookRunner] = []
        with Emulator() as emulator:
            try:
                trace = await finished(runners, handoff_server(emulator), "transfer to billing")
            finally:
                for runner in runners:
                    runner.stop()
            trace.save(saved)

    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(call())
        except BaseException as e:
            failed.append(e)

    maker = threading.Thread(target=run)
    maker.start()
    maker.join(timeout=120)
    assert not maker.is_alive() and not failed, failed
    return saved


def opened_in_speedscope(page: Page, profile: Path) -> list[str]:
    """``profile`` chosen with speedscope's file picker; returns what speedscope logged."""
    index = SPEEDSCOPE / "dist" / "release" / "index.html"
    if not index.exists():
        pytest.fail(f"speedscope is not installed in {SPEEDSCOPE.parent}: run `make viewers`")
    logged: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        logged.append(message.text)

    page.on("console", on_console)
    page.goto(index.as_uri())
    page.set_input_files("input[type=file]", profile)
    return logged


def sliced_lanes(exported: Path) -> set[str]:
    """The names of the export's lanes that hold slices (speedscope draws slices, ``X``)."""
    events = json.loads(exported.read_text(encoding="utf-8"))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    return {names[e["tid"]] for e in events if e["ph"] == "X"}


def test_the_chrome_export_of_a_call_opens_in_speedscope_as_a_profile_per_lane(
    handed_over: Path, page: Page
) -> None:
    assert main(["export", str(handed_over), "--format", "chrome"]) == 0
    (exported,) = handed_over.parent.glob("call.*.json")
    lanes = sliced_lanes(exported)
    assert {
        "agent: Concierge",
        "livekit 1",
    } <= lanes  # the call may end before Billing changes state
    logged = opened_in_speedscope(page, exported)
    # the first lane's profile shown, and how many there are
    title = page.get_by_text(f"notebook-agents (pid 1), agent: Concierge (tid 1) (1/{len(lanes)})")
    expect(title).to_be_visible()
    assert "Importing as Trace Event Format profile" in logged
    expect(page.get_by_text("Something went wrong")).to_have_count(0)
    title.click()  # the list of profiles: one per lane
    profiles = page.get_by_text(re.compile(r"^notebook-agents \(pid 1\), .+ \(tid \d+\)$"))
    expect(profiles).to_have_count(len(lanes))
    shown = [
        re.sub(r"^notebook-agents \(pid 1\), | \(tid \d+\)$", "", text)
        for text in profiles.all_inner_texts()
    ]
    assert set(shown) == lanes
