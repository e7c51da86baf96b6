"""The ``notebook-agents`` command (also ``python -m notebook_agents``)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import os
import sys
from collections.abc import Sequence

from .emulator import EmulatorError, Faults, LatencyModel
from .emulator._params import ParameterError
from .emulator._settings import FAULT_PARAMETERS, EmulatorSettings
from .emulator.server import HOST, check_port, create_app, start_site

_PARENT_POLL_S = 0.25


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="notebook-agents", description="Build, measure and teach LiveKit voice agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_emulator_command(commands)
    _add_bench_command(commands)
    args = parser.parse_args(argv)
    handlers = {"emulator": _run_emulator, "bench": _run_bench}
    return handlers[args.command](args)


def _add_emulator_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    emulator = commands.add_parser(
        "emulator",
        help="serve the OpenAI-compatible emulator on 127.0.0.1",
        description=(
            "Serve the OpenAI-compatible emulator on 127.0.0.1. Prints its URL on the first "
            "line, then serves until interrupted or until the parent process exits."
        ),
    )
    emulator.add_argument("--port", type=int, default=0, help="port to bind (0: any free port)")
    for field in dataclasses.fields(LatencyModel):
        emulator.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=float,
            default=field.default,
            help=f"default latency {field.name} (per connection: ?{field.name}=...)",
        )
    emulator.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="default fault for every connection, e.g. --fault drop_after=5 (repeatable)",
    )
    emulator.add_argument(
        "--no-validate",
        action="store_true",
        help="skip checking every realtime event against the openai package's types",
    )


def _add_bench_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure handoff latency: realtime session reuse vs fresh, context copied vs empty",
        description=(
            "Measure what an agent handoff costs through the real LiveKit realtime plugin: "
            "offline against the emulator at each --rtt (with ground truth), or against any "
            "OpenAI-compatible --base-url. Writes results.json, results.csv and plots to --out."
        ),
    )
    bench.add_argument("--rtt", default="0,20,100", help="injected RTTs in ms (emulator only)")
    bench.add_argument("--trials", type=int, default=20, help="kept trials per mode and cell")
    bench.add_argument("--history", default="10", help="history lengths in turns, e.g. 0,10,50")
    bench.add_argument(
        "--level",
        default="agent",
        help="agent (full AgentSession), session (upstream's test), cascaded; comma-separated",
    )
    bench.add_argument("--base-url", help="an OpenAI-compatible endpoint instead of the emulator")
    bench.add_argument("--api-key", help="key for --base-url (default: OPENAI_API_KEY)")
    bench.add_argument(
        "--timeout", type=_timeout_seconds, default=30.0, help="seconds per trial (> 0)"
    )
    bench.add_argument("--warmup", type=int, default=1, help="discarded rounds per cell")
    bench.add_argument(
        "--trace", action="store_true", help="also run every trial with a Trace attached"
    )
    bench.add_argument("--out", default="bench-results", help="directory for the results")


def _timeout_seconds(raw: str) -> float:
    """``--timeout``: a trial needs some time and must end (a run never hangs), so 0 < s < inf."""
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"{raw!r}: expected seconds > 0 and finite, e.g. 30")
    return seconds


def _run_bench(args: argparse.Namespace) -> int:
    from .bench.cli import run_from_args

    return run_from_args(args)


def _run_emulator(args: argparse.Namespace) -> int:
    try:
        port = check_port(args.port)
        latency = LatencyModel(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(LatencyModel)}
        )
        faults = Faults.from_query(dict(_split_fault(f) for f in args.fault))
    except (ParameterError, EmulatorError) as e:
        print(f"notebook-agents emulator: {e}", file=sys.stderr)
        return 2
    settings = EmulatorSettings(latency=latency, faults=faults, validate=not args.no_validate)
    try:
        asyncio.run(_serve(settings, port))
    except EmulatorError as e:
        print(f"notebook-agents emulator: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _split_fault(raw: str) -> tuple[str, str]:
    name, sep, value = raw.partition("=")
    if not sep or name not in FAULT_PARAMETERS:
        known = ", ".join(FAULT_PARAMETERS)
        raise ParameterError(f"--fault {raw!r}: use NAME=VALUE with NAME one of {known}")
    return name, value


async def _serve(settings: EmulatorSettings, port: int) -> None:
    parent = os.getppid()
    runner, bound = await start_site(create_app(settings), port)
    print(f"http://{HOST}:{bound}", flush=True)
    try:
        await _parent_exit(parent)
    finally:
        await runner.cleanup()


async def _parent_exit(parent: int) -> None:
    """Return once ``parent`` is gone: an orphaned emulator would hold its port forever."""
    # No portable event exists for a parent's exit, so this polls (cheaply).
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(_PARENT_POLL_S)


if __name__ == "__main__":
    sys.exit(main())
