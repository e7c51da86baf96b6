"""Benchmark plots: what each figure holds, its title, fixed mode colors, PNGs on disk."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from notebook_agents.analysis import HANDOFF_PHASES
from notebook_agents.analysis.phases.names import PHASE_COLORS
from notebook_agents.bench.plots import (
    plot_cdf,
    plot_cost_vs_history,
    plot_cost_vs_rtt,
    plot_distributions,
    plot_phase_client,
    plot_phases,
    save_all,
)
from notebook_agents.bench.results import BenchmarkConfig, BenchmarkResult, PhaseTiming, Trial
from notebook_agents.modes import MODE_COLORS, REALTIME_MODES

RTTS = (0.0, 20.0, 100.0)
HISTORIES = (0, 10, 50)
STARTED = "2026-11-22T04:00:00+00:00"
DATE = "2026-11-22"
REALTIME = [f"{session}+{context}" for session, context in REALTIME_MODES]


def trial(rtt: float | None, history: int, i: int, session: str, context: str, **kw: Any) -> Trial:
    level = "cascaded" if session == "none" else "agent"
    fields: dict[str, Any] = {"level": level, "session": session, "context": context}
    return Trial(**fields, rtt_ms=rtt, history_turns=history, trial=i, **kw)


def emulator_result(
    rtts: tuple[float, ...] = RTTS, histories: tuple[int, ...] = (10,)
) -> BenchmarkResult:
    """Every realtime mode plus a cascaded row at each RTT and history, with truth; one failure."""
    rng = np.random.default_rng(0)
    trials = []
    for rtt in rtts:
        for history in histories:
            for k, (session, context) in enumerate([*REALTIME_MODES, ("none", "copied")]):
                truth = (k + 2) * rtt + history / 10
                truth_kw = {} if session == "none" else {"truth_reply_ms": truth}
                for i in range(6):
                    reply = truth + float(rng.exponential(2.0))
                    trials.append(
                        trial(rtt, history, i, session, context, reply_ms=reply, **truth_kw)
                    )
    trials.append(trial(rtts[0], histories[0], 99, "fresh", "empty", ok=False, error="timeout"))
    return result(trials, target="emulator")


def result(trials: list[Trial], target: str) -> BenchmarkResult:
    return BenchmarkResult(
        config=BenchmarkConfig(target=target),
        trials=trials,
        machine={"hostname": "bench-box", "processor": "Test CPU"},
        started=STARTED,
    )


def title(fig: Figure) -> str:
    return fig.get_suptitle()


def colors_of(artists: Iterable[Any]) -> list[str]:
    """The color of each line, or of each point cloud's points."""
    return [
        to_hex(a.get_facecolor()[0] if hasattr(a, "get_offsets") else a.get_color())
        for a in artists
    ]


def colors_for(modes: Iterable[str]) -> list[str]:
    return [to_hex(MODE_COLORS[mode]) for mode in modes]


PLOTS: dict[str, Callable[[BenchmarkResult, str], Figure]] = {
    "distributions": plot_distributions,
    "cdf": plot_cdf,
    "cost_vs_rtt": plot_cost_vs_rtt,
    "cost_vs_history": plot_cost_vs_history,
}


def test_mode_colors_are_fixed_and_distinct() -> None:
    assert set(MODE_COLORS) >= {*REALTIME, "cascaded+copied", "cascaded+empty"}
    assert len({to_hex(color) for color in MODE_COLORS.values()}) == len(MODE_COLORS)
    # fixed: a mode keeps its color whichever other modes a result has
    alone = [trial(20.0, 10, i, "fresh", "empty", reply_ms=50.0 + i) for i in range(3)]
    (ax,) = plot_distributions(result(alone, target="emulator")).axes
    assert colors_of(ax.collections) == colors_for(["fresh+empty"])


def test_distributions_one_panel_per_rtt_with_points_in_mode_colors() -> None:
    fig = plot_distributions(emulator_result(), "reply_ms")
    assert len(fig.axes) == len(RTTS)
    for ax in fig.axes:
        # one point cloud per mode, in that mode's color, ordered like REALTIME_MODES
        assert colors_of(ax.collections) == colors_for([*REALTIME, "cascaded+copied"])
        assert all(np.shape(c.get_offsets()) == (6, 2) for c in ax.collections)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "fresh+empty\n1 failed" in ticks
    assert fig.axes[0].get_ylabel() == "handoff → B's reply starts (ms)"


def test_distributions_each_rtt_panel_on_its_own_y_scale() -> None:
    # before: one shared y-axis, so RTT 0's boxes lay flat at the bottom beside RTT 100's
    fig = plot_distributions(emulator_result(), "reply_ms")
    at_0, _, at_100 = fig.axes
    assert not at_0.get_shared_y_axes().joined(at_0, at_100)
    top_0, bottom_100 = at_0.get_ylim()[1], at_100.get_ylim()[0]
    assert top_0 < bottom_100  # RTT 0's panel spans its own trials, not RTT 100's
    for ax in fig.axes:  # every panel spans its own points, nothing more than a margin around
        points = np.concatenate([np.asarray(c.get_offsets())[:, 1] for c in ax.collections])
        low, high = ax.get_ylim()
        assert high - low < 2 * np.ptp(points)


def test_distributions_legend_says_what_the_marks_are() -> None:
    fig = plot_distributions(emulator_result(), "reply_ms")
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "middle half of the trials", "median", "one trial",
    ]  # fmt: skip


@pytest.mark.parametrize("plot", PLOTS.values(), ids=list(PLOTS))
def test_a_figure_is_returned_not_also_shown(
    plot: Callable[[BenchmarkResult, str], Figure],
) -> None:
    """A notebook shows what a cell returns: a figure pyplot also held would show twice."""
    figure = plot(emulator_result(histories=(0, 10)), "reply_ms")
    assert isinstance(figure, Figure) and plt.get_fignums() == []


def test_cdf_one_line_per_mode_at_an_rtt() -> None:
    fig = plot_cdf(emulator_result(), "reply_ms", rtt_ms=20.0)
    (ax,) = fig.axes
    assert colors_of(ax.get_lines()) == colors_for([*REALTIME, "cascaded+copied"])
    assert "RTT 20 ms" in title(fig)
    # all RTTs at once: a panel per RTT, a line per mode in each
    panels = plot_cdf(emulator_result(), "reply_ms").axes
    assert [len(ax.get_lines()) for ax in panels] == [5] * len(RTTS)
    assert [ax.get_title() for ax in panels] == [f"RTT {rtt:g} ms" for rtt in RTTS]


def two_providers() -> BenchmarkResult:
    """Both providers in the four modes at two RTTs; half of gemini's fresh trials asked for
    reused (as Gemini Live runs them when B's tools are not A's)."""
    rng = np.random.default_rng(1)
    trials = []
    for rtt in (0.0, 20.0):
        for provider in ("openai", "gemini"):
            for session, context in REALTIME_MODES:
                asked = "reused" if provider == "gemini" else session
                for i in range(4):
                    trials.append(
                        trial(
                            rtt, 10, i, session, context, provider=provider,
                            asked_session=asked, asked_context=context,
                            reply_ms=50 + rtt + float(rng.exponential(5)),
                        )
                    )  # fmt: skip
    return result(trials, target="emulator")


def test_distribution_labels_of_two_providers_do_not_overlap() -> None:
    """Two-line labels ("gemini fresh+copied (asked reused+copied)") slanted at 30° ran into
    their neighbours at the default width."""
    fig = plot_distributions(two_providers(), "reply_ms")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # laid out as saved
    renderer = canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert len(labels) == 8
        boxes = [t.get_window_extent(renderer) for t in labels]
        for left, right in itertools.pairwise(boxes):
            assert left.x1 <= right.x0, (left, right)
        # the provider is said over its boxes, once
        top = [t.get_text() for t in ax.child_axes[0].get_xticklabels()]
        assert top == ["gemini", "openai"]


def test_every_plot_tells_the_providers_apart() -> None:
    """The CDF's line style meant the RTT: gemini's and openai's fresh+copied looked alike."""
    data = two_providers()
    for ax in plot_cdf(data, "reply_ms").axes:
        styles: dict[str, set[str]] = {}
        for line in ax.get_lines():
            styles.setdefault(str(line.get_label()).split()[0], set()).add(
                str(line.get_linestyle())
            )
        assert len(styles["gemini"]) == len(styles["openai"]) == 1
        assert styles["gemini"] != styles["openai"]
    for ax in plot_distributions(data, "reply_ms").axes:
        marks = {np.asarray(c.get_paths()[0].vertices).tobytes() for c in ax.collections}
        assert len(marks) == 2  # one mark per provider


def test_cost_vs_rtt_median_with_ci_per_mode_and_truth_dashed() -> None:
    fig = plot_cost_vs_rtt(emulator_result(), "reply_ms")
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 5  # 4 realtime modes + cascaded
    assert [np.size(b.lines[0].get_xdata()) for b in bars] == [len(RTTS)] * 5
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert colors_of(dashed) == colors_for(REALTIME)  # cascaded has no truth
    assert ax.get_xlabel() == "injected RTT (ms)"
    assert ax.get_ylabel() == "handoff → B's reply starts, median (ms)"
    # the legend says what the bars and the dashes are, after the modes
    legend = ax.get_legend()
    assert legend is not None
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels[-2:] == ["bars: bootstrap 95% CI of the median", "ground truth"]


def test_cdf_axis_names_the_timing_in_words() -> None:
    for ax in plot_cdf(emulator_result(), "handoff_ms").axes:
        assert ax.get_xlabel() == "handoff → B's on_enter (ms)"


def test_cost_vs_history_one_point_per_history_length() -> None:
    fig = plot_cost_vs_history(emulator_result(rtts=(20.0,), histories=HISTORIES), "reply_ms")
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 5
    assert np.asarray(bars[0].lines[0].get_xdata()).tolist() == list(HISTORIES)
    assert "turns" in ax.get_xlabel()


@pytest.mark.parametrize("plot", PLOTS.values(), ids=list(PLOTS))
def test_titles_say_what_where_and_when(plot: Callable[[BenchmarkResult, str], Figure]) -> None:
    text = title(plot(emulator_result(), "handoff_ms"))
    assert text.startswith("handoff → B's on_enter (handoff_ms): ")
    assert "emulator" in text and "bench-box" in text and DATE in text


@pytest.mark.parametrize("plot", PLOTS.values(), ids=list(PLOTS))
def test_only_failed_trials_still_plot(plot: Callable[[BenchmarkResult, str], Figure]) -> None:
    failed = [
        trial(20.0, 10, i, s, c, ok=False, error="connection closed")
        for i, (s, c) in enumerate(REALTIME_MODES)
    ]
    fig = plot(result(failed, target="emulator"), "reply_ms")
    assert isinstance(fig, Figure) and "reply_ms" in title(fig)
    assert any("no successful trials" in t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("plot", PLOTS.values(), ids=list(PLOTS))
def test_a_foreign_target_without_truth_still_plots(
    plot: Callable[[BenchmarkResult, str], Figure],
) -> None:
    target = "http://127.0.0.1:9/v1"
    trials = [
        trial(None, 10, i, s, c, reply_ms=300.0 + 10 * k + i)
        for i in range(5)
        for k, (s, c) in enumerate(REALTIME_MODES)
    ]
    fig = plot(result(trials, target=target), "reply_ms")
    assert target in title(fig)
    assert not [line for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == "--"]


def test_save_all_writes_non_empty_pngs(tmp_path: Path) -> None:
    paths = save_all(emulator_result(histories=(0, 10)), tmp_path / "out")
    # handoff_ms has no values in this result: only reply_ms figures
    assert sorted(p.name for p in paths) == sorted(f"reply_ms_{name}.png" for name in PLOTS)
    for path in paths:
        assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and path.stat().st_size > 1000


def test_save_all_with_only_failed_trials(tmp_path: Path) -> None:
    failed = [trial(20.0, 10, 0, "reused", "copied", ok=False, error="timeout")]
    paths = save_all(result(failed, target="emulator"), tmp_path)
    assert sorted(p.name for p in paths) == ["reply_ms_cdf.png", "reply_ms_distributions.png"]


def test_save_all_skips_a_cost_curve_over_an_axis_the_run_did_not_vary(tmp_path: Path) -> None:
    paths = save_all(emulator_result(histories=(10,)), tmp_path)  # several RTTs, one history
    assert "reply_ms_cost_vs_rtt.png" in [p.name for p in paths]
    assert "reply_ms_cost_vs_history.png" not in [p.name for p in paths]


def phased_result() -> BenchmarkResult:
    """Each realtime mode's handoffs at two RTTs, split into phases: drain and the reply on
    the network (truth: an RTT each), on_enter the client's alone; fresh ones also connect."""
    trials = []
    for rtt in (0.0, 20.0):
        for session, context in REALTIME_MODES:
            for i in range(4):
                phases = {"drain": PhaseTiming(rtt + 1.0 + i / 10, truth_ms=rtt)}
                if session == "fresh":
                    phases["connect"] = PhaseTiming(3 * rtt + 4.0, truth_ms=3 * rtt)
                phases["on_enter"] = PhaseTiming(0.5, truth_ms=0.0, critical=context == "copied")
                phases["reply_created"] = PhaseTiming(rtt + 2.0, truth_ms=rtt)
                trials.append(trial(rtt, 10, i, session, context, reply_ms=9.0, phases=phases))
    return result(trials, target="emulator")


def test_phase_colors_are_fixed_and_distinct_one_per_phase() -> None:
    assert list(PHASE_COLORS) == list(HANDOFF_PHASES)
    assert len({to_hex(color) for color in PHASE_COLORS.values()}) == len(PHASE_COLORS)


def test_phases_plot_stacks_each_modes_critical_phases_above_their_truth() -> None:
    fig = plot_phases(phased_result())
    assert len(fig.axes) == 2  # one panel per RTT
    bars = fig.axes[1].patches
    # a bar per critical phase, and one per truth that is not 0 (on_enter's is): reused+copied
    # 3 + 2, reused+empty (on_enter beside) 2 + 2, fresh+copied 4 + 3, fresh+empty 3 + 3
    assert len(bars) == 22
    colors = {to_hex(b.get_facecolor()) for b in bars}
    assert to_hex(PHASE_COLORS["connect"]) in colors
    assert to_hex(PHASE_COLORS["drain"]) in colors
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert labels == REALTIME
    assert "phases" in title(fig) and "bench-box" in title(fig)


def test_phase_client_plot_has_a_bar_per_mode_and_phase_against_the_goal() -> None:
    fig = plot_phase_client(phased_result())
    bottom = fig.axes[1]  # RTT 20
    assert [t.get_text() for t in bottom.get_xticklabels()] == [
        "drain", "connect", "on_enter", "reply_created",
    ]  # fmt: skip
    heights = sorted(round(b.get_height(), 6) for b in bottom.patches if isinstance(b, Rectangle))
    # client: drain 1.0..1.3 (median 1.15), connect 4, on_enter 0.5, reply 2, per mode
    assert heights.count(4.0) == 2 and heights.count(2.0) == 4 and heights.count(0.5) == 4
    goal = [
        float(np.asarray(line.get_ydata())[0])
        for line in bottom.get_lines()
        if line.get_linestyle() == "--"
    ]
    assert sorted(goal) == [-5.0, 5.0]  # 0.1 x 20 + 3


@pytest.mark.slow
def test_save_all_adds_the_phase_plots_when_trials_have_phases(tmp_path: Path) -> None:
    names = [p.name for p in save_all(phased_result(), tmp_path)]
    assert "phases.png" in names and "phase_client.png" in names
    assert "phases.png" not in [p.name for p in save_all(emulator_result(), tmp_path / "plain")]


@pytest.mark.slow
def test_the_plots_import_no_widget_code() -> None:
    """The engine runs headless and imports no views (DESIGN.md): the plots take the figure
    style the views use from the package, not from views/. A fresh interpreter tells."""
    code = (
        "import sys, notebook_agents.bench.plots; "
        "print(sorted(m for m in sys.modules if m.startswith('notebook_agents.views')))"
    )
    checkout = Path(__file__).resolve().parents[2]
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=checkout
    )
    assert ran.stdout.strip() == "[]"
