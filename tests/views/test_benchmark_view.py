"""BenchmarkView, Python side: a finished result, a live run against the emulator, the rate limits
on its updates, a failing, an interrupted and a doubled run, and the static figure."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets
from matplotlib.figure import Figure

from notebook_agents.bench import BenchmarkConfig, BenchmarkResult, Trial
from notebook_agents.bench.stats import summary_table
from notebook_agents.modes import REALTIME_MODES
from notebook_agents.views._assets import widgets_dir
from notebook_agents.views.benchmark_view import BenchmarkView

# one trial of the smallest grid: a bare realtime session, one mode, no history
ONE_TRIAL = BenchmarkConfig(
    levels=["session"],
    rtts_ms=[0.0],
    history_turns=[0],
    trials=1,
    warmup=0,
    modes=["reused+copied"],
)


def synthetic(rtts: list[float], trials: int, failed: int = 0) -> BenchmarkResult:
    """A result with made-up timings (fixed seed), its first ``failed`` trials failed."""
    config = BenchmarkConfig(levels=["agent"], rtts_ms=rtts, history_turns=[10], trials=trials)
    rng = np.random.default_rng(7)
    result = BenchmarkResult(config=config, started="2026-04-01T12:00:00+00:00")
    for rtt in rtts:
        for index in range(trials):
            for session, context in REALTIME_MODES:
                reply = float(rng.uniform(5, 50)) + 3 * rtt
                trial = Trial("agent", session, context, rtt, 10, index, reply_ms=reply)
                trial.handoff_ms, trial.truth_reply_ms = reply / 2, 3 * rtt
                result.trials.append(trial)
    for trial in result.trials[:failed]:
        trial.ok, trial.error, trial.reply_ms, trial.handoff_ms = False, "boom", None, None
    return result


def table(result: BenchmarkResult, timing: str = "reply_ms") -> str:
    """The summary table as a notebook cell would show it."""
    return summary_table(result, timing)._repr_html_()


def changes(view: BenchmarkView, name: str) -> list[Any]:
    """Every new value ``name`` takes from now on."""
    seen: list[Any] = []
    view.observe(lambda change: seen.append(change["new"]), names=[name])
    return seen


def test_a_result_is_shown_complete(tmp_path: Path) -> None:
    result = synthetic([0.0, 20.0], trials=3, failed=1)
    view = BenchmarkView(result)
    assert (view.done, view.total, view.failed, view.running) == (24, 24, 1, False)
    assert re.fullmatch(r"openai agent \S+\+\S+ rtt 20 #2: \d+\.\d ms", view.last_trial)
    assert view.table_html == table(result) and view.table_html.count("<tr>") == 1 + 8
    assert view.plot_svg.startswith("<svg") and view.plot_svg.rstrip().endswith("</svg>")
    assert view.error == "" and view.status == "done"
    # a saved result shows the same, and how long its run took
    result.duration_s = 12.34
    loaded = BenchmarkResult.load_json(result.save_json(tmp_path / "results.json"))
    shown = BenchmarkView(loaded)
    assert shown.table_html == view.table_html and shown.status == "done in 12.3 s"


def test_the_plot_follows_the_theme() -> None:
    """Its ink is JupyterLab's font colour and it paints no background: in the dark theme it
    was a white box (the data keep the bench's palette, which reads on both)."""
    svg = BenchmarkView(synthetic([0.0, 20.0], trials=5)).plot_svg
    assert "var(--jp-ui-font-color1" in svg
    assert not re.search(r"(fill|stroke):\s*(#000000|#ffffff)", svg)


def test_the_timing_can_be_switched() -> None:
    result = synthetic([0.0], trials=2)
    view = BenchmarkView(result, timing="handoff_ms")
    assert view.table_html == table(result, "handoff_ms")
    plot = view.plot_svg
    view.timing = "reply_ms"
    assert view.table_html == table(result, "reply_ms") and view.plot_svg != plot
    assert view.last_trial.endswith(f"{result.trials[-1].reply_ms:.1f} ms")
    with pytest.raises(traitlets.TraitError):
        view.timing = "lunch_ms"


@pytest.mark.slow  # a benchmark run: the emulator process, then the trials
async def test_a_config_runs_live_against_the_emulator() -> None:
    config = BenchmarkConfig(levels=["agent"], rtts_ms=[0.0], history_turns=[1], trials=2, warmup=0)
    view = BenchmarkView(config)
    assert (view.done, view.total, view.running, view.table_html, view.plot_svg) == (
        0, 8, False, "", ""
    )  # fmt: skip
    assert view.status == "not started: await view.run()"
    done, running = changes(view, "done"), changes(view, "running")
    status = changes(view, "status")
    result = await view.run()
    assert result is view.result and len(result.trials) == 8
    assert done == sorted(done) and done[-1] == 8  # counted up while the run went on
    assert running == [True, False]
    # before: the status went blank when the run ended, never saying it was done
    assert status == ["running…", f"done in {result.duration_s:.1f} s"]
    assert (view.done, view.total, view.failed, view.error) == (8, 8, 0, "")
    assert view.table_html == table(result) and view.table_html.count("<tr>") == 1 + 4
    assert view.plot_svg.startswith("<svg")


async def test_updates_are_rate_limited_and_end_with_a_full_refresh() -> None:
    """A burst of trials (as ``progress=view.add_trial`` feeds them) costs a few updates."""
    source = synthetic([0.0, 20.0, 100.0], trials=30, failed=3)
    view = BenchmarkView(source.config)
    total = len(source.trials)
    assert view.total == total == 360
    rows, plots, done = (
        changes(view, "table_html"),
        changes(view, "plot_svg"),
        changes(view, "done"),
    )
    running = changes(view, "running")
    for index, trial in enumerate(source.trials, 1):
        view.add_trial(index, total, trial)
    assert len(rows) <= 5 and len(plots) <= 5 and len(done) <= 5
    assert view._progress_throttle.flushes <= 5
    assert done[-1] == total and running == [True, False]
    # the last update shows every trial: the run's end always refreshes
    assert view.failed == 3 and view.table_html == table(source) and view.status == "done"
    assert view.plot_svg == plots[-1] and view.plot_svg.startswith("<svg")
    # the caller's trials: a new run (done == 1) starts over
    view.add_trial(1, 2, source.trials[-1])
    assert (view.done, view.total, view.failed, view.running) == (1, 2, 0, True)
    assert view.table_html == table(source.with_trials(source.trials[-1:]))


async def test_a_failed_run_shows_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # a foreign target without a key: refused before anything is contacted
    config = BenchmarkConfig(levels=["session"], trials=1, warmup=0, target="http://127.0.0.1:9/v1")
    view = BenchmarkView(config)
    assert view.total == 4  # no RTT grid against a foreign target
    with pytest.raises(ValueError, match="API key"):
        await view.run()
    assert view.error.startswith("BenchmarkConfigError: ") and "API key" in view.error
    assert (view.running, view.done, view.status) == (False, 0, "")  # the error says it


async def running(view: BenchmarkView) -> None:
    """Returns once ``view`` says it is running."""
    started = asyncio.Event()
    view.observe(lambda change: started.set() if change["new"] else None, names=["running"])
    await started.wait()


@pytest.mark.slow  # a benchmark run: the emulator process, then the trials
async def test_a_second_concurrent_run_is_refused() -> None:
    view = BenchmarkView(ONE_TRIAL)
    first = asyncio.create_task(view.run())
    await running(view)
    with pytest.raises(RuntimeError, match="already running"):
        await view.run()
    result = await first  # the first run is unharmed
    assert len(result.trials) == 1 and (view.done, view.running, view.error) == (1, False, "")


async def test_an_interrupted_run_says_so() -> None:
    view = BenchmarkView(ONE_TRIAL)
    task = asyncio.create_task(view.run())
    await running(view)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert view.error == "interrupted after 0 of 1 trials" and not view.running
    assert view.status == ""


def test_to_figure_without_and_with_trials() -> None:
    empty = BenchmarkView(BenchmarkConfig()).to_figure()
    assert isinstance(empty, Figure)
    assert [t.get_text() for t in empty.axes[0].texts] == ["no trials yet"]
    figure = BenchmarkView(synthetic([0.0, 20.0], trials=2)).to_figure()
    assert len(figure.axes) == 2  # one panel per RTT
    suptitle = figure.get_suptitle()
    assert suptitle.startswith("handoff → B's reply starts (reply_ms): distribution per mode")


def test_front_end_files_are_found() -> None:
    script = (widgets_dir() / "benchmark_view.js").read_text()
    assert script.strip().endswith("export default { render };")
    assert 'element("div", "na-bench")' in script
    css = (widgets_dir() / "views.css").read_text()
    assert "/* BenchmarkView */" in css and ".na-bench-table" in css


def test_a_trial_that_ran_another_mode_than_asked_shows_both() -> None:
    trials = [
        Trial(
            "agent", "fresh", "copied", 20.0, 2, i, reply_ms=130.0 + i,
            asked_session="reused", asked_context="copied", reason="B pins its own llm (X)",
        )
        for i in range(3)
    ]  # fmt: skip
    view = BenchmarkView(BenchmarkResult(config=BenchmarkConfig(), trials=trials))
    assert view.last_trial == "openai agent fresh+copied (asked reused+copied) rtt 20 #2: 132.0 ms"
    assert "reused+copied ×3 [1]" in view.table_html
    assert view.table_html.count("B pins its own llm (X)") == 1  # once, under the table
    assert "(asked reused+copied)" in view.plot_svg  # the box's tick names both
