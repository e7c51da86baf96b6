"""Which run of which notebook cell a runner was started from, and the runners started and not
yet stopped: re-running a cell replaces the runners it started (whatever their kind), and only
those; the kernel's exit stops what is still running.

A start belongs to the cell the kernel is executing when that cell's top-level code is on the
call stack, however many functions deep (notebook 03's ``start_call`` is one): the cell is
named by the id the front end sends (JupyterLab does: an edited cell is still the same cell),
else by its code's file (one per cell content). Starts from anywhere else (another thread, a
widget's callback, a task an earlier cell left running, a script, a test) belong to no cell.
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


class Runner(Protocol):
    """What the registry stops: a started runner of any kind."""

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


# Runners started and not yet stopped, each with the cell run that started it (in start order).
# It holds them: a runner whose variable a re-run cell rebound is still found and stopped.
_started: dict[Runner, CellRun | None] = {}


def no_conflict(_: Runner) -> bool:
    return False


def replace_earlier(conflicts: Callable[[Runner], bool] = no_conflict) -> CellRun | None:
    """Stop the started runners an earlier run of the calling cell started, and those
    ``conflicts`` names (a runner that cannot run beside the new one); returns the calling
    cell run, for ``register``."""
    cell = current_cell_run()
    for runner, started_by in list(_started.items()):
        if conflicts(runner) or (cell is not None and cell.replaces(started_by)):
            runner.stop()
    return cell


def register(runner: Runner, cell: CellRun | None) -> None:
    """``runner`` has started, from ``cell``: it is stopped when the cell runs again, or at
    the latest when the kernel exits."""
    _started[runner] = cell


def unregister(runner: Runner) -> None:
    """``runner`` has stopped."""
    _started.pop(runner, None)


@atexit.register
def _stop_all_at_exit() -> None:
    """A kernel shut down stops what still runs, the last started first: an agent's process
    ends with its own shutdown, not only by the watcher that ends it after the kernel."""
    for runner in reversed(list(_started)):
        try:
            runner.stop()
        except Exception:  # the next runner is stopped all the same
            _log.exception("stopping %r at exit failed", runner)
