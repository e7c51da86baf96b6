"""Benchmark plots: distributions, CDFs and cost vs RTT / history, one fixed color per mode.

Figures are built on ``matplotlib.figure.Figure`` directly, not pyplot: no global state, no
backend needed (headless CLI, CI, a notebook kernel all work), nothing left open to leak. Each
is painted as the views' figures are (``static_figure``): no background, one grey for words and
axes, so it reads on a light and a dark notebook page, and in a saved PNG.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .._figure_style import INK, static_figure
from ..analysis.phases.names import PHASE_COLORS
from ..modes import MODE_COLORS, mode_label
from .results import TIMING_NAMES, BenchmarkResult, Trial, phase_names, timing_title, values
from .stats import (
    WAIT,
    ModeSummary,
    PhaseSummary,
    group_trials,
    phase_table,
    summary_table,
)

_CI_BARS = "bars: bootstrap 95% CI of the median"

_MARKERS = ("o", "s", "^", "D", "v", "P")
_PROVIDER_STYLES = ("-", ":", "-.")
"""a line's style per provider, in every line plot (dashed is the ground truth's)"""
_PROVIDER_MARKS = ("o", "s", "^")
"""a trial's point per provider in the distributions"""
_PROVIDER_HATCHES = ("", "//", "..")
"""a box's or bar's hatch per provider"""
_JITTER = 0.15


def mode_color(mode: str) -> str:
    return MODE_COLORS.get(mode, INK)


@static_figure()
def plot_distributions(result: BenchmarkResult, timing: str = "reply_ms") -> Figure:
    """Box + jittered points per mode, one panel per RTT, each on its own y scale (RTT 0 would
    be flat beside RTT 100); failed trials counted under the tick. With several providers each
    has its mark and hatch, and its name over its boxes."""
    panels = {
        rtt: group_trials([t for t in result.trials if t.rtt_ms == rtt])
        for rtt in _rtts(result.trials)
    }
    providers = _providers(result)
    # each box 0.6 in wide: its label, upright under it, never reaches its neighbour's
    widths = [max(3.0, 0.6 * len(groups)) for groups in panels.values()]
    fig = Figure(figsize=(max(6.0, sum(widths)), 5.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, width_ratios=widths)[0]
    jitter = np.random.default_rng(0)  # fixed: the same result always draws the same picture
    for ax, (rtt, groups) in zip(axes, panels.items(), strict=True):
        ticks = []
        for pos, ((provider, level, session, context, _, history), trials) in enumerate(
            groups.items()
        ):
            data = values(trials, timing)
            color = mode_color(mode_label(session, context))
            which = providers.index(provider)
            if data:
                box = ax.boxplot(
                    [data], positions=[pos], widths=0.6, showfliers=False, patch_artist=True
                )
                box["boxes"][0].set(
                    facecolor=color,
                    alpha=0.3,
                    edgecolor=color,
                    hatch=_PROVIDER_HATCHES[which % len(_PROVIDER_HATCHES)],
                )
                box["medians"][0].set(color=color, linewidth=2)
                x = pos + jitter.uniform(-_JITTER, _JITTER, len(data))
                ax.scatter(
                    x,
                    data,
                    s=12,
                    color=color,
                    alpha=0.8,
                    zorder=3,
                    marker=_PROVIDER_MARKS[which % len(_PROVIDER_MARKS)],
                )
            failed = sum(not t.ok for t in trials)
            # the provider is named over its boxes, not in every label
            label = _label(result, level, session, context, history=history) + _asked_text(trials)
            ticks.append(label + (f"\n{failed} failed" if failed else ""))
        ax.set_xticks(range(len(ticks)), ticks, rotation=90, fontsize=8)
        ax.set_xlim(-0.7, max(len(ticks), 1) - 0.3)
        ax.set_title(_rtt_text(rtt), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if len(providers) > 1:
            _name_providers(ax, [key[0] for key in groups])
        if not any(values(trials, timing) for trials in groups.values()):
            ax.text(0.5, 0.5, "no successful trials", transform=ax.transAxes, ha="center")
    axes[0].set_ylabel(_axis(timing))
    marks: list[Artist] = [
        Patch(facecolor=INK, alpha=0.3, edgecolor=INK, label="middle half of the trials"),
        Line2D([], [], color=INK, linewidth=2, label="median"),
    ]
    if len(providers) > 1:
        marks += [
            Line2D(
                [], [], color=INK, marker=_PROVIDER_MARKS[i % len(_PROVIDER_MARKS)],
                markersize=4, linestyle="", label=f"one {provider} trial",
            )
            for i, provider in enumerate(providers)
        ]  # fmt: skip
    else:
        marks.append(
            Line2D([], [], color=INK, marker="o", markersize=4, linestyle="", label="one trial")
        )
    fig.legend(
        handles=marks, loc="outside lower center", ncols=len(marks), fontsize=8, frameon=False
    )
    _title(fig, result, timing, "distribution per mode")
    return fig


def _name_providers(ax: Axes, providers: Sequence[str]) -> None:
    """Each run of one provider's boxes named on the panel's top axis, runs parted by a line."""
    runs: list[tuple[str, int, int]] = []  # (provider, first box, last box)
    for pos, provider in enumerate(providers):
        if runs and runs[-1][0] == provider:
            runs[-1] = (provider, runs[-1][1], pos)
        else:
            runs.append((provider, pos, pos))
    top = ax.secondary_xaxis("top")
    top.set_xticks([(first + last) / 2 for _, first, last in runs], [r[0] for r in runs])
    top.tick_params(length=0, labelsize=9)
    for _, first, _ in runs[1:]:
        ax.axvline(first - 0.5, color=INK, linewidth=0.8, alpha=0.5)


@static_figure()
def plot_cdf(
    result: BenchmarkResult, timing: str = "reply_ms", rtt_ms: float | None = None
) -> Figure:
    """Empirical CDF per mode (its colour) and provider (its line style) at one RTT, or a panel
    per RTT when None, each on its own x scale."""
    trials = result.trials if rtt_ms is None else result.select(rtt_ms=rtt_ms)
    rtts = _rtts(trials)
    providers = _providers(result)
    fig = Figure(figsize=(max(7.0, 3.2 * len(rtts) + 3.0), 4.8), layout="constrained")
    axes = fig.subplots(1, len(rtts), squeeze=False, sharey=True)[0]
    for ax, rtt in zip(axes, rtts, strict=True):
        at_rtt = [t for t in trials if t.rtt_ms == rtt]
        for (provider, level, session, context, _, history), group in group_trials(at_rtt).items():
            data = np.sort(values(group, timing))
            if data.size == 0:
                continue
            ax.step(
                data,
                np.arange(1, data.size + 1) / data.size,
                where="post",
                color=mode_color(mode_label(session, context)),
                linestyle=_PROVIDER_STYLES[providers.index(provider) % len(_PROVIDER_STYLES)],
                label=_label(result, level, session, context, history=history, provider=provider)
                + _asked_text(group),
            )
        ax.set_xlabel(_axis(timing))
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if len(rtts) > 1:
            ax.set_title(_rtt_text(rtt), fontsize=10)
    axes[0].set_ylabel("fraction of trials ≤ x")
    _figure_legend(fig, axes)
    what = "CDF" if rtt_ms is None else f"CDF, {_rtt_text(rtt_ms)}"
    _title(fig, result, timing, what)
    return fig


def _figure_legend(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for the panels, each line said once (the same mode recurs per RTT)."""
    found: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    if found:
        fig.legend(
            handles=list(found.values()),
            labels=list(found),
            loc="outside right upper",
            fontsize=8,
        )
    else:
        axes[0].text(0.5, 0.5, "no successful trials", transform=axes[0].transAxes, ha="center")


@static_figure()
def plot_cost_vs_rtt(result: BenchmarkResult, timing: str = "reply_ms") -> Figure:
    """Median per mode vs injected RTT, bars its bootstrap 95% CI; the ground truth dashed."""
    foreign = all(t.rtt_ms is None for t in result.trials)
    xlabel = "RTT not injected (foreign target)" if foreign else "injected RTT (ms)"
    return _plot_cost(
        result,
        timing,
        x_of=lambda row: row.rtt_ms or 0.0,
        variant_of=lambda row: row.history_turns,
        variant_text=lambda row: f"{row.history_turns} turns",
        xlabel=xlabel,
        what="median vs RTT",
    )


@static_figure()
def plot_cost_vs_history(result: BenchmarkResult, timing: str = "reply_ms") -> Figure:
    """Median per mode vs history length, bars its bootstrap 95% CI; the ground truth dashed."""
    return _plot_cost(
        result,
        timing,
        x_of=lambda row: float(row.history_turns),
        variant_of=lambda row: row.rtt_ms,
        variant_text=lambda row: _rtt_text(row.rtt_ms),
        xlabel="history before the handoff (turns)",
        what="median vs history length",
    )


def phase_color(phase: str) -> str:
    return PHASE_COLORS.get(phase, INK)


@static_figure()
def plot_phases(result: BenchmarkResult) -> Figure:
    """Where each mode's handoff wait goes: per RTT, a bar per mode of its critical phases'
    medians end to end, and under it the same phases' truths (the network's share): what
    sticks out of the truth is the client's."""
    rows = [r for r in phase_table(result) if r.critical and r.timing != WAIT and r.summary]
    panels = _by_rtt(rows)
    fig = Figure(
        figsize=(
            9.0,
            1.2 + 1.1 * max((len(_modes(p)) for p in panels.values()), default=1) * len(panels),
        ),
        layout="constrained",
    )
    axes = fig.subplots(len(panels) or 1, 1, squeeze=False)[:, 0]
    shown: dict[str, None] = {}
    for ax, (rtt, panel) in zip(axes, panels.items(), strict=False):
        modes = _modes(panel)
        for i, mode in enumerate(modes):
            measured = truth = 0.0
            for row in (r for r in panel if _mode_key(r) == mode):
                assert row.summary is not None
                color = phase_color(row.timing)
                ax.barh(i + 0.18, row.summary.median, left=measured, height=0.34, color=color)
                if row.truth_ms:
                    ax.barh(
                        i - 0.18,
                        row.truth_ms,
                        left=truth,
                        height=0.34,
                        color=color,
                        alpha=0.45,
                        hatch="//",
                        edgecolor=INK,
                        linewidth=0,
                    )
                measured += row.summary.median
                truth += row.truth_ms or 0.0
                shown[row.timing] = None
        ax.set_yticks(range(len(modes)), [_mode_text(result, m) for m in modes], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(_rtt_text(rtt), fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    if not panels:
        axes[0].text(
            0.5,
            0.5,
            "no trial has phases (run with --phases)",
            transform=axes[0].transAxes,
            ha="center",
        )
    axes[-1].set_xlabel(
        "handoff wait, from the tool's return (ms): median of each phase; hatched: its truth"
    )
    marks = [
        Patch(facecolor=phase_color(name), label=name) for name in PHASE_COLORS if name in shown
    ]
    marks.append(Patch(facecolor="none", edgecolor=INK, hatch="//", label="truth (network)"))
    fig.legend(handles=marks, loc="outside right upper", fontsize=8, frameon=False)
    _title(fig, result, "phases", "where each mode's handoff wait goes")
    return fig


@static_figure()
def plot_phase_client(result: BenchmarkResult) -> Figure:
    """The client's own time per phase (median minus truth, bars its 95% CI), per RTT and
    mode, against the goal (dashed: within 0.1 RTT + 3 ms of the truth)."""
    rows = [r for r in phase_table(result) if r.timing != WAIT and r.client is not None]
    panels = _by_rtt(rows)
    providers = _providers(result)
    names = [n for n in phase_names(result.trials) if any(r.timing == n for r in rows)]
    fig = Figure(
        figsize=(max(7.0, 0.9 * len(names) + 3), 1.5 + 2.6 * max(len(panels), 1)),
        layout="constrained",
    )
    axes = fig.subplots(len(panels) or 1, 1, squeeze=False)[:, 0]
    for ax, (rtt, panel) in zip(axes, panels.items(), strict=False):
        modes = _modes(panel)
        width = 0.8 / max(len(modes), 1)
        for j, mode in enumerate(modes):
            points = [(names.index(r.timing), r.client) for r in panel if _mode_key(r) == mode]
            x = np.array([i for i, _ in points]) - 0.4 + width * (j + 0.5)
            median = np.array([c.median for _, c in points if c])
            low = median - [c.ci_low for _, c in points if c]
            high = np.array([c.ci_high for _, c in points if c]) - median
            ax.bar(
                x,
                median,
                width=width,
                color=mode_color(mode_label(mode[1], mode[2])),
                hatch=_PROVIDER_HATCHES[providers.index(mode[0]) % len(_PROVIDER_HATCHES)],
                label=_mode_text(result, mode) if ax is axes[0] else None,
            )
            ax.errorbar(
                x, median, yerr=[low, high], fmt="none", ecolor=INK, capsize=2, linewidth=0.8
            )
        goal = 0.1 * (rtt or 0.0) + 3.0
        for sign in (1, -1):
            ax.axhline(sign * goal, color=INK, linestyle="--", linewidth=0.8)
        ax.axhline(0, color=INK, linewidth=0.6)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("client (ms)")
        ax.set_title(f"{_rtt_text(rtt)}: dashed, the goal ±{goal:g} ms", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    if not panels:
        axes[0].text(
            0.5, 0.5, "no trial has phases with truth", transform=axes[0].transAxes, ha="center"
        )
    _legend_or_note(
        axes[0],
        [Line2D([], [], color=INK, marker="|", markersize=10, linestyle="", label=_CI_BARS)],
    )
    _title(fig, result, "phases", "the client's time per phase, beyond the network's")
    return fig


def _by_rtt(rows: Sequence[PhaseSummary]) -> dict[float | None, list[PhaseSummary]]:
    panels: dict[float | None, list[PhaseSummary]] = {}
    for row in rows:
        panels.setdefault(row.rtt_ms, []).append(row)
    return panels


ModeKey = tuple[str, str, str, str, int]
"""(provider, level, session, context, history_turns): one bar or series of a phase plot"""


def _mode_key(row: PhaseSummary) -> ModeKey:
    return (row.provider, row.level, row.session, row.context, row.history_turns)


def _modes(rows: Sequence[PhaseSummary]) -> list[ModeKey]:
    return list(dict.fromkeys(_mode_key(row) for row in rows))


def _mode_text(result: BenchmarkResult, mode: ModeKey) -> str:
    provider, level, session, context, history = mode
    return _label(result, level, session, context, history=history, provider=provider)


def save_all(
    result: BenchmarkResult,
    directory: str | Path,
    timings: Sequence[str] = ("reply_ms", "handoff_ms"),
) -> list[Path]:
    """Every plot as PNG (``<timing>_<plot>.png``) for the timings the result has values of;
    a cost curve only over an axis the run varied (more than one RTT, history length); the
    phase plots (``phases.png``, ``phase_client.png``) when its trials have phases."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    present = [timing for timing in timings if values(result.trials, timing)]
    # a run where everything failed still gets its (empty, annotated) figures
    present = present or list(timings[:1])
    plots: dict[str, Callable[[BenchmarkResult, str], Figure]] = {
        "distributions": plot_distributions,
        "cdf": plot_cdf,
    }
    # a cost curve over one RTT or one history length is a single point: not worth a file
    if len(_rtts(result.trials)) > 1:
        plots["cost_vs_rtt"] = plot_cost_vs_rtt
    if len({trial.history_turns for trial in result.trials}) > 1:
        plots["cost_vs_history"] = plot_cost_vs_history
    paths = []
    for timing in present:
        for name, plot in plots.items():
            path = directory / f"{timing}_{name}.png"
            plot(result, timing).savefig(path, dpi=120)
            paths.append(path)
    if any(trial.phases for trial in result.trials):
        for name, phase_plot in (("phases", plot_phases), ("phase_client", plot_phase_client)):
            path = directory / f"{name}.png"
            phase_plot(result).savefig(path, dpi=120)
            paths.append(path)
    return paths


def _plot_cost(
    result: BenchmarkResult,
    timing: str,
    *,
    x_of: Callable[[ModeSummary], float],
    variant_of: Callable[[ModeSummary], Hashable],
    variant_text: Callable[[ModeSummary], str],
    xlabel: str,
    what: str,
) -> Figure:
    """One series per (level, mode, variant): the variant is the grid axis not on x."""
    rows = summary_table(result, timing)
    variants = list(dict.fromkeys(variant_of(row) for row in rows))
    providers = _providers(result)
    series: dict[tuple[str, str, str, str, Hashable], list[ModeSummary]] = {}
    for row in rows:
        key = (row.provider, row.level, row.session, row.context, variant_of(row))
        series.setdefault(key, []).append(row)
    fig = Figure(figsize=(7.0, 4.8), layout="constrained")
    ax = fig.subplots()
    any_truth = False
    for (provider, level, session, context, variant), points in series.items():
        color = mode_color(mode_label(session, context))
        marker = _MARKERS[variants.index(variant) % len(_MARKERS)]
        measured = sorted(
            ((x_of(p), p.summary) for p in points if p.summary is not None), key=lambda m: m[0]
        )
        if measured:
            label = _label(result, level, session, context, provider=provider)
            if len(variants) > 1:
                label += f", {variant_text(points[0])}"
            x = [m[0] for m in measured]
            median = np.array([s.median for _, s in measured])
            low = median - [s.ci_low for _, s in measured]
            high = np.array([s.ci_high for _, s in measured]) - median
            ax.errorbar(
                x,
                median,
                yerr=[low, high],
                color=color,
                marker=marker,
                capsize=3,
                label=label,
                # one provider's series apart from another's of the same mode (the colour)
                linestyle=_PROVIDER_STYLES[providers.index(provider) % len(_PROVIDER_STYLES)],
            )
        truth = sorted((x_of(p), p.truth_ms) for p in points if p.truth_ms is not None)
        if truth:
            any_truth = True
            ax.plot(*zip(*truth, strict=True), linestyle="--", color=color, alpha=0.7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(_axis(timing, "median"))
    ax.grid(alpha=0.3)
    # what the marks mean, after the modes: the bars, and the dashed truth where there is one
    extra = [Line2D([], [], color=INK, marker="|", markersize=10, linestyle="", label=_CI_BARS)]
    if any_truth:
        extra.append(Line2D([], [], color=INK, linestyle="--", label="ground truth"))
    _legend_or_note(ax, extra)
    _title(fig, result, timing, what)
    return fig


def _rtts(trials: Sequence[Trial]) -> list[float | None]:
    """The distinct RTTs, ascending, the unknown RTT (foreign target) last; never empty."""
    known = sorted({t.rtt_ms for t in trials if t.rtt_ms is not None})
    unknown = any(t.rtt_ms is None for t in trials) or not known
    return [*known, *([None] if unknown else [])]


def _providers(result: BenchmarkResult) -> list[str]:
    """The result's providers, sorted: each keeps its style, mark and hatch in every plot."""
    return sorted({t.provider for t in result.trials})


def _axis(timing: str, statistic: str = "") -> str:
    """An axis label: the timing in words (and which statistic of it), its unit once."""
    return f"{TIMING_NAMES.get(timing, timing)}{f', {statistic}' if statistic else ''} (ms)"


def _rtt_text(rtt: float | None) -> str:
    return "RTT not injected" if rtt is None else f"RTT {rtt:g} ms"


def _label(
    result: BenchmarkResult,
    level: str,
    session: str,
    context: str,
    history: int | None = None,
    provider: str | None = None,
) -> str:
    """The mode that ran, plus the provider / level / history length only when the result
    has more than one."""
    label = mode_label(session, context)
    if level != "cascaded" and len({t.level for t in result.trials} - {"cascaded"}) > 1:
        label = f"{level}: {label}"
    if provider is not None and len({t.provider for t in result.trials}) > 1:
        label = f"{provider} {label}"
    if history is not None and len({t.history_turns for t in result.trials}) > 1:
        label += f", {history} turns"
    return label


def _asked_text(trials: Sequence[Trial]) -> str:
    """A plot label's addition when some trials asked for another mode than ran: which, not
    why (the table's ``asked`` says why)."""
    asked = dict.fromkeys(t.asked_mode for t in trials if t.asked_mode != t.mode)
    return f"\n(asked {', '.join(asked)})" if asked else ""


def _legend_or_note(ax: Axes, extra: Sequence[Line2D] = ()) -> None:
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(
            handles=[*handles, *extra], fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1)
        )
    else:
        ax.text(0.5, 0.5, "no successful trials", transform=ax.transAxes, ha="center")


def _title(fig: Figure, result: BenchmarkResult, timing: str, what: str) -> None:
    """What was measured, where (target, machine) and when (the run's start date)."""
    host = result.machine.get("hostname") or "unknown host"
    cpu = result.machine.get("processor") or result.machine.get("machine")
    where = f"{result.config.target} from {host}" + (f" ({cpu})" if cpu else "")
    try:
        when = datetime.fromisoformat(result.started).date().isoformat()
    except ValueError:
        when = result.started or "date unknown"
    fig.suptitle(f"{timing_title(timing)}: {what}\n{where}, {when}", fontsize=10)
