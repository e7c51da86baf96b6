"""Benchmark statistics: robust summaries per mode, the excess over ground truth, comparisons.

Medians and bootstrap CIs rather than means: handoff timings have long right tails (a GC pause,
a scheduler hiccup), and one outlier should not move the headline figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from ..modes import REALTIME_MODES, mode_label
from .results import BenchmarkResult, Trial, values

RESAMPLES = 2000
SEED = 20260401
"""fixed, so the same trials always give the same CI (tables and plots agree run to run)"""

LEVELS = ("agent", "session", "cascaded")
TRUTH_OF = {"reply_ms": "truth_reply_ms", "handoff_ms": "truth_handoff_ms"}
"""the timings the emulator knows the ground truth of, and the column holding it"""

Floats = npt.NDArray[np.float64]
GroupKey = tuple[str, str, str, float | None, int]
"""(level, session, context, rtt_ms, history_turns)"""


@dataclass(frozen=True)
class Summary:
    """Robust summary of one timing's values (ms); ci_* bound the median (bootstrap 95%)."""

    n: int
    median: float
    p90: float
    p95: float
    q1: float
    q3: float
    iqr: float
    ci_low: float
    ci_high: float


def summarize(data: Sequence[float]) -> Summary | None:
    """Summary of ``data``; None when there is nothing to summarize."""
    x = np.asarray(data, dtype=np.float64)
    if x.size == 0:
        return None
    median, p90, p95, q1, q3 = np.percentile(x, [50, 90, 95, 25, 75])
    ci_low, ci_high = np.percentile(_bootstrap_medians(x, np.random.default_rng(SEED)), [2.5, 97.5])
    return Summary(
        n=int(x.size),
        median=float(median),
        p90=float(p90),
        p95=float(p95),
        q1=float(q1),
        q3=float(q3),
        iqr=float(q3 - q1),
        ci_low=float(ci_low),
        ci_high=float(ci_high),
    )


def _bootstrap_medians(x: Floats, rng: np.random.Generator) -> Floats:
    """The medians of RESAMPLES resamples of ``x`` with replacement, in one vectorized draw."""
    picks = rng.integers(0, x.size, size=(RESAMPLES, x.size))
    return np.median(x[picks], axis=1)


@dataclass(frozen=True)
class _Group:
    """Which trials a row describes: a mode at one level, RTT and history length."""

    level: str
    session: str
    context: str
    rtt_ms: float | None
    history_turns: int
    timing: str

    @property
    def mode(self) -> str:
        return mode_label(self.session, self.context)


@dataclass(frozen=True)
class ModeSummary(_Group):
    """One row of the summary table."""

    summary: Summary | None
    """None when no trial of the group gave this timing (e.g. all failed)"""
    failed: int
    truth_ms: float | None
    """median ground truth (emulator only, reply_ms and handoff_ms only)"""
    excess_ms: float | None
    excess_rtts: float | None
    """excess_ms in units of the injected RTT; None at RTT 0 or unknown"""
    latency_error_ms: float | None = None
    """excess_ms minus the same group's excess at RTT 0 (the client's own CPU per handoff): what
    the injected latency added beyond its truth. Near 0 means the bench measures the network
    faithfully; None without an RTT-0 group in the same result."""


def group_key(trial: Trial) -> GroupKey:
    return (trial.level, trial.session, trial.context, trial.rtt_ms, trial.history_turns)


def group_trials(trials: Sequence[Trial]) -> dict[GroupKey, list[Trial]]:
    """Trials by (level, session, context, rtt_ms, history_turns), in table order."""
    groups: dict[GroupKey, list[Trial]] = {}
    for trial in trials:
        groups.setdefault(group_key(trial), []).append(trial)
    return {key: groups[key] for key in sorted(groups, key=_order)}


_MODE_RANK: dict[tuple[str, str], int] = {mode: i for i, mode in enumerate(REALTIME_MODES)}


def _order(key: GroupKey) -> tuple[int, bool, float, int, int, str]:
    level, session, context, rtt, history = key
    level_rank = LEVELS.index(level) if level in LEVELS else len(LEVELS)
    mode_rank = _MODE_RANK.get(
        (session, context), len(REALTIME_MODES)
    )  # cascaded after the realtime modes
    return (level_rank, rtt is None, rtt or 0.0, history, mode_rank, f"{level}{session}{context}")


def summary_table(result: BenchmarkResult, timing: str = "reply_ms") -> list[ModeSummary]:
    """One row per group, ordered by level, RTT, history, then the REALTIME_MODES order."""
    rows = []
    for (level, session, context, rtt, history), trials in group_trials(result.trials).items():
        summary = summarize(values(trials, timing))
        truths = values(trials, TRUTH_OF[timing]) if timing in TRUTH_OF else []
        truth_ms = float(np.median(truths)) if truths else None
        excess = summary.median - truth_ms if summary and truth_ms is not None else None
        rows.append(
            ModeSummary(
                level=level,
                session=session,
                context=context,
                rtt_ms=rtt,
                history_turns=history,
                timing=timing,
                summary=summary,
                failed=sum(not t.ok for t in trials),
                truth_ms=truth_ms,
                excess_ms=excess,
                excess_rtts=excess / rtt if excess is not None and rtt else None,
            )
        )
    return _with_latency_error(rows)


def _with_latency_error(rows: list[ModeSummary]) -> list[ModeSummary]:
    at_rtt0 = {
        (r.level, r.session, r.context, r.history_turns): r.excess_ms for r in rows if r.rtt_ms == 0
    }
    out = []
    for row in rows:
        base = at_rtt0.get((row.level, row.session, row.context, row.history_turns))
        if row.rtt_ms and row.excess_ms is not None and base is not None:
            row = replace(row, latency_error_ms=row.excess_ms - base)
        out.append(row)
    return out


@dataclass(frozen=True)
class Comparison(_Group):
    """How one group's timing changed from result a to result b: ratio = median(b)/median(a)."""

    a: Summary
    b: Summary
    ratio: float | None
    """None when median(a) is 0 (no meaningful ratio)"""
    ci_low: float | None
    ci_high: float | None


def compare(a: BenchmarkResult, b: BenchmarkResult, timing: str = "reply_ms") -> list[Comparison]:
    """The groups with values in both results, with a bootstrap 95% CI of the median ratio."""
    groups_b = group_trials(b.trials)
    comparisons = []
    for key, trials_a in group_trials(a.trials).items():
        va, vb = values(trials_a, timing), values(groups_b.get(key, []), timing)
        sa, sb = summarize(va), summarize(vb)
        if sa is None or sb is None:
            continue
        ratio = ci_low = ci_high = None
        if sa.median != 0:
            rng = np.random.default_rng(SEED)
            # a resample of a can still have median 0: its ratio is inf and only widens the CI
            medians_b = _bootstrap_medians(np.asarray(vb), rng)
            medians_a = _bootstrap_medians(np.asarray(va), rng)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = medians_b / medians_a
            ratio = sb.median / sa.median
            ci_low, ci_high = (float(v) for v in np.percentile(ratios, [2.5, 97.5]))
        level, session, context, rtt, history = key
        comparisons.append(
            Comparison(
                level, session, context, rtt, history, timing, sa, sb, ratio, ci_low, ci_high
            )
        )
    return comparisons


def format_table(rows: Sequence[ModeSummary]) -> str:
    """A fixed-width text table of summary rows (what the CLI prints), ms unless noted."""
    header = [
        "level", "mode", "rtt", "history", "n", "median", "p90", "p95", "IQR",
        "95% CI median", "truth", "excess ms", "excess RTTs", "vs RTT 0", "failed",
    ]  # fmt: skip
    lines = [header]
    for row in rows:
        s = row.summary
        stats = (
            [str(s.n), _num(s.median), _num(s.p90), _num(s.p95), _num(s.iqr),
             f"{s.ci_low:.1f}..{s.ci_high:.1f}"]
            if s else ["0", "-", "-", "-", "-", "-"]
        )  # fmt: skip
        lines.append(
            [row.level, row.mode, _num(row.rtt_ms, 0), str(row.history_turns), *stats,
             _num(row.truth_ms), _num(row.excess_ms, signed=True),
             _num(row.excess_rtts, 2, signed=True), _num(row.latency_error_ms, signed=True),
             str(row.failed)]
        )  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    # text columns flush left, numbers flush right so their digits line up
    text = []
    for line in lines:
        cells = zip(line, widths, strict=True)
        text.append(
            "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(cells))
        )
    timing = rows[0].timing if rows else "timing"
    return "\n".join([f"{timing} (ms)", *text])


def _num(value: float | None, digits: int = 1, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_comparisons(rows: Sequence[Comparison], *, a: str = "a", b: str = "b") -> str:
    """One line per group: the two medians and their ratio with its 95% CI."""
    lines = [f"{'level':<9} {'mode':<16} {'rtt':>5} {'history':>7} {a:>10} {b:>10}  ratio (95% CI)"]
    for row in rows:
        ratio = (
            f"{row.ratio:.3f} ({_num(row.ci_low, 3)}..{_num(row.ci_high, 3)})"
            if row.ratio is not None
            else "-"
        )
        lines.append(
            f"{row.level:<9} {row.mode:<16} {_num(row.rtt_ms, 0):>5} {row.history_turns:>7} "
            f"{row.a.median:>10.1f} {row.b.median:>10.1f}  {ratio}"
        )
    return "\n".join(lines)
