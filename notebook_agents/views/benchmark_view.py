"""BenchmarkView: the handoff-latency benchmark as it runs (progress, distribution plot, summary
table), or a finished result, in one widget."""

from __future__ import annotations

import asyncio
import datetime
import io
import platform
import time
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets
from matplotlib.figure import Figure

from .._figure_style import INK, static_figure
from ..bench.livekit_warnings import warned_line
from ..bench.plots import plot_distributions
from ..bench.results import TIMINGS, BenchmarkConfig, BenchmarkResult, Trial
from ..bench.run import plan, run_benchmark
from ..bench.stats import summary_table
from ._assets import asset
from ._text import cut
from ._throttle import Throttle
from .errors import ViewStateError

TABLE_HZ = 4.0
"""the table's bootstrap costs ~2 ms per group: a few refreshes a second are plenty"""
PLOT_HZ = 1.0
"""rendering the plot to SVG costs ~0.1-0.5 s: at most once a second"""
BUDGET = 0.2
"""the share of a run's wall time the table or the plot may take; slower renders wait longer"""


class BenchmarkView(anywidget.AnyWidget):
    """A ``BenchmarkResult`` shown complete, or a ``BenchmarkConfig`` shown while ``run()`` runs it.

    The kernel does the statistics, draws the plot (``plot_distributions`` as SVG, the same
    picture as ``to_figure()``) and the table (``summary_table``'s HTML, as a notebook cell shows
    it) and words the status; the browser only lays out what it is sent.
    """

    _esm = asset("benchmark_view.js")
    _css = asset("views.css")

    timing = traitlets.Enum(TIMINGS, default_value="reply_ms").tag(sync=True)
    """the timing the table and plot show; assigning another redraws them"""
    done = traitlets.Int(0).tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    failed = traitlets.Int(0).tag(sync=True)
    running = traitlets.Bool(False).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    """"running…", "done in 12.3 s", "not started: await view.run()"; "" when ``error`` says it"""
    last_trial = traitlets.Unicode("").tag(sync=True)
    """e.g. "agent reused+copied rtt 20 #3: 61.2 ms" """
    table_html = traitlets.Unicode("").tag(sync=True)
    """``summary_table`` of the trials so far as HTML; "" without trials"""
    plot_svg = traitlets.Unicode("").tag(sync=True)
    """``plot_distributions`` of the trials so far as an ``<svg>`` element; "" without trials"""
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self, source: BenchmarkResult | BenchmarkConfig, timing: str = "reply_ms", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._ready = False  # the timing observer waits until the state below exists
        if isinstance(source, BenchmarkResult):
            self.config = source.config
            # a copy: add_trial appends to it, and the caller's result is not ours to change
            self._result = source.with_trials(source.trials)
            total = len(source.trials)  # complete as it is, even if a subset of its config
        else:
            self.config = source
            self._result = BenchmarkResult(config=source)
            total = _planned(source)
        self._run_active = False
        self._progress: dict[str, Any] = {}
        self._progress_throttle = Throttle(self._flush_progress)
        self._table = _Gate(self._flush_table, TABLE_HZ)
        self._plot = _Gate(self._flush_plot, PLOT_HZ)
        self.timing = timing
        self._ready = True
        self._show_all(total=total)

    @property
    def result(self) -> BenchmarkResult:
        """The trials so far (the whole result once a run has finished)."""
        return self._result

    async def run(
        self, *, api_key: str | None = None, emulator_query: dict[str, Any] | None = None
    ) -> BenchmarkResult:
        """Run the view's config with ``run_benchmark``, showing each trial; return the result.

        A failure is shown in the view and re-raised. Arguments as ``run_benchmark``'s.
        """
        if self._run_active:
            raise ViewStateError(
                "this BenchmarkView is already running its benchmark: await the first run() "
                "before starting another, or give the second run a view of its own"
            )
        self._run_active = True
        self._result = _new_run(self.config)
        self.error = ""
        self._show_all(total=_planned(self.config), running=True)
        try:
            self._result = await run_benchmark(
                self.config, api_key=api_key, emulator_query=emulator_query, progress=self.add_trial
            )
            return self._result
        except BaseException as e:  # interrupted too: the view must not say "running" forever
            self.error = _error_text(e, len(self._result.trials), self._progress["total"])
            raise
        finally:
            self._run_active = False
            self._show_all(total=self._progress["total"], running=False)

    def add_trial(self, done: int, total: int, trial: Trial) -> None:
        """A ``run_benchmark`` progress callback: ``progress=view.add_trial`` shows a run you
        started yourself. It runs between two trials, so the view's work never delays one."""
        if done == 1 and not self._run_active:
            # a new external run: forget the trials of the previous one
            self._result = _new_run(self.config)
            self._progress["failed"] = 0
        self._result.trials.append(trial)
        self._progress.update(
            done=done,
            total=total,
            failed=self._progress.get("failed", 0) + (not trial.ok),
            last_trial=describe(trial, self.timing),
            running=self._run_active or done < total,
        )
        finished = done >= total and not self._run_active  # run() refreshes with its result
        if finished or len(self._result.trials) == 1:
            # the first trial at once (until then the view had nothing to show), the last in full
            self.refresh()
        else:
            self._progress_throttle.request()
            self._table.request()
            self._plot.request()

    def show(self, result: BenchmarkResult) -> None:
        """Show a finished ``result``, e.g. the one a ``run_benchmark`` fed by ``add_trial``
        returned: its machine and start time title the plot."""
        self.config = result.config
        self._result = result.with_trials(result.trials)
        self._show_all(total=len(result.trials), running=False)

    def refresh(self) -> None:
        """Recompute and send everything now, whatever the rate limits."""
        self._progress_throttle.cancel()
        self._flush_progress()
        self._table.run()
        self._plot.run()

    def to_figure(self) -> Figure:
        """The distribution per mode of the trials so far, as ``plot_distributions`` draws it,
        for a notebook page of either theme."""
        with static_figure():
            return self._figure()

    def _figure(self) -> Figure:
        if self._result.trials:
            return plot_distributions(self._result, self.timing)
        figure = Figure(figsize=(6.0, 1.2))
        ax = figure.add_axes((0, 0, 1, 1))  # IPython shows no picture of a figure without axes
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no trials yet", ha="center", va="center")
        return figure

    def close(self) -> None:
        self._progress_throttle.cancel()
        super().close()

    @traitlets.observe("timing")
    def _on_timing(self, change: dict[str, Any]) -> None:
        if self._ready:
            trials = self._result.trials
            self._progress["last_trial"] = describe(trials[-1], self.timing) if trials else ""
            self.refresh()

    def _show_all(self, *, total: int, running: bool = False) -> None:
        """Reset the counters from the trials held and redraw everything."""
        trials = self._result.trials
        self._progress = {
            "done": len(trials),
            "total": total,
            "failed": sum(not t.ok for t in trials),
            "running": running,
            "last_trial": describe(trials[-1], self.timing) if trials else "",
        }
        self.refresh()

    def _flush_progress(self) -> None:
        with self.hold_sync():  # one comm message per flush, not one per trait
            for name, value in self._progress.items():
                setattr(self, name, value)
            self.status = self._status()

    def _status(self) -> str:
        if self.running:
            return "running…"
        if self.error:
            return ""  # the error line says what happened
        if not self.done:
            return "not started: await view.run()"
        took = self._result.duration_s  # known once a run returned its result
        return f"done in {took:.1f} s" if took else "done"

    def _flush_table(self) -> None:
        trials = self._result.trials
        self.table_html = summary_table(self._result, self.timing)._repr_html_() if trials else ""

    def _flush_plot(self) -> None:
        if not self._result.trials:
            self.plot_svg = ""
            return
        # the plot in the widget follows JupyterLab's theme: its ink becomes the theme's font
        # colour (it has no background of its own; the data keep the bench's palette)
        svg = to_svg(plot_distributions(self._result, self.timing))
        self.plot_svg = svg.replace(INK, "var(--jp-ui-font-color1, #1f2937)")


class _Gate:
    """Runs ``work`` when asked, at most ``hz`` times a second and at most BUDGET of the time.

    Unlike ``Throttle`` it never schedules a trailing run: that would fire during the next
    trial, on the very event loop whose latency the trial measures. Requests it skips are
    covered by the next one it runs, and by the final refresh.
    """

    def __init__(self, work: Callable[[], None], hz: float) -> None:
        self._work = work
        self.min_interval_s = 1.0 / hz
        self._next = float("-inf")

    def request(self) -> None:
        if time.monotonic() >= self._next:
            self.run()

    def run(self) -> None:
        started = time.monotonic()
        self._work()
        cost = time.monotonic() - started
        self._next = started + max(self.min_interval_s, cost / BUDGET)


def describe(trial: Trial, timing: str) -> str:
    """``"openai agent reused+copied rtt 20 #3: 61.2 ms"``: one trial in a line; the mode
    that ran, and the one asked for when that differs (``fresh+copied (asked reused+copied)``)."""
    rtt = "" if trial.rtt_ms is None else f" rtt {trial.rtt_ms:g}"
    asked = f" (asked {trial.asked_mode})" if trial.ok and trial.asked_mode != trial.mode else ""
    where = f"{trial.provider} {trial.level} {trial.mode}{asked}{rtt}"
    where += f" #{trial.trial}"
    if not trial.ok:
        # the progress line has one line for the whole trial
        return f"{where}: failed ({cut(trial.error or 'no reason given', 80)})"
    value = getattr(trial, timing)
    said = f"{where}: {value:.1f} ms" if value is not None else f"{where}: no {timing}"
    return f"{said} ({warned_line(trial.livekit_warned)})" if trial.livekit_warned else said


def to_svg(figure: Figure) -> str:
    """``figure`` as an inline ``<svg>`` element."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # the XML prolog and doctype mean nothing inside HTML


def _planned(config: BenchmarkConfig) -> int:
    """How many trials a run of ``config`` keeps (its warm-up rounds are not shown)."""
    return sum(kept for _, kept in plan(config))


def _error_text(error: BaseException, done: int, total: int) -> str:
    if isinstance(error, KeyboardInterrupt | asyncio.CancelledError):
        return f"interrupted after {done} of {total} trials"
    return f"{type(error).__name__}: {error}"


def _new_run(config: BenchmarkConfig) -> BenchmarkResult:
    """The result a run starts filling: the plot's title names this host until the run returns
    its own, with the full machine description."""
    return BenchmarkResult(
        config=config,
        machine={"hostname": platform.node()},
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
