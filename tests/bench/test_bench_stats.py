"""Benchmark statistics, checked against numpy computed here on generated data."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from notebook_agents.bench.results import BenchmarkConfig, BenchmarkResult, PhaseTiming, Trial
from notebook_agents.bench.stats import (
    Summary,
    compare,
    phase_table,
    summarize,
    summary_table,
)
from notebook_agents.modes import REALTIME_MODES, mode_label

CASCADED_MODES = (("none", "copied"), ("none", "empty"))


def latencies(n: int, *, seed: int, base: float = 50.0, scale: float = 1.0) -> list[float]:
    """Handoff-like timings: a floor plus a long right tail."""
    rng = np.random.default_rng(seed)
    return [scale * v for v in (base + rng.lognormal(1.0, 0.8, n)).tolist()]


def trials_for(
    reply: list[float],
    *,
    level: str = "agent",
    session: str = "reused",
    context: str = "copied",
    rtt: float | None = 20.0,
    history: int = 10,
    truth: float | None = None,
    failed: int = 0,
) -> list[Trial]:
    """One group's trials: ``reply`` as reply_ms (and handoff_ms at half), then ``failed`` ones."""
    group: dict[str, Any] = {
        "level": level, "session": session, "context": context, "rtt_ms": rtt,
        "history_turns": history,
    }  # fmt: skip
    ok = [
        Trial(
            **group, trial=i, reply_ms=r, handoff_ms=r / 2, update_ms=r / 4, truth_reply_ms=truth,
            truth_handoff_ms=None if truth is None else truth / 2,
        )
        for i, r in enumerate(reply)
    ]  # fmt: skip
    bad = [Trial(**group, trial=len(reply) + i, ok=False, error="timeout") for i in range(failed)]
    return ok + bad


def result_of(trials: list[Trial]) -> BenchmarkResult:
    return BenchmarkResult(config=BenchmarkConfig(), trials=trials)


def test_summary_matches_numpy_percentiles() -> None:
    data = latencies(101, seed=1)
    s = summarize(data)
    assert s is not None
    q1, median, q3, p90, p95 = np.percentile(data, [25, 50, 75, 90, 95])
    assert s.n == len(data)
    assert (s.median, s.p90, s.p95, s.q1, s.q3) == pytest.approx((median, p90, p95, q1, q3))
    assert s.iqr == pytest.approx(q3 - q1)


def test_median_ci_contains_the_median_and_narrows_with_more_samples() -> None:
    few, many = summarize(latencies(15, seed=2)), summarize(latencies(1500, seed=3))
    assert few is not None and many is not None
    for s in (few, many):
        assert s.ci_low <= s.median <= s.ci_high
    assert many.ci_high - many.ci_low < (few.ci_high - few.ci_low) / 3


def test_summary_is_reproducible() -> None:
    # a fixed seed: the same trials print the same CI in every table and plot
    data = latencies(30, seed=4)
    assert summarize(data) == summarize(list(data))


def test_empty_and_single_value() -> None:
    assert summarize([]) is None
    assert summarize([42.0]) == Summary(1, 42.0, 42.0, 42.0, 42.0, 42.0, 0.0, 42.0, 42.0)


@pytest.mark.parametrize("rtt", [20.0, 100.0])
def test_excess_over_truth_in_ms_and_rtts(rtt: float) -> None:
    truth = 3 * rtt
    reply = [truth + v for v in latencies(40, seed=5, base=0.0)]
    (row,) = summary_table(result_of(trials_for(reply, rtt=rtt, truth=truth)))
    excess = float(np.median(reply)) - truth
    assert row.truth_ms == truth
    assert row.excess_ms == pytest.approx(excess)
    assert row.excess_rtts == pytest.approx(excess / rtt)


def test_handoff_uses_its_own_truth_and_other_timings_have_none() -> None:
    reply = latencies(20, seed=6)
    result = result_of(trials_for(reply, truth=60.0))
    (handoff,) = summary_table(result, "handoff_ms")
    assert handoff.truth_ms == 30.0
    assert handoff.excess_ms == pytest.approx(float(np.median(reply)) / 2 - 30.0)
    (update,) = summary_table(result, "update_ms")
    assert update.summary is not None
    assert (update.truth_ms, update.excess_ms, update.excess_rtts) == (None, None, None)


def test_no_excess_in_rtts_at_rtt_zero_nor_any_for_a_foreign_target() -> None:
    (at_zero,) = summary_table(result_of(trials_for(latencies(10, seed=7), rtt=0.0, truth=50.0)))
    assert at_zero.excess_ms is not None and at_zero.excess_rtts is None
    (foreign,) = summary_table(result_of(trials_for(latencies(10, seed=8), rtt=None)))
    assert foreign.summary is not None
    assert (foreign.truth_ms, foreign.excess_ms, foreign.excess_rtts) == (None, None, None)


def test_latency_error_subtracts_the_same_groups_excess_at_rtt_zero() -> None:
    # the client's own CPU per handoff shows as excess at RTT 0; what the injected latency adds
    # beyond its truth is the excess at RTT r minus that
    base = latencies(30, seed=10, base=12.0)
    trials = trials_for(base, rtt=0.0, truth=0.0)
    trials += trials_for([v + 60.0 + 2.0 for v in base], rtt=20.0, truth=60.0)
    trials += trials_for(base, session="fresh", rtt=20.0, truth=0.0)  # no RTT-0 group of its own
    trials += trials_for(base, rtt=20.0, history=50, truth=0.0)  # nor at this history length
    at_zero, at_twenty, *others = summary_table(result_of(trials))
    assert at_zero.latency_error_ms is None
    assert at_twenty.latency_error_ms == pytest.approx(2.0)
    assert [row.latency_error_ms for row in others] == [None, None]


def test_failed_trials_are_counted_and_an_all_failed_group_has_no_summary() -> None:
    trials = trials_for(latencies(8, seed=9), failed=3)
    trials += trials_for([], session="fresh", failed=2)
    some_failed, all_failed = summary_table(result_of(trials))
    assert some_failed.summary is not None
    assert (some_failed.summary.n, some_failed.failed) == (8, 3)
    assert (all_failed.mode, all_failed.summary, all_failed.failed) == ("fresh+copied", None, 2)


def test_rows_group_and_order_by_level_rtt_history_then_mode() -> None:
    grid = [
        (level, rtt, history, session, context)
        for level in ("agent", "session", "cascaded")
        for rtt in (0.0, 20.0, 100.0)
        for history in (0, 50)
        for session, context in (CASCADED_MODES if level == "cascaded" else REALTIME_MODES)
    ]
    trials = []
    for seed, (level, rtt, history, session, context) in enumerate(grid):
        trials += trials_for(
            latencies(3, seed=seed), level=level, session=session, context=context, rtt=rtt,
            history=history,
        )  # fmt: skip
    random.Random(0).shuffle(trials)
    rows = summary_table(result_of(trials))
    assert [(r.level, r.rtt_ms, r.history_turns, r.session, r.context) for r in rows] == grid
    assert all(r.summary is not None and r.summary.n == 3 for r in rows)
    assert rows[-1].mode == "cascaded+empty"
    assert mode_label("fresh", "empty") == "fresh+empty"
    assert mode_label("none", "copied") == "cascaded+copied"


def test_compare_finds_the_ratio_of_data_twice_as_slow() -> None:
    data = latencies(200, seed=10)
    a = result_of(trials_for(data) + trials_for([50.0], session="fresh"))
    b = result_of(trials_for([2 * v for v in reversed(data)]))
    (comparison,) = compare(a, b)  # only the group present in both
    assert comparison.mode == "reused+copied"
    assert comparison.ratio == pytest.approx(2.0)
    assert comparison.ci_low is not None and comparison.ci_high is not None
    # a and b are resampled independently: the CI has a width, and it holds the true ratio
    assert comparison.ci_low < 2.0 < comparison.ci_high


def test_compare_skips_groups_without_values_on_one_side() -> None:
    a = result_of(trials_for(latencies(5, seed=12)))
    b = result_of(trials_for([], failed=5))
    assert len(compare(a, b)) == 0


def phased(rtt: float, session: str, drains: list[float], **phases: PhaseTiming) -> list[Trial]:
    """A group's trials whose handoffs drained in ``drains`` ms (truth: the RTT), each with
    ``phases`` too."""
    group: dict[str, Any] = {"level": "agent", "session": session, "context": "copied"}
    return [
        Trial(
            **group,
            rtt_ms=rtt,
            history_turns=10,
            trial=i,
            phases={"drain": PhaseTiming(d, truth_ms=rtt, livekit_ms=d - 0.5), **phases},
        )
        for i, d in enumerate(drains)
    ]


def test_phase_table_gives_each_phase_its_median_truth_client_time_and_the_goal() -> None:
    beside = PhaseTiming(2.0, truth_ms=0.0, critical=False)
    trials = phased(20.0, "reused", [21.0, 22.0, 29.0], on_enter=PhaseTiming(0.5, truth_ms=0.0))
    trials += phased(100.0, "fresh", [109.0, 111.0, 112.0], session_update=beside)
    trials.append(Trial("agent", "reused", "copied", 20.0, 10, 9, ok=False, error="timeout"))
    rows = {(r.rtt_ms, r.timing): r for r in phase_table(result_of(trials))}
    assert list(rows) == [
        (20.0, "drain"), (20.0, "on_enter"), (20.0, "wait"),
        (100.0, "drain"), (100.0, "session_update"), (100.0, "wait"),
    ]  # fmt: skip
    drain = rows[(20.0, "drain")]
    assert drain.summary is not None and drain.summary.median == 22.0
    assert drain.truth_ms == 20.0 and drain.livekit_ms == 21.5
    assert drain.client is not None and drain.client.median == 2.0
    assert drain.goal_ms == pytest.approx(5.0) and drain.meets
    slow = rows[(100.0, "drain")]
    assert slow.client is not None and slow.client.median == 11.0
    assert slow.goal_ms == pytest.approx(13.0) and slow.meets
    assert not rows[(100.0, "session_update")].critical
    # the wait: the critical phases added up, the one beside left out
    wait = rows[(100.0, "wait")]
    assert wait.summary is not None and wait.summary.median == 111.0 and wait.truth_ms == 100.0
    assert wait.goal_ms is None and wait.meets is None
    assert rows[(20.0, "wait")].summary.median == 22.5  # type: ignore[union-attr]


def test_a_phase_beyond_the_goal_is_marked_in_the_table() -> None:
    table = phase_table(result_of(phased(0.0, "reused", [4.0, 5.0, 6.0])))
    (drain, _) = table
    assert drain.goal_ms == 3.0 and drain.meets is False
    text = table.to_text()
    assert "goal" in text and " no" in text.splitlines()[2]
    assert "drain: the old agent's speech finishing" in text
