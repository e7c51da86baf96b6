"""The emulators each notebook cell started, so that re-running the cell replaces them.

A start is told apart by where it was called from: top-level code (a cell's own statements,
not a function's) at a file and line. ipykernel names a cell's code file after its content,
so the same cell re-run starts from the same file and line, in newly compiled code; a loop
within one run keeps its code. Starts from functions (tests, helpers) are never replaced,
and a script's top level runs once.

An emulator replaced while agents are connected serves them on until they leave (Run All
re-runs their cells right after, which replaces them): only a cell in which one of them was
answered by it says so, once.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Emulator


class EmulatorReplaced(UserWarning):
    """An agent was answered by an emulator that a re-run of its cell replaced."""


Site = tuple[str, int]
"""a call site: file name and line"""

_PACKAGE = __name__.partition(".")[0]

# per call site: the code of the run that started there, and the emulators it started
_started: dict[Site, tuple[CodeType, list[Emulator]]] = {}
# replaced emulators still serving agents (and where), until one of those is answered or all
# have left
_serving: list[tuple[Emulator, str]] = []


def top_level_caller() -> tuple[Site, CodeType] | None:
    """Where the first caller outside this package is, if it is top-level code."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == _PACKAGE:
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "<module>":
        return None
    return (frame.f_code.co_filename, frame.f_lineno), frame.f_code


def replace_earlier_run(site: Site, code: CodeType) -> None:
    """Replace what an earlier run of the code at ``site`` started there (frees a fixed port)."""
    earlier = _started.get(site)
    if earlier is not None and earlier[0] is not code:
        del _started[site]
        for emulator in earlier[1]:
            emulator._give_way()
            if emulator.running:
                _serving.append((emulator, emulator.url))
                _watch_cells()


def _watch_cells() -> None:
    """After each cell, say whether a replaced emulator answered an agent (IPython only)."""
    events = _shell_events()
    if events is not None and _report_use not in events.callbacks["post_run_cell"]:
        events.register("post_run_cell", _report_use)


def _report_use(*_: Any) -> None:
    """After a cell: a replaced emulator that answered an agent since is named, once; one that
    has stopped (its agents all left) is forgotten."""
    for emulator, url in list(_serving):
        if emulator.running and not emulator._answered_since_replaced():
            continue
        _serving.remove((emulator, url))
        if emulator.running:
            # the agent's answers come from the old emulator's settings, far from the cell
            # that changed them: say so where the agent was used
            warnings.warn(
                f"an agent was answered by the emulator at {url}, which a re-run of its cell "
                "replaced: the agent keeps that emulator (and its settings) until it leaves. "
                "Re-run the agent's cell to move it to the new one; the old emulator stops "
                "once its last connection closes (Emulator.in_this_process() lists it, its "
                "stop() ends them now)",
                EmulatorReplaced,
                stacklevel=1,  # no cell's code is running: the warning is this module's
            )
    events = _shell_events()
    if not _serving and events is not None and _report_use in events.callbacks["post_run_cell"]:
        events.unregister("post_run_cell", _report_use)


def _shell_events() -> Any:
    """IPython's event manager, if a shell runs this process's cells."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has no cells
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "events", None)


def record(site: Site, code: CodeType, emulator: Emulator) -> None:
    _started.setdefault(site, (code, []))[1].append(emulator)


def forget(site: Site, emulator: Emulator) -> None:
    """A stopped emulator is no longer its cell's to replace."""
    started = _started.get(site)
    if started is not None and emulator in started[1]:
        started[1].remove(emulator)
        if not started[1]:
            del _started[site]
