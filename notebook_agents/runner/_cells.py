"""Which run of which notebook cell a runner was started from: re-running a cell replaces
the runners it started, and only those.

A start belongs to the cell the kernel is executing when that cell's top-level code is on the
call stack, however many functions deep (notebook 03's ``start_call`` is one): the cell is
named by the id the front end sends (JupyterLab does: an edited cell is still the same cell),
else by its code's file (one per cell content). Starts from anywhere else (another thread, a
widget's callback, a task an earlier cell left running, a script, a test) belong to no cell.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from dataclasses import dataclass
from typing import Any


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
