"""Errors the package raises to notebook users; each message says what to do.

In IPython a ``RunnerError`` shows as the user's frames and its message: the package's own
frames below the call the user made (the guard that refused it, the checks that found it
out) are how it was found, and printed a screen of the package's source before the message.
The error itself is unchanged (``%tb`` and ``%debug`` see every frame; a chained cause shows
whole), and every other exception is shown as before.
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NotebookAgentsError
from ._shown_errors import handle_in_ipython, show_cut

if TYPE_CHECKING:
    from ..trace import TraceEvent

_PACKAGE = str(Path(__file__).parents[1]) + os.sep


class RunnerError(NotebookAgentsError, RuntimeError):
    """The runner cannot do what was asked; the message says why and what to do."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        handle_in_ipython(RunnerError, _shown_from_the_users_frames)


def _shown_from_the_users_frames(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: types.TracebackType | None,
    tb_offset: int | None,
) -> bool:
    """Down to the user's call into the package (its frames cut off)."""
    frames, frame = [], tb
    while frame is not None and not frame.tb_frame.f_code.co_filename.startswith(_PACKAGE):
        frames.append(frame)
        frame = frame.tb_next
    show_cut(shell, (etype, value, tb), value, frames, tb_offset)
    return True


class EntrypointError(RunnerError, TypeError):
    """A runner given something it cannot run as the agent's job (``NotebookRunner`` takes a
    livekit ``AgentServer`` or an ``async def entrypoint(ctx)``; ``VideoSDKRunner`` the
    entrypoint); raised before anything starts. A ``RunnerError`` and a ``TypeError``."""


class TurnError(RunnerError):
    """A user turn went wrong: the model's response failed or was cancelled, the model
    rejected part of the conversation, or its conversation parted from livekit's chat context.
    ``reply`` is what the agent said anyway (often nothing), ``errors`` the trace's ``error``
    events of the turn and, while the two stay apart, the ``context_diverged`` that parted
    them. ``during``: what went wrong, when not a user turn (an agent's greeting)."""

    def __init__(
        self,
        reply: str,
        errors: list[TraceEvent],
        raised: BaseException | None = None,
        *,
        during: str = "the turn",
    ) -> None:
        self.reply = reply
        self.errors = errors
        what = [str(event.data.get("message", "")) for event in errors]
        if raised is not None and str(raised) not in what:
            what.insert(0, f"{type(raised).__name__}: {raised}")
        said = f" (the agent still replied {reply!r})" if reply else " (no reply)"
        super().__init__(f"{during} went wrong: {'; '.join(what)}{said}")


class HeardNothing(RunnerError):
    """A spoken turn the session's speech recognizer heard no words in: it answered the
    caller's speech with no transcript, which livekit does not answer. Raised once the
    recognizer has answered, not at the turn's timeout; the turn is withdrawn."""


class TurnStopped(TurnError):
    """The runner was stopped during the turn; ``reply`` is what the agent had said by then
    (cut where it was stopped)."""

    def __init__(self, reply: str) -> None:
        said = f"mid-reply: the agent had said {reply!r}" if reply else "before the agent replied"
        RunnerError.__init__(self, f"the runner was stopped {said}")
        self.reply, self.errors = reply, []


class AudioError(NotebookAgentsError, ValueError):
    """Audio the runner cannot take (``send_audio``, ``hear``); the message says what is wrong
    and how to fix it. Raised before anything starts: the runner is ready for the next turn."""


class CueError(NotebookAgentsError, ValueError):
    """A barge-in cue (``send_audio(..., at=)``, a scenario turn's ``at:``) that is not a
    moment of a reply; the message says what it takes. Raised before anything starts."""
