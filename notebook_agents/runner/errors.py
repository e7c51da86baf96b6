"""Errors the package raises to notebook users; each message says what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..trace import TraceEvent


class RunnerError(RuntimeError):
    """The runner cannot do what was asked; the message says why and what to do."""


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
