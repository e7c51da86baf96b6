"""SuiteView in JupyterLab in headless chromium: a scenarios file with a passing, a failing and
a not-runnable scenario gives the right table (outcome, first failing expectation, time), a
click shows that scenario's timeline, it reads in both themes, and pytest gives the same
verdicts from the same file; a suite of repeated scenarios shows how each one's runs did, the
flaky one marked."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.suites.test_suites import GREETER_CONFTEST, GREETER_SUITE, outcomes_under_pytest

from .conftest import run_cell, run_notebook
from .themes import in_both_themes

CELLS = [
    """from livekit.plugins import openai
from notebook_agents import Emulator, run_suite
from tests.upstream.greeter_weather import make_server

emulator = Emulator().start()


def make():
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key="offline", modalities=["text"]
    )
    return make_server(model)""",
    f"""suite = await run_suite({str(GREETER_SUITE)!r}, make)
suite""",
]

PYTEST_VERDICT = {"passed": "passed", "failed": "failed", "not runnable": "skipped"}
"""how pytest reports each outcome: a scenario that cannot run is skipped, never passed"""


def test_suite_table_in_lab_and_the_same_verdicts_under_pytest(
    lab: tuple[str, Path], page: Page, tmp_path: Path
) -> None:
    run_notebook(page, lab, "suite_view.ipynb", CELLS)

    rows = page.locator(".na-suite tbody tr")
    expect(rows).to_have_count(3, timeout=60_000)
    expect(page.locator(".na-suite-summary")).to_have_text(
        "Greeter and weather: 1 passed, 1 failed, 1 not runnable"
    )
    expect(rows.locator(".na-suite-label")).to_have_text(
        ["hands off to weather", "greeter looks up the weather", "caller asks about the weather"]
    )
    expect(rows.locator(".na-suite-outcome")).to_have_text(["passed", "failed", "not runnable"])
    failed = rows.nth(1).locator(".na-suite-why")
    expect(failed.locator("code")).to_have_text('contains_function_call(name="lookup_weather")')
    expect(failed.locator(".na-suite-message")).to_have_text(
        "No FunctionCallEvent satisfying criteria found in range slice(None, None, None)"
    )
    expect(rows.nth(2).locator(".na-suite-message")).to_contain_text("simulated user")
    for seconds in rows.locator(".na-suite-seconds").all():
        expect(seconds).to_have_text(re.compile(r"^\d+\.\d\d s$"))

    # one click away: the scenario's own timeline, the handoff on it
    expect(page.locator(".na-timeline")).to_have_count(0)
    rows.nth(0).click()
    expect(rows.nth(0)).to_have_class(re.compile("na-selected"))
    expect(page.locator(".na-timeline")).to_have_count(1, timeout=30_000)
    expect(page.locator(".na-timeline")).to_contain_text("WeatherAgent")
    assert in_both_themes(page, ".na-suite", "suite_view") == []

    shown = dict(
        zip(
            rows.locator(".na-suite-label").all_inner_texts(),
            rows.locator(".na-suite-outcome").all_inner_texts(),
            strict=True,
        )
    )
    (tmp_path / "conftest.py").write_text(GREETER_CONFTEST)
    under_pytest = outcomes_under_pytest(tmp_path, GREETER_SUITE)
    assert under_pytest == {label: PYTEST_VERDICT[outcome] for label, outcome in shown.items()}
    run_cell(page, "emulator.stop()")


REPEATED_CELLS = [
    """import tempfile
from pathlib import Path
from notebook_agents import Emulator, run_suite
from tests.suites.test_repeat import FRONT_DESK, front_desk_server

emulator = Emulator().start()
path = Path(tempfile.mkdtemp()) / "scenarios.yaml"
path.write_text(FRONT_DESK)""",
    """suite = await run_suite(path, lambda: front_desk_server(emulator, []), concurrency=2)
suite""",
]


def test_repeated_scenarios_show_their_runs_and_the_flaky_one(
    lab: tuple[str, Path], page: Page
) -> None:
    run_notebook(page, lab, "suite_view_repeated.ipynb", REPEATED_CELLS)

    rows = page.locator(".na-suite tbody tr")
    expect(rows).to_have_count(3, timeout=60_000)
    expect(page.locator(".na-suite-summary")).to_have_text(
        "Front desk: 1 passed, 1 failed, 1 error (1 flaky)"
    )
    expect(page.locator(".na-suite thead th")).to_have_text(
        ["scenario", "outcome", "runs", "first failing expectation", "time"]
    )
    runs = rows.locator(".na-suite-runs")
    expect(runs).to_have_text(["3/3 passed", "4/5 passed · flaky", "0/2 passed"])
    expect(runs.nth(1)).to_have_class(re.compile("na-flaky"))
    expect(runs.nth(2)).not_to_have_class(re.compile("na-flaky"))
    expect(rows.locator(".na-suite-outcome")).to_have_text(["passed", "error", "failed"])
    assert in_both_themes(page, ".na-suite", "suite_view_repeated") == []
    run_cell(page, "emulator.stop()")
