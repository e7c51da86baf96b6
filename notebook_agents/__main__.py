"""The ``notebook-agents`` command (also ``python -m notebook_agents``)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from collections.abc import Sequence

from .emulator import EmulatorError, Faults, LatencyModel
from .emulator._params import ParameterError
from .emulator._settings import EmulatorSettings
from .emulator.server import HOST, create_app, start_site

_PARENT_POLL_S = 0.25


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="notebook-agents", description="Build, measure and teach LiveKit voice agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_emulator_command(commands)
    args = parser.parse_args(argv)
    handlers = {"emulator": _run_emulator}
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


def _run_emulator(args: argparse.Namespace) -> int:
    try:
        latency = LatencyModel(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(LatencyModel)}
        )
        faults = Faults.from_query(dict(_split_fault(f) for f in args.fault))
    except (ValueError, ParameterError) as e:
        print(f"notebook-agents emulator: {e}", file=sys.stderr)
        return 2
    settings = EmulatorSettings(latency=latency, faults=faults, validate=not args.no_validate)
    try:
        asyncio.run(_serve(settings, args.port))
    except EmulatorError as e:
        print(f"notebook-agents emulator: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _split_fault(raw: str) -> tuple[str, str]:
    name, sep, value = raw.partition("=")
    if not sep or name not in {f.name for f in dataclasses.fields(Faults)}:
        known = ", ".join(f.name for f in dataclasses.fields(Faults))
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
