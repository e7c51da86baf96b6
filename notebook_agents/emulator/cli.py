"""``notebook-agents emulator``: the emulator as its own process, until interrupted, orphaned,
or (``--until-stdin-closes``) its standard input closes."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys

from ..errors import MissingExtraError
from ..speech.hearing import DEFAULT_HEARING, HEARINGS
from ._params import ParameterError, parse_hearing
from ._settings import FAULT_PARAMETERS, EmulatorSettings
from .errors import EmulatorError
from .faults import Faults
from .latency import LatencyModel
from .server import HOST, check_port, create_app, start_site

HELP = "serve the OpenAI-compatible emulator on 127.0.0.1"
DESCRIPTION = (
    "Serve the OpenAI-compatible emulator on 127.0.0.1. Prints its URL on the first line, then "
    "serves until interrupted or until the parent process exits."
)

_PARENT_POLL_S = 0.25


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="port to bind; 0 picks a free one (default: %(default)s)",
    )
    for field in dataclasses.fields(LatencyModel):
        parser.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=float,
            default=field.default,
            help=f"{field.metadata['doc']}, in{field.metadata['bound'].unit}, for every "
            f"connection; ?{field.name}= in a base_url overrides it (Gemini Live: the "
            f"x-emulator-settings header) (default: %(default)s)",
        )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a fault for every connection, e.g. --fault drop_after=5; repeatable (default: none)",
    )
    parser.add_argument(
        "--hearing",
        choices=HEARINGS,
        default=DEFAULT_HEARING,
        help="how callers are heard: the nearest phrase of the session's grammar, or free "
        "speech (whisper: the whisper extra); ?hearing= in a base_url overrides it "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="skip checking every realtime event against the openai package's types "
        "(default: check them)",
    )
    parser.add_argument(
        "--until-stdin-closes",
        action="store_true",
        help="also stop, cleaning up, when standard input closes: how a program that started "
        "it stops it, as a signal may be ignored (SIGINT, in a job a script starts in the "
        "background) or end it before its cleanup (SIGTERM) (default: stop on a signal only)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted: 0; 2 for a bad argument, 1 when the emulator cannot serve."""
    try:
        port = check_port(args.port)
        latency = LatencyModel(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(LatencyModel)}
        )
        faults = Faults.from_query(dict(_split_fault(f) for f in args.fault))
        hearing = parse_hearing(args.hearing)
    except (ParameterError, EmulatorError, MissingExtraError) as e:
        print(f"notebook-agents emulator: {e}", file=sys.stderr)
        return 2
    settings = EmulatorSettings(
        latency=latency, faults=faults, validate=not args.no_validate, hearing=hearing
    )
    try:
        asyncio.run(_serve(settings, port, until_stdin_closes=args.until_stdin_closes))
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


async def _serve(settings: EmulatorSettings, port: int, *, until_stdin_closes: bool) -> None:
    parent = os.getppid()
    runner, bound = await start_site(create_app(settings), port)
    print(f"http://{HOST}:{bound}", flush=True)
    ends = [_parent_exit(parent), *([_stdin_closed()] if until_stdin_closes else [])]
    waits = [asyncio.ensure_future(end) for end in ends]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        await runner.cleanup()


async def _stdin_closed() -> None:
    """Return once standard input is closed (``emulator_process`` closes its end)."""
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
    )
    try:
        while await reader.read(4096):
            pass
    finally:
        transport.close()


async def _parent_exit(parent: int) -> None:
    """Return once ``parent`` is gone: an orphaned emulator would hold its port forever."""
    # No portable event exists for a parent's exit, so this polls (cheaply).
    while os.getppid() == parent:  # noqa: ASYNC110
        await asyncio.sleep(_PARENT_POLL_S)
