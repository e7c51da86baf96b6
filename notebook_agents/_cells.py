"""Which run of which notebook cell started what, and what was started and not yet stopped:
re-running a cell replaces what it started (runners of every kind and emulators alike), and
only that; the kernel's exit stops what is still running. The one rule of the package.

A start belongs to the cell the kernel is executing when that cell's top-level code is on the
call stack, however many functions deep (notebook 03's ``start_call`` is one): the cell is
named by the id the front end sends (JupyterLab does: an edited cell is still the same cell),
else by its code's file (one per cell content). Starts from anywhere else (another thread, a
widget's callback, a task an earlier cell left running, a script, a test) belong to no cell.
Several starts in one run of a cell (a loop) all live; its next run replaces them all, the
last started first.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

_log = logging.getLogger(__name__)


class Started(Protocol):
    """What the registry holds: a started runner of any kind, or an emulator."""

    def stop(self) -> None: ...


@dataclass(frozen=True, eq=False)
class CellRun:
    """One execution of one notebook cell."""

    cell: str
    run: weakref.ref[Any]
    """IPython's result object of that execution: a new one each time the cell runs"""

    def replaces(self, earlier: CellRun | None) -> bool:
        """Whether this is a later run of the cell that started ``earlier``."""
        return earlier is not None and earlier.cell == self.cell and earlier.run() is not self.run()


def current_cell_run() -> CellRun | None:
    """The cell run whose top-level code made this call, if a cell's code did."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has no cells
    shell = ipython.get_ipython() if ipython is not None else None
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    if shell is None or result is None:
        return None  # no cell is executing
    info = result.info
    code_file = shell.compile.get_code_name(
        info.raw_cell, info.transformed_cell or info.raw_cell, result.execution_count
    )
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename == code_file:
            return CellRun(info.cell_id or code_file, weakref.ref(result))
        frame = frame.f_back
    return None


# What was started and not yet stopped, each with the cell run that started it and how it is
# replaced (in start order). It holds them: a runner whose variable a re-run cell rebound is
# still found and stopped.
_started: dict[Started, tuple[CellRun | None, Callable[[], None]]] = {}


def no_conflict(_: Started) -> bool:
    return False


def replace_earlier(conflicts: Callable[[Started], bool] = no_conflict) -> CellRun | None:
    """Replace what an earlier run of the calling cell started, and what ``conflicts`` names
    (a runner that cannot run beside the new one), the last started first (a runner before
    the emulator it talks to); returns the calling cell run, for ``register``."""
    cell = current_cell_run()
    for started, (started_by, replace) in reversed(list(_started.items())):
        if conflicts(started) or (cell is not None and cell.replaces(started_by)):
            _started.pop(started, None)
            replace()
    return cell


def register(
    started: Started, cell: CellRun | None, replace: Callable[[], None] | None = None
) -> None:
    """``started`` has started, from ``cell``: it is replaced when the cell runs again
    (``replace``, else stopped), and stopped at the latest when the kernel exits."""
    _started[started] = (cell, replace or started.stop)
    # atexit runs the last registered first. livekit registers its FFI's disposal at its first
    # use of it, after this module's import: registered again now, the stop runs before it,
    # while the session's audio still has its resamplers ("PushSoxResampler ... handle not
    # found" otherwise, a kernel shut down with a call up)
    atexit.unregister(_stop_all_at_exit)
    atexit.register(_stop_all_at_exit)


def unregister(started: Started) -> None:
    """``started`` has stopped."""
    _started.pop(started, None)


def _stop_all_at_exit() -> None:
    """A kernel shut down stops what still runs, the last started first: an agent's process
    ends with its own shutdown, not only by the watcher that ends it after the kernel."""
    for started in reversed(list(_started)):
        try:
            started.stop()
        except Exception:  # the next one is stopped all the same
            _log.exception("stopping %r at exit failed", started)
