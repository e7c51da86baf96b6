"""Whether BenchmarkView's redraws perturb the trials it shows (issue 23: a notebook's view
showed Gemini medians of 132/103 ms where a plain script measured 50/49 ms).

Runs the same small grid (both providers, the bench's pair, RTT 0, history 2) in rounds that
alternate the arms, in one process so the machine's load falls on every arm alike:

- ``cli``: ``run_benchmark`` with no progress callback, as ``notebook-agents bench`` measures;
- ``view``: the same with ``progress=view.add_trial`` of a live ``BenchmarkView`` (its table,
  plot and progress redraws on);

and prints each arm's median reply_ms and handoff_ms per provider and mode (all rounds'
trials pooled) and the view's median minus the CLI's.

    PYTHONPATH=. .venv/bin/python benchmarks/benchmark_view_perturbation.py --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections import defaultdict
from typing import Any

from notebook_agents.bench import BenchmarkConfig
from notebook_agents.bench.results import Trial
from notebook_agents.bench.run import run_benchmark
from notebook_agents.views.benchmark_view import BenchmarkView

TIMINGS = ("reply_ms", "handoff_ms")


async def one_round(arm: str, config: BenchmarkConfig) -> list[Trial]:
    if arm == "cli":
        return (await run_benchmark(config)).trials
    view = BenchmarkView(config)
    try:
        return (await view.run()).trials
    finally:
        view.close()


async def main(rounds: int, trials: int, providers: list[str]) -> None:
    config = BenchmarkConfig(
        providers=providers,
        levels=["agent"],
        rtts_ms=[0.0],
        history_turns=[2],
        trials=trials,
        warmup=1,
    )
    arms = ("cli", "view")
    found: dict[str, list[Trial]] = defaultdict(list)
    for i in range(rounds):
        for arm in arms if i % 2 == 0 else arms[::-1]:  # alternate who goes first
            found[arm] += await one_round(arm, config)
    groups: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: {arm: defaultdict(list) for arm in arms}
    )
    for arm, kept in found.items():
        for t in kept:
            for timing in TIMINGS:
                value: Any = getattr(t, timing)
                if t.ok and value is not None:
                    groups[(t.provider, t.mode)][arm][timing].append(value)
    print(f"{rounds} rounds x {trials} trials per mode, RTT 0, history 2; medians in ms")
    for arm, kept in found.items():
        failed = [t for t in kept if not t.ok]
        print(f"{arm}: {len(kept)} trials, {len(failed)} failed", *(t.error for t in failed[:1]))
    head = ("provider", "mode", "timing", "n", "cli", "view", "view-cli")
    print("{:8} {:14} {:10} {:>4} {:>7} {:>7} {:>9}".format(*head))
    for (provider, mode), by_arm in sorted(groups.items()):
        for timing in TIMINGS:
            cli, view = by_arm["cli"][timing], by_arm["view"][timing]
            if not cli or not view:
                continue
            a, b = statistics.median(cli), statistics.median(view)
            print(
                f"{provider:8} {mode:14} {timing:10} {len(cli):>4} {a:7.1f} {b:7.1f} {b - a:+9.1f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--provider", default="openai,gemini")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.trials, args.provider.split(",")))
