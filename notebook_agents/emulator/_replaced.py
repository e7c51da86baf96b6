"""An emulator a re-run of its notebook cell replaced (the package's one rule, ``_cells``).

An emulator replaced while agents are connected serves them on until they leave (Run All
re-runs their cells right after, which replaces them): only a cell in which one of them was
answered by it says so, once.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Emulator


class EmulatorReplaced(UserWarning):
    """An agent was answered by an emulator that a re-run of its cell replaced."""


# replaced emulators still serving agents (and where), until one of those is answered or all
# have left
_serving: list[tuple[Emulator, str]] = []


def replaced(emulator: Emulator) -> None:
    """A re-run of the cell that started ``emulator`` replaces it: it gives way to the new one
    (frees a fixed port), and serves the agents still connected until they leave."""
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
