"""How the package's own errors show in IPython: each kind its way, every other error as before.

IPython takes one custom-exception handler per shell. Each kind the package shows its own way
(a ``RunnerError`` from the user's frames, a failed ``expect`` as a table of the turn) is added
to the shell's handled kinds with a handler that hands everything else on: to the handler that
was there before (another package's, or one of ours), else to IPython's own display.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

Show = Callable[
    [Any, type[BaseException], BaseException, types.TracebackType | None, int | None], bool
]
"""shows an error in the shell (shell, type, error, traceback, offset); False: not this one's"""


def handle_in_ipython(kind: type[BaseException], show: Show) -> None:
    """In this IPython shell, if there is one (once per kind), show ``kind`` with ``show``."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has no shell
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return
    handled: tuple[type[BaseException], ...] = tuple(shell.custom_exceptions)
    if kind in handled:
        return
    earlier = shell.CustomTB if handled else None

    def handler(
        shell: Any,
        etype: type[BaseException],
        value: BaseException,
        tb: types.TracebackType | None,
        tb_offset: int | None = None,
    ) -> None:
        if issubclass(etype, kind) and show(shell, etype, value, tb, tb_offset):
            return
        if earlier is not None and issubclass(etype, handled):
            earlier(etype, value, tb, tb_offset)
        else:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)

    shell.set_custom_exc((*handled, kind), handler)


def show_cut(
    shell: Any,
    error: tuple[type[BaseException], BaseException, types.TracebackType | None],
    shown: BaseException,
    frames: list[types.TracebackType],
    tb_offset: int | None,
) -> None:
    """Show ``error`` as ``shown`` through ``frames`` only; the error itself is kept whole
    (IPython's custom-exception path leaves sys.last_* unset: %tb and %debug need them)."""
    shell._get_exc_info(error)
    chained = None
    for frame in reversed(frames):
        chained = types.TracebackType(chained, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    stb = shell.InteractiveTB.structured_traceback(error[0], shown, chained, tb_offset)
    shell._showtraceback(error[0], error[1], stb)
