"""``notebook-agents bench``: run, show progress, write results and plots, print the summary."""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path
from typing import Any, TextIO, cast

from .._table import Table
from .livekit_warnings import warned_line
from .results import BenchmarkConfig, BenchmarkConfigError, BenchmarkResult, Level, Trial

HELP = "measure handoff latency: realtime session reused vs fresh, context copied vs empty"
DESCRIPTION = (
    "Measure what an agent handoff costs through the real LiveKit realtime plugin: offline "
    "against the emulator at each --rtt (with ground truth), or against any OpenAI-compatible "
    "--base-url. Writes results.json, results.csv and plots to --out."
)

_LEVELS = ("agent", "session", "cascaded")
TRIGGER_EXAMPLE = "Please transfer me to the pharmacy"
"""the --trigger the help and errors suggest: it hands off to a tool named like
``transfer_to_pharmacy`` or ``send_to_pharmacy`` (the emulator's reply rules)"""
_DEFAULT = BenchmarkConfig()
"""the command line's defaults are the API's"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    def numbers(values: list[Any]) -> str:
        return ",".join(f"{value:g}" for value in values)

    parser.add_argument(
        "--rtt",
        default=numbers(_DEFAULT.rtts_ms),
        help="injected round-trip times in ms, comma-separated; emulator only "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=_DEFAULT.trials,
        help="kept trials per mode and grid cell (default: %(default)s)",
    )
    parser.add_argument(
        "--history",
        default=numbers(_DEFAULT.history_turns),
        help="turns of history before the handoff, comma-separated, e.g. 0,10,50 "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--level",
        default=",".join(_DEFAULT.levels),
        help="agent (a full AgentSession), session (upstream's test), cascaded (no realtime "
        "model); comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--base-url",
        help="an OpenAI-compatible endpoint to measure instead of the emulator "
        "(default: the emulator)",
    )
    parser.add_argument(
        "--api-key", help="the key for --base-url (default: the OPENAI_API_KEY variable)"
    )
    parser.add_argument(
        "--timeout",
        type=_timeout_seconds,
        default=_DEFAULT.timeout_s,
        help="seconds a trial may take, > 0 (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=_DEFAULT.warmup,
        help="discarded rounds per grid cell (default: %(default)s)",
    )
    parser.add_argument(
        "--modality",
        choices=("text", "audio"),
        default=_DEFAULT.modality,
        help="B's realtime reply: text, or audio (spoken, paced as it plays; gives "
        "first_audio_ms) (default: %(default)s)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="also run every trial with a Trace attached, to measure what it costs (default: off)",
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="split each handoff into its phases (drain, connect, session update, on_enter, "
        "reply...), each beside its truth: per-phase medians and CIs per mode in the table, "
        "results and plots; attaches a Trace to every trial, so not with --trace "
        "(default: off)",
    )
    parser.add_argument(
        "--provider",
        default=",".join(_DEFAULT.providers),
        help="whose realtime models to measure, comma-separated, e.g. openai,gemini "
        "(default: %(default)s)",
    )
    yours = parser.add_argument_group(
        "your agents",
        "measure your own handoff instead of the bench's pair: name A (or your server) and the "
        "user turn that makes A's tool return B; B is whatever that tool returns",
    )
    named = yours.add_mutually_exclusive_group()
    named.add_argument(
        "--agents",
        metavar="MODULE:AGENT",
        help="A's Agent class (or a function making it), e.g. mymodule:FrontDesk or "
        "path/to/agents.py:FrontDesk; the bench's session runs it on each provider's model "
        "(default: the bench's own pair)",
    )
    named.add_argument(
        "--server",
        metavar="MODULE:SERVER",
        help="your AgentServer (server = AgentServer()) or a function making it, e.g. "
        "agent.py:server; run per trial as in a notebook, its entrypoint's models reaching "
        "the emulator through the provider's environment (OPENAI_BASE_URL, or "
        "GOOGLE_GEMINI_BASE_URL and SSL_CERT_FILE) (default: none)",
    )
    yours.add_argument(
        "--trigger",
        help=f"the user turn that makes A hand off, e.g. '{TRIGGER_EXAMPLE}' for a tool "
        "transfer_to_pharmacy; the emulator calls the tool whose name's words it says "
        "(default: none; needed with --agents or --server)",
    )
    yours.add_argument(
        "--handoff-to",
        metavar="MODULE:AGENT",
        help="B's class: a trial whose handoff went elsewhere fails, naming where "
        "(default: any agent)",
    )
    parser.add_argument(
        "--out",
        default="bench-results",
        help="directory for results.json, results.csv and the plots (default: %(default)s)",
    )


def _timeout_seconds(raw: str) -> float:
    """``--timeout``: a trial needs some time and must end (a run never hangs), so 0 < s < inf."""
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"{raw!r}: expected seconds > 0 and finite, e.g. 30")
    return seconds


def config_from_args(args: argparse.Namespace) -> BenchmarkConfig:
    """The benchmark the command line asks for; ``BenchmarkConfigError`` names a bad argument."""
    levels = [level.strip() for level in args.level.split(",")]
    for level in levels:
        if level not in _LEVELS:
            raise BenchmarkConfigError(f"--level {level!r}: use one of {', '.join(_LEVELS)}")
    if args.phases and args.trace:
        raise BenchmarkConfigError(
            "--phases attaches a Trace to every trial, --trace compares trials without and "
            "with one: pass one of them"
        )
    providers = [name.strip() for name in args.provider.split(",") if name.strip()]
    if not providers:
        raise BenchmarkConfigError(f"--provider {args.provider!r}: name one or more, e.g. openai")
    return BenchmarkConfig(
        providers=providers,
        agents=_your_agents(args),
        levels=[cast(Level, level) for level in levels],
        rtts_ms=_numbers("--rtt", args.rtt, float),
        history_turns=_numbers("--history", args.history, int),
        trials=_positive("--trials", args.trials),
        warmup=max(args.warmup, 0),
        timeout_s=args.timeout,
        target=args.base_url or "emulator",
        traced=args.trace,
        modality=args.modality,
        phases=args.phases,
    )


def _your_agents(args: argparse.Namespace) -> Any:
    """``--agents`` / ``--server`` with ``--trigger`` as the bench takes them; None without."""
    if args.agents is None and args.server is None:
        for flag, given in (("--trigger", args.trigger), ("--handoff-to", args.handoff_to)):
            if given is not None:
                raise BenchmarkConfigError(
                    f"{flag} goes with --agents or --server: name your agent A"
                )
        return None
    flag = "--agents" if args.agents is not None else "--server"
    if not args.trigger:
        raise BenchmarkConfigError(
            f"{flag} needs --trigger: the user turn that makes A hand off, e.g. "
            f"--trigger '{TRIGGER_EXAMPLE}' for a tool transfer_to_pharmacy"
        )
    from livekit.agents import Agent  # livekit: imported only when your agents are named

    from . import your_agents

    b = your_agents.load(args.handoff_to, "--handoff-to") if args.handoff_to else None
    if b is not None and not (isinstance(b, type) and issubclass(b, Agent)):
        raise BenchmarkConfigError(f"--handoff-to {args.handoff_to!r} is {b!r}, not an Agent class")
    if args.agents is not None:
        agent = your_agents.load_agent(args.agents)
        return your_agents.YourAgents(agent, args.trigger, b, label=args.agents)
    server = your_agents.load_server(args.server)
    return your_agents.YourServer(server, args.trigger, b, label=args.server)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark the arguments ask for: 0 once it measured something, 1 when every
    trial failed, 2 for a bad argument (the message names the fix)."""
    from .run import run_benchmark  # livekit: imported only when a run starts

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
    from .stats import compare, phase_table, summary_table

    written = [result.save_json(out / "results.json"), result.save_csv(out / "results.csv")]
    plain, traced = result.split_traced()
    written += plots.save_all(plain, out)
    timings = (
        "handoff_ms",
        "reply_ms",
        *(("first_audio_ms",) if config.modality == "audio" else ()),
    )
    tables: list[Table[Any]] = [summary_table(plain, timing=timing) for timing in timings]
    if traced.trials:  # what a Trace costs: the same trials, interleaved, without and with one
        tables.append(compare(plain, traced, names=("untraced", "traced")))
    if config.phases:
        tables.append(phase_table(plain))
    if config.agents is not None:
        print(f"\nyour agents: {config.agents.name}, handing off on {config.agents.trigger!r}")
    for table in tables:
        print("\n" + table.to_text(notes=False))
    # the tables share their columns' notes: each said once, after all of them
    print("\n" + "\n".join(dict.fromkeys(note for table in tables for note in table.notes())))
    summary, status = outcome(result)
    print("\n" + summary)
    for trial in result.failed_trials()[:5]:
        print(
            f"  failed {trial.provider} {trial.level} {trial.mode} rtt={trial.rtt_ms}: "
            f"{trial.error}"
        )
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
    """``--out``, made before the run; ``BenchmarkConfigError`` names what is in the way."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        # mkdir says "File exists" or "Not a directory": name the file that is in the way
        blocker = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
        problem = f"{blocker} is a file, not a directory" if blocker else e.strerror
        raise BenchmarkConfigError(f"--out {out}: {problem}; pass a directory path") from None
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
        if trial.livekit_warned:
            status += f" ({warned_line(trial.livekit_warned)})"
        asked = f" (asked {trial.asked_mode})" if trial.asked_mode != trial.mode else ""
        label = (
            f"{trial.provider} {trial.level} {trial.mode}{asked} rtt={trial.rtt_ms} "
            f"h={trial.history_turns}"
        )
        if self.tty:
            filled = self.width * done // max(total, 1)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(f"\r[{bar}] {done}/{total} {label} {status}\x1b[K")
        elif percent // 10 != self._last_percent // 10 or not trial.ok or trial.livekit_warned:
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
        raise BenchmarkConfigError(
            f"{flag} {raw!r}: expected comma-separated numbers, e.g. 0,20,100"
        ) from None
    if not values or any(v < 0 for v in values):
        raise BenchmarkConfigError(f"{flag} {raw!r}: expected one or more numbers >= 0")
    return values


def _positive(flag: str, value: int) -> int:
    if value < 1:
        raise BenchmarkConfigError(f"{flag} {value}: must be at least 1")
    return value
