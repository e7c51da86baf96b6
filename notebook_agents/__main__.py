"""The ``notebook-agents`` command (also ``python -m notebook_agents``): each subcommand's
package owns its ``cli.py`` (``HELP``, ``DESCRIPTION``, ``add_arguments``, ``run``); this only
dispatches."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .bench import cli as bench_cli
from .emulator import cli as emulator_cli
from .trace import cli as trace_cli

COMMANDS = {"emulator": emulator_cli, "bench": bench_cli, "export": trace_cli}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="notebook-agents", description="Build, measure and teach LiveKit voice agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, cli in COMMANDS.items():
        command = commands.add_parser(name, help=cli.HELP, description=cli.DESCRIPTION)
        cli.add_arguments(command)
        command.set_defaults(run=cli.run)
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
