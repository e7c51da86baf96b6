"""The emulators each notebook cell started, so that re-running the cell replaces them.

A start is told apart by where it was called from: top-level code (a cell's own statements,
not a function's) at a file and line. ipykernel names a cell's code file after its content,
so the same cell re-run starts from the same file and line, in newly compiled code; a loop
within one run keeps its code. Starts from functions (tests, helpers) are never replaced,
and a script's top level runs once.
"""

from __future__ import annotations

import inspect
import warnings
from types import CodeType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import Emulator


class EmulatorReplaced(UserWarning):
    """A re-run cell replaced an emulator that agents were still connected to."""


Site = tuple[str, int]
"""a call site: file name and line"""

_PACKAGE = __name__.partition(".")[0]

# per call site: the code of the run that started there, and the emulators it started
_started: dict[Site, tuple[CodeType, list[Emulator]]] = {}


def top_level_caller() -> tuple[Site, CodeType] | None:
    """Where the first caller outside this package is, if it is top-level code."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == _PACKAGE:
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "<module>":
        return None
    return (frame.f_code.co_filename, frame.f_lineno), frame.f_code


def replace_earlier_run(site: Site, code: CodeType) -> None:
    """Stop what an earlier run of the code at ``site`` started there (frees a fixed port)."""
    earlier = _started.get(site)
    if earlier is not None and earlier[0] is not code:
        del _started[site]
        for emulator in earlier[1]:
            if in_use := emulator.open_connections:
                # the agents using it fail a few seconds later, far from this cell: say so here
                warnings.warn(
                    f"re-running this cell stopped the emulator it started before "
                    f"({emulator.url}) while {in_use} realtime connection(s) used it: an agent "
                    "started on it has lost its model; re-run the agent's cell too",
                    EmulatorReplaced,
                    stacklevel=3,
                )
            emulator.stop()


def record(site: Site, code: CodeType, emulator: Emulator) -> None:
    _started.setdefault(site, (code, []))[1].append(emulator)


def forget(site: Site, emulator: Emulator) -> None:
    """A stopped emulator is no longer its cell's to replace."""
    started = _started.get(site)
    if started is not None and emulator in started[1]:
        started[1].remove(emulator)
        if not started[1]:
            del _started[site]
