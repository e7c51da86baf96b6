"""Errors the package raises to notebook users; each message says what to do.

In IPython a ``RunnerError`` shows as the user's frames and its message: the package's own
frames below the call the user made (the guard that refused it, the checks that found it
out) are how it was found, and printed a screen of the package's source before the message.
The error itself is unchanged (``%tb`` and ``%debug`` see every frame; a chained cause shows
whole), and every other exception is shown as before.
"""

from __future__ import annotations

import os
import sys
import types
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..trace import TraceEvent

_PACKAGE = str(Path(__file__).parents[1]) + os.sep
_showing: weakref.WeakSet[Any] = weakref.WeakSet()
"""IPython shells that show ``RunnerError`` without the package's frames"""


class RunnerError(RuntimeError):
    """The runner cannot do what was asked; the message says why and what to do."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        _show_without_our_frames()


def _show_without_our_frames() -> None:
    """In this IPython shell, if there is one (once), show ``RunnerError`` from the user's
    frames only; another package's handler of its own errors is kept."""
    ipython = sys.modules.get("IPython")  # never imported here: a script has no shell
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or shell in _showing or not hasattr(shell, "set_custom_exc"):
        return
    _showing.add(shell)
    handled: tuple[type[BaseException], ...] = tuple(shell.custom_exceptions)
    earlier = shell.CustomTB if handled else None
    shell.set_custom_exc((*handled, RunnerError), _handler(earlier, handled))


def _handler(earlier: Any, handled: tuple[type[BaseException], ...]) -> Any:
    def show(
        shell: Any,
        etype: type[BaseException],
        value: BaseException,
        tb: types.TracebackType | None,
        tb_offset: int | None = None,
    ) -> None:
        if not issubclass(etype, RunnerError):
            earlier(etype, value, tb, tb_offset)  # only what the earlier handler took
            return
        shell._get_exc_info((etype, value, tb))  # kept whole for %tb and %debug, as IPython does
        stb = shell.InteractiveTB.structured_traceback(etype, value, _users(tb), tb_offset)
        shell._showtraceback(etype, value, stb)

    return show


def _users(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback down to the user's call into the package (its frames cut off)."""
    frames = []
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
        frames.append(tb)
        tb = tb.tb_next
    chained = None
    for frame in reversed(frames):
        chained = types.TracebackType(chained, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return chained


class TurnError(RunnerError):
    """A user turn went wrong: the model's response failed or was cancelled, the model
    rejected part of the conversation, or its conversation parted from livekit's chat context.
    ``reply`` is what the agent said anyway (often nothing), ``errors`` the trace's ``error``
    events of the turn and, while the two stay apart, the ``context_diverged`` that parted
    them."""

    def __init__(
        self, reply: str, errors: list[TraceEvent], raised: BaseException | None = None
    ) -> None:
        self.reply = reply
        self.errors = errors
        what = [str(event.data.get("message", "")) for event in errors]
        if raised is not None and str(raised) not in what:
            what.insert(0, f"{type(raised).__name__}: {raised}")
        said = f" (the agent still replied {reply!r})" if reply else " (no reply)"
        super().__init__(f"the turn went wrong: {'; '.join(what)}{said}")


class TurnStopped(TurnError):
    """The runner was stopped during the turn; ``reply`` is what the agent had said by then
    (cut where it was stopped)."""

    def __init__(self, reply: str) -> None:
        said = f"mid-reply: the agent had said {reply!r}" if reply else "before the agent replied"
        RunnerError.__init__(self, f"the runner was stopped {said}")
        self.reply, self.errors = reply, []


class AudioError(ValueError):
    """Audio the runner cannot take (``send_audio``, ``hear``); the message says what is wrong
    and how to fix it. Raised before anything starts: the runner is ready for the next turn."""
