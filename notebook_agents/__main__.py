"""The ``notebook-agents`` command (also ``python -m notebook_agents``): each subcommand's
package owns its ``cli.py`` (``HELP``, ``DESCRIPTION``, ``add_arguments``, ``run``); this only
dispatches."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = {
    "emulator": "notebook_agents.emulator.cli",
    "bench": "notebook_agents.bench.cli",
    "export": "notebook_agents.trace.cli",
}
"""each subcommand and the module that runs it"""


def main(argv: Sequence[str] | None = None) -> int:
    args_given = list(sys.argv[1:] if argv is None else argv)
    # only the command asked for is imported: the emulator starts without the bench's
    # livekit.agents; with none (or --help) each is, for its help line
    named = [args_given[0]] if args_given and args_given[0] in COMMANDS else list(COMMANDS)
    parser = argparse.ArgumentParser(
        prog="notebook-agents", description="Build, measure and teach LiveKit voice agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in named:
        cli = importlib.import_module(COMMANDS[name])
        command = commands.add_parser(name, help=cli.HELP, description=cli.DESCRIPTION)
        cli.add_arguments(command)
        command.set_defaults(run=cli.run)
    args = parser.parse_args(args_given)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
