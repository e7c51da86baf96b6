"""Benchmark statistics: robust summaries per mode, the excess over ground truth, comparisons.

Medians and bootstrap CIs rather than means: handoff timings have long right tails (a GC pause,
a scheduler hiccup), and one outlier should not move the headline figure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .._table import ABSENT, Column, Table, number
from ..analysis.phases.names import HANDOFF_PHASES
from ..modes import MODE_COLORS, REALTIME_MODES, mode_label
from .livekit_warnings import LIVEKIT_WARNINGS, warned_note, warning_note
from .results import BenchmarkResult, Trial, phase_names, timing_title, values

RESAMPLES = 2000
SEED = 20260401
"""fixed, so the same trials always give the same CI (tables and plots agree run to run)"""

LEVELS = ("agent", "session", "cascaded")
TRUTH_OF = {
    "reply_ms": "truth_reply_ms",
    "handoff_ms": "truth_handoff_ms",
    "first_audio_ms": "truth_first_audio_ms",
}
"""the timings the emulator knows the ground truth of, and the column holding it"""

Floats = npt.NDArray[np.float64]
GroupKey = tuple[str, str, str, str, float | None, int]
"""(provider, level, session, context, rtt_ms, history_turns): the session and context that
ran, as the trace says"""


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
    """Which trials a row describes: a mode that ran, on one provider, at one level, RTT and
    history length; ``asked`` says which other modes its trials asked for, and why not."""

    provider: str
    level: str
    session: str
    context: str
    rtt_ms: float | None
    history_turns: int
    timing: str
    asked: str | None

    @property
    def mode(self) -> str:
        return mode_label(self.session, self.context)

    def cites(self) -> str:
        """The row's cells that point at notes under the table by number."""
        return self.asked or ""


@dataclass(frozen=True)
class ModeSummary(_Group):
    """One row of the summary table."""

    summary: Summary | None
    """None when no trial of the group gave this timing (e.g. all failed)"""
    failed: int
    truth_ms: float | None
    """median ground truth (emulator only: handoff_ms, reply_ms, and first_audio_ms of audio)"""
    excess_ms: float | None
    excess_rtts: float | None
    """excess_ms in units of the injected RTT; None at RTT 0 or unknown"""
    latency_error_ms: float | None = None
    """excess_ms minus the same group's excess at RTT 0 (the client's own CPU per handoff): what
    the injected latency added beyond its truth. Near 0 means the bench measures the network
    faithfully; None without an RTT-0 group in the same result."""
    warned: str | None = None
    """what livekit warned on the group's trials that bears on the handoff (``warned_note``)"""

    def cites(self) -> str:
        return f"{super().cites()} {self.warned or ''}"


def group_key(trial: Trial) -> GroupKey:
    return (
        trial.provider,
        trial.level,
        trial.session,
        trial.context,
        trial.rtt_ms,
        trial.history_turns,
    )


def asked_note(trials: Sequence[Trial], numbers: Mapping[str, int]) -> str | None:
    """The modes these trials asked for that did not run, each with how many and the number
    of its reason in ``numbers`` (said under the table): ``"reused+copied ×3 [1]"``; None when
    every trial ran as asked."""
    differ = Counter((t.asked_mode, t.reason) for t in trials if t.asked_mode != t.mode)
    if not differ:
        return None
    return "; ".join(
        f"{mode} ×{n}" + (f" [{numbers[reason]}]" if reason else "")
        for (mode, reason), n in differ.items()
    )


def note_numbers(trials: Sequence[Trial]) -> dict[str, int]:
    """Each distinct note a cell points at, numbered in table order from 1: a reason a trial
    did not run as asked, a warning livekit logged (``warning_note``). The same numbers in
    every table of one result, so the CLI says each note once."""
    notes: dict[str, None] = {}
    for group in group_trials(trials).values():
        notes.update(dict.fromkeys(t.reason for t in group if t.reason))
        warned = {name for t in group for name in t.livekit_warned}
        notes.update(dict.fromkeys(warning_note(n) for n in LIVEKIT_WARNINGS if n in warned))
    return {note: i for i, note in enumerate(notes, 1)}


def _footnotes(rows: Sequence[_Group], numbers: Mapping[str, int]) -> tuple[str, ...]:
    """The notes the rows' cells point at, in their numbers' order."""
    cited = " ".join(row.cites() for row in rows)
    return tuple(f"[{n}] {note}" for note, n in numbers.items() if f"[{n}]" in cited)


def group_trials(trials: Sequence[Trial]) -> dict[GroupKey, list[Trial]]:
    """Trials by (provider, level, session, context, rtt_ms, history_turns), in table order."""
    groups: dict[GroupKey, list[Trial]] = {}
    for trial in trials:
        groups.setdefault(group_key(trial), []).append(trial)
    return {key: groups[key] for key in sorted(groups, key=_order)}


_MODE_RANK: dict[tuple[str, str], int] = {mode: i for i, mode in enumerate(REALTIME_MODES)}


def _order(key: GroupKey) -> tuple[int, bool, float, int, str, int, str]:
    provider, level, session, context, rtt, history = key
    level_rank = LEVELS.index(level) if level in LEVELS else len(LEVELS)
    mode_rank = _MODE_RANK.get(
        (session, context), len(REALTIME_MODES)
    )  # cascaded after the realtime modes
    return (
        level_rank,
        rtt is None,
        rtt or 0.0,
        history,
        provider,
        mode_rank,
        f"{level}{session}{context}",
    )


def summary_table(result: BenchmarkResult, timing: str = "reply_ms") -> Table[ModeSummary]:
    """One row per group, ordered by level, RTT, history, then the REALTIME_MODES order; shown
    as text by ``str()``, as HTML in a notebook."""
    rows = []
    numbers = note_numbers(result.trials)
    for key, trials in group_trials(result.trials).items():
        provider, level, session, context, rtt, history = key
        summary = summarize(values(trials, timing))
        truths = values(trials, TRUTH_OF[timing]) if timing in TRUTH_OF else []
        truth_ms = float(np.median(truths)) if truths else None
        excess = summary.median - truth_ms if summary and truth_ms is not None else None
        rows.append(
            ModeSummary(
                provider=provider,
                level=level,
                session=session,
                context=context,
                rtt_ms=rtt,
                history_turns=history,
                timing=timing,
                asked=asked_note(trials, numbers),
                summary=summary,
                failed=sum(not t.ok for t in trials),
                truth_ms=truth_ms,
                excess_ms=excess,
                excess_rtts=excess / rtt if excess is not None and rtt else None,
                warned=warned_note(trials, numbers),
            )
        )
    return Table(
        f"{timing_title(timing)}, ms",
        SUMMARY_COLUMNS,
        _with_latency_error(rows),
        _footnotes(rows, numbers),
    )


def _with_latency_error(rows: list[ModeSummary]) -> tuple[ModeSummary, ...]:
    def same(r: ModeSummary) -> tuple[str, str, str, str, int]:
        return (r.provider, r.level, r.session, r.context, r.history_turns)

    at_rtt0 = {same(r): r.excess_ms for r in rows if r.rtt_ms == 0}
    out = []
    for row in rows:
        base = at_rtt0.get(same(row))
        if row.rtt_ms and row.excess_ms is not None and base is not None:
            row = replace(row, latency_error_ms=row.excess_ms - base)
        out.append(row)
    return tuple(out)


@dataclass(frozen=True)
class Comparison(_Group):
    """How one group's timing changed from result a to result b: ratio = median(b)/median(a)."""

    a: Summary
    b: Summary
    ratio: float | None
    """None when median(a) is 0 (no meaningful ratio)"""
    ci_low: float | None
    ci_high: float | None


def compare(
    a: BenchmarkResult,
    b: BenchmarkResult,
    timing: str = "reply_ms",
    *,
    names: tuple[str, str] = ("a", "b"),
) -> Table[Comparison]:
    """The groups with values in both results, with a bootstrap 95% CI of the median ratio;
    ``names`` head the two results' columns."""
    groups_b = group_trials(b.trials)
    numbers = note_numbers(a.trials)
    comparisons: list[Comparison] = []
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
        comparisons.append(
            Comparison(*key, timing, asked_note(trials_a, numbers), sa, sb, ratio, ci_low, ci_high)
        )
    name_a, name_b = names
    columns = (
        *_GROUP_COLUMNS,
        Column[Comparison]("a", name_a, lambda c: number(c.a.median), f"median of {name_a} (ms)"),
        Column[Comparison]("b", name_b, lambda c: number(c.b.median), f"median of {name_b} (ms)"),
        Column[Comparison](
            "ratio", "ratio", lambda c: number(c.ratio, 3), f"median of {name_b} / of {name_a}"
        ),
        Column[Comparison](
            "ratio_ci",
            "95% CI",
            lambda c: _interval(c.ci_low, c.ci_high, 3),
            "bootstrap 95% confidence interval of the ratio",
            note="95% CI: the ratio's bootstrap 95% confidence interval",
        ),
    )
    return Table(
        f"{timing_title(timing)}, ms: {name_a} vs {name_b}",
        columns,
        tuple(comparisons),
        _footnotes(comparisons, numbers),
    )


WAIT = "wait"
"""the phase table's row of a handoff's whole wait: its critical phases added up"""


def phase_goal_ms(rtt_ms: float | None) -> float | None:
    """How far from its truth a phase may be (the issue's goal): 0.1 RTT + 3 ms."""
    return None if rtt_ms is None else 0.1 * rtt_ms + 3.0


@dataclass(frozen=True)
class PhaseSummary(_Group):
    """One row of the phase table: a phase of one mode's handoffs (``timing`` is its name)."""

    critical: bool
    """on the critical path in most of the trials (else it ran beside)"""
    summary: Summary | None
    """of the phase's milliseconds"""
    truth_ms: float | None
    client: Summary | None
    """of each trial's phase minus its truth: the client's own time, with its CI"""
    livekit_ms: float | None
    """the median of livekit's own figure for the phase"""

    @property
    def goal_ms(self) -> float | None:
        return phase_goal_ms(self.rtt_ms) if self.timing != WAIT else None

    @property
    def meets(self) -> bool | None:
        """Whether the median client time is within the goal of the truth."""
        goal = self.goal_ms
        if goal is None or self.client is None:
            return None
        return abs(self.client.median) <= goal


def phase_table(result: BenchmarkResult) -> Table[PhaseSummary]:
    """Each mode's handoffs phase by phase (``--phases``): median and CI of each phase, its
    truth, the client's time beyond it with its CI, and whether that is within the goal; then
    the whole wait (the critical phases added up)."""
    rows: list[PhaseSummary] = []
    names = phase_names(result.trials)
    numbers = note_numbers(result.trials)
    for key, trials in group_trials(result.trials).items():
        provider, level, session, context, rtt, history = key
        timed = [t for t in trials if t.ok and t.phases]
        if not timed:
            continue
        for name in [*names, WAIT]:
            found = [_phase_or_wait(t, name) for t in timed]
            present = [f for f in found if f is not None]
            if not present:
                continue
            ms = [f[0] for f in present]
            truths = [f[1] for f in present if f[1] is not None]
            clients = [f[0] - f[1] for f in present if f[1] is not None]
            livekit = [f[2] for f in present if f[2] is not None]
            rows.append(
                PhaseSummary(
                    provider=provider,
                    level=level,
                    session=session,
                    context=context,
                    rtt_ms=rtt,
                    history_turns=history,
                    timing=name,
                    asked=asked_note(timed, numbers),
                    critical=2 * sum(f[3] for f in present) >= len(present),
                    summary=summarize(ms),
                    truth_ms=float(np.median(truths)) if truths else None,
                    client=summarize(clients),
                    livekit_ms=float(np.median(livekit)) if livekit else None,
                )
            )
    return Table("handoff phases, ms", PHASE_COLUMNS, tuple(rows), _footnotes(rows, numbers))


def _phase_or_wait(
    trial: Trial, name: str
) -> tuple[float, float | None, float | None, bool] | None:
    """(ms, truth, livekit's figure, critical) of a trial's phase, or of its whole wait."""
    if name != WAIT:
        found = trial.phases.get(name)
        if found is None:
            return None
        return found.ms, found.truth_ms, found.livekit_ms, found.critical
    path = [p for p in trial.phases.values() if p.critical]
    truths = [p.truth_ms for p in path]
    truth = sum(t for t in truths if t is not None) if None not in truths else None
    return sum(p.ms for p in path), truth, None, True


# ------------------------------------------------------------------------------- columns

_GROUP_COLUMNS: tuple[Column[Any], ...] = (
    Column(
        "provider",
        "provider",
        lambda r: r.provider,
        "whose realtime model ran the trials",
        words=True,
        fold="",
    ),
    Column(
        "level",
        "level",
        lambda r: r.level,
        "agent: a full AgentSession; session: a bare realtime session (upstream's test); "
        "cascaded: a chat model, no realtime session",
        words=True,
        fold="",
    ),
    Column(
        "mode",
        "mode",
        lambda r: r.mode,
        "the realtime session reused or fresh, the chat context copied or empty",
        words=True,
        color=lambda r: MODE_COLORS.get(r.mode),
    ),
    Column(
        "asked",
        "asked",
        lambda r: r.asked or ABSENT,
        "the modes the trials asked for that livekit did not run, how many, and [the "
        "number of the reason] said under the table",
        words=True,
        note="asked: trials are grouped by the mode their trace says ran; this names the "
        "mode some asked for instead, how many, and [the number of] why it did not run.",
        optional=True,
    ),
    Column(
        "rtt_ms", "RTT", lambda r: number(r.rtt_ms, 0), "injected round-trip time (ms)", fold=" ms"
    ),
    Column(
        "history_turns",
        "history",
        lambda r: str(r.history_turns),
        "turns of history before the handoff",
        fold=" turns",
    ),
)
"""which trials a row describes"""


def _stat(key: str, header: str, meaning: str) -> Column[ModeSummary]:
    return Column(
        key, header, lambda r: number(getattr(r.summary, key)) if r.summary else ABSENT, meaning
    )


def _interval(low: float | None, high: float | None, digits: int = 1) -> str:
    return ABSENT if low is None or high is None else f"{low:.{digits}f}..{high:.{digits}f}"


def _median_ci() -> Column[Any]:
    """The median's confidence interval, in the summary and the phase tables alike."""
    return Column(
        "ci",
        "95% CI",
        lambda r: _interval(r.summary.ci_low, r.summary.ci_high) if r.summary else ABSENT,
        "bootstrap 95% confidence interval of the median (ms)",
        note=f"95% CI: the median's bootstrap 95% confidence interval ({RESAMPLES} resamples).",
    )


SUMMARY_COLUMNS: tuple[Column[ModeSummary], ...] = (
    *_GROUP_COLUMNS,
    Column("n", "n", lambda r: str(r.summary.n if r.summary else 0), "trials that gave a value"),
    _stat("median", "median", "median (ms)"),
    _stat("p90", "p90", "90th percentile (ms)"),
    _stat("p95", "p95", "95th percentile (ms)"),
    _stat("iqr", "IQR", "interquartile range: the middle half of the trials spans this (ms)"),
    _median_ci(),
    Column(
        "truth_ms",
        "truth",
        lambda r: number(r.truth_ms),
        "what the injected network delays alone cost (emulator only, ms)",
        note="truth: what the injected network delays alone cost, from the emulator's model.",
        optional=True,
    ),
    Column(
        "excess_ms",
        "excess",
        lambda r: number(r.excess_ms, signed=True),
        "median minus truth: the client's own work (ms)",
        note="excess: median minus truth, the client's own work; in RTTs: divided by the RTT.",
        optional=True,
    ),
    Column(
        "excess_rtts",
        "in RTTs",
        lambda r: number(r.excess_rtts, 2, signed=True),
        "the excess in units of the injected RTT",
        optional=True,
    ),
    Column(
        "latency_error_ms",
        "vs RTT 0",
        lambda r: number(r.latency_error_ms, signed=True),
        "the excess minus the same mode's excess at RTT 0 (ms)",
        note="vs RTT 0: the excess minus the same mode's excess at RTT 0: what the injected "
        "latency added beyond its truth (near 0: the network is measured faithfully).",
        optional=True,
    ),
    Column("failed", "failed", lambda r: str(r.failed), "failed trials"),
    Column(
        "warned",
        "livekit warned",
        lambda r: r.warned or ABSENT,
        "what livekit warned during the trials that bears on the handoff, on how many, and "
        "[the number of] what it means, said under the table",
        words=True,
        note="livekit warned: what livekit warned during the trials (which still measured "
        "the handoff), on how many, and [the number of] what it means and the fix.",
        optional=True,
    ),
)
"""the summary table's columns, in the CLI, a notebook and BenchmarkView alike"""


def _meets(row: PhaseSummary) -> str:
    return ABSENT if row.meets is None else "yes" if row.meets else "no"


PHASE_COLUMNS: tuple[Column[PhaseSummary], ...] = (
    *_GROUP_COLUMNS,
    Column(
        "phase",
        "phase",
        lambda r: r.timing if r.critical else f"({r.timing})",
        "the handoff's phase (in parentheses: it ran beside the critical path); wait: the "
        "critical phases added up",
        words=True,
        note="phase: in parentheses, one that ran beside the critical path; wait: the "
        "critical phases added up."
        + "".join(f"\n  {name}: {meaning}" for name, meaning in HANDOFF_PHASES.items()),
    ),
    Column("n", "n", lambda r: str(r.summary.n if r.summary else 0), "trials that had it"),
    Column(
        "median", "median", lambda r: number(r.summary.median if r.summary else None), "median (ms)"
    ),
    _median_ci(),
    Column(
        "truth_ms",
        "truth",
        lambda r: number(r.truth_ms),
        "the network's share of the phase, from the emulator's model (ms)",
        # as the summary table says it: said once under both
        note="truth: what the injected network delays alone cost, from the emulator's model.",
        optional=True,
    ),
    Column(
        "client_ms",
        "client",
        lambda r: number(r.client.median, signed=True) if r.client else ABSENT,
        "the median of each trial's phase minus its truth: the client's own time (ms)",
        note="client: the median of each trial's phase minus its truth, the client's own "
        "time, with its 95% CI.",
        optional=True,
    ),
    Column(
        "client_ci",
        "client CI",
        lambda r: _interval(r.client.ci_low, r.client.ci_high) if r.client else ABSENT,
        "bootstrap 95% confidence interval of the client's median (ms)",
        optional=True,
    ),
    Column(
        "goal_ms",
        "goal",
        lambda r: number(r.goal_ms) if r.client else ABSENT,
        "0.1 RTT + 3 ms: how far from its truth a phase may be (ms)",
        note="goal: a phase within 0.1 RTT + 3 ms of its truth; met: its client median is.",
        optional=True,
    ),
    Column("meets", "met", _meets, "whether the client median is within the goal", optional=True),
    Column(
        "livekit_ms",
        "livekit",
        lambda r: number(r.livekit_ms),
        "the median of livekit's own figure for the phase: its span's duration, the "
        "connect's acquire_time, the reply's ttft (ms)",
        note="livekit: livekit's own figure for the phase (its span, acquire_time, ttft).",
        optional=True,
    ),
)
"""the phase table's columns"""
