"""``notebook-agents bench``: run, show progress, write results and plots, print the summary."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any, TextIO, cast

from .results import BenchmarkConfig, BenchmarkResult, Level, Trial
from .run import run_benchmark

_LEVELS = ("agent", "session", "cascaded")


def config_from_args(args: argparse.Namespace) -> BenchmarkConfig:
    """The benchmark the command line asks for; ValueError names a bad argument."""
    levels = [level.strip() for level in args.level.split(",")]
    for level in levels:
        if level not in _LEVELS:
            raise ValueError(f"--level {level!r}: use one of {', '.join(_LEVELS)}")
    return BenchmarkConfig(
        levels=[cast(Level, level) for level in levels],
        rtts_ms=_numbers("--rtt", args.rtt, float),
        history_turns=_numbers("--history", args.history, int),
        trials=_positive("--trials", args.trials),
        warmup=max(args.warmup, 0),
        timeout_s=args.timeout,
        target=args.base_url or "emulator",
        traced=args.trace,
    )


def run_from_args(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        out = results_directory(Path(args.out))
    except ValueError as e:
        print(f"notebook-agents bench: {e}", file=sys.stderr)
        return 2
    bar = ProgressBar(sys.stderr)
    try:
        result = asyncio.run(run_benchmark(config, api_key=args.api_key, progress=bar.update))
    except ValueError as e:
        print(f"notebook-agents bench: {e}", file=sys.stderr)
        return 2
    bar.close()
    from . import plots
    from .stats import compare, format_comparisons, format_table, summary_table

    written = [result.save_json(out / "results.json"), result.save_csv(out / "results.csv")]
    plain, traced = result.split_traced()
    written += plots.save_all(plain, out)
    for timing in ("handoff_ms", "reply_ms"):
        print("\n" + format_table(summary_table(plain, timing=timing)))
    if traced.trials:
        print("\nobserver cost: reply_ms without and with a Trace attached (interleaved)")
        print(format_comparisons(compare(plain, traced), a="untraced", b="traced"))
    summary, status = outcome(result)
    print("\n" + summary)
    for trial in result.failed_trials()[:5]:
        print(f"  failed {trial.level} {trial.mode} rtt={trial.rtt_ms}: {trial.error}")
    print("wrote " + ", ".join(str(path) for path in written))
    return status


def outcome(result: BenchmarkResult) -> tuple[str, int]:
    """The summary line and exit status: the run fails (1) only when no trial measured
    anything; a partial failure is still a result (0), its failures counted."""
    failed, total = len(result.failed_trials()), len(result.trials)
    head = f"{total} trials in {result.duration_s:.1f} s"
    if failed and failed == total:
        return f"{head}, all {failed} failed: no timing measured", 1
    return f"{head}, {failed or 'none'} failed", 0


def results_directory(out: Path) -> Path:
    """``--out``, made before the run; ValueError names what is in the way."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        # mkdir says "File exists" or "Not a directory": name the file that is in the way
        blocker = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
        problem = f"{blocker} is a file, not a directory" if blocker else e.strerror
        raise ValueError(f"--out {out}: {problem}; pass a directory path") from None
    return out


class ProgressBar:
    """A one-line progress bar on a terminal; plain lines elsewhere (CI logs)."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self._last_percent = -1

    def update(self, done: int, total: int, trial: Trial) -> None:
        percent = done * 100 // max(total, 1)
        status = "ok" if trial.ok else "FAILED"
        label = f"{trial.level} {trial.mode} rtt={trial.rtt_ms} h={trial.history_turns}"
        if self.tty:
            filled = self.width * done // max(total, 1)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(f"\r[{bar}] {done}/{total} {label} {status}\x1b[K")
        elif percent // 10 != self._last_percent // 10 or not trial.ok:
            self.stream.write(f"{done}/{total} ({percent}%) {label} {status}\n")
        self._last_percent = percent
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _numbers(flag: str, raw: str, kind: Any) -> list[Any]:
    try:
        values = [kind(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"{flag} {raw!r}: expected comma-separated numbers, e.g. 0,20,100"
        ) from None
    if not values or any(v < 0 for v in values):
        raise ValueError(f"{flag} {raw!r}: expected one or more numbers >= 0")
    return values


def _positive(flag: str, value: int) -> int:
    if value < 1:
        raise ValueError(f"{flag} {value}: must be at least 1")
    return value
