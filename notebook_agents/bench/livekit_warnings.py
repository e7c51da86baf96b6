"""What livekit warned during a trial that bears on its handoff, kept with the trial and said
per mode: a trial that waited out livekit's 5 s for a reply the model never made still
measures its handoff, so it is ok, but the user's agent has a race to fix.

livekit-agents 1.8.9 logs two from ``voice/agent_activity.py`` (logger ``livekit.agents``),
livekit-plugins-google 1.8.9 two from ``realtime/realtime_api.py`` (``livekit.plugins.google``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class LivekitWarning:
    """One warning livekit logs: what it says (a prefix of its message), what that means for
    the handoff, and what to do."""

    says: str
    meaning: str
    fix: str
    logger: str = "livekit.agents"


LIVEKIT_WARNINGS: dict[str, LivekitWarning] = {
    # _realtime_generation_task_impl: a model that answers tool outputs itself is waited for
    # up to 5 s; after a handoff the old agent no longer gets the session's generations
    "tool_reply_timeout": LivekitWarning(
        "timed out waiting for realtime auto tool reply",
        "livekit waited 5 s for the model's reply to the handoff tool",
        "the tool_reply_race, see notebook 06; return the agent alone or make the tool "
        "NON_BLOCKING",
    ),
    # _on_generation_created: a generation the model began while the old agent was draining
    "generation_skipped": LivekitWarning(
        "skipping new realtime generation",
        "livekit dropped a reply the model began while A was handing off",
        "the model's own reply to the handoff tool (the tool_reply_race, see notebook 06)",
    ),
    # RealtimeSession._sync_chat_ctx: a function_call_output with reply_required False (a
    # handoff tool returning the agent alone) while the tool is not NON_BLOCKING
    "tool_answered": LivekitWarning(
        "a tool result wants no reply, but Gemini will answer it anyway",
        "Gemini answers the handoff tool's result anyway: that answer races B's reply",
        "make the handoff tool NON_BLOCKING (tool_behavior=types.Behavior.NON_BLOCKING)",
        "livekit.plugins.google",
    ),
    # RealtimeSession._sync_chat_ctx: B's context lacks turns the reused session holds
    # (update_chat_ctx with an empty or trimmed context); Gemini Live cannot delete turns
    "turns_kept": LivekitWarning(
        "Gemini Live does not support removing messages",
        "Gemini keeps a reused session's turns, so B's empty context is livekit's view only "
        "(and what a copied one leaves out)",
        "hand off to a fresh session (B with its own model) when B must not see A's turns",
        "livekit.plugins.google",
    ),
}
"""the warnings a trial keeps, by the name ``Trial.livekit_warned`` records"""

_SWALLOWED = {
    # RealtimeSession.clear_audio: livekit clears a reused session's input audio as B starts
    # (AgentActivity._start_session). The bench's turns are text: there is no audio to clear,
    # so the plugin's note says nothing about the handoff, once per reused trial.
    "livekit.plugins.google": ("clear_audio is not supported by Gemini Realtime API",),
}
"""what the bench's own trials make livekit log that means nothing for them: kept by no one"""


@contextmanager
def livekit_warned() -> Iterator[list[str]]:
    """The names of the ``LIVEKIT_WARNINGS`` livekit logs inside the block, each once, in the
    order first logged (from any thread: a server's session runs on its runner's). Those are
    said by the bench instead, ``_SWALLOWED`` not at all; anything else livekit logs goes
    where it went before."""
    found: list[str] = []
    handler = _Catch(found)
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield found
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


_LOGGERS = sorted({w.logger for w in LIVEKIT_WARNINGS.values()} | set(_SWALLOWED))


class _Catch(logging.Handler):
    def __init__(self, found: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        kept = (
            n
            for n, w in LIVEKIT_WARNINGS.items()
            if w.logger == record.name and message.startswith(w.says)
        )
        name = next(kept, None)
        if name is not None:
            if name not in self.found:
                self.found.append(name)
            return
        if message.startswith(_SWALLOWED.get(record.name, ())):
            return
        if not self._handled_elsewhere(record) and logging.lastResort is not None:
            # with no handler of the app's, Python prints a warning through lastResort: this
            # handler must not silence what it does not keep
            logging.lastResort.handle(record)

    def _handled_elsewhere(self, record: logging.LogRecord) -> bool:
        """Whether a handler other than this one gets ``record`` (``Logger.callHandlers``)."""
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            if any(handler is not self for handler in logger.handlers):
                return True
            logger = logger.parent if logger.propagate else None
        return False


class _Warned(Protocol):
    @property
    def livekit_warned(self) -> list[str]: ...


def warning_note(name: str) -> str:
    """What the warning ``name`` means for the handoff and what to do, said once under a
    table whose cells point at it by number."""
    warning = LIVEKIT_WARNINGS[name]
    return f"{name}: {warning.meaning}; {warning.fix}"


def warned_note(trials: Sequence[_Warned], numbers: Mapping[str, int]) -> str | None:
    """What livekit warned on these trials (one mode's): each warning's name, on how many of
    them, and the number of its ``warning_note`` in ``numbers`` (said under the table):
    ``"tool_reply_timeout 4/4 [2]"``; None when it warned of nothing."""
    counts = {
        name: sum(name in trial.livekit_warned for trial in trials) for name in LIVEKIT_WARNINGS
    }
    cells = [
        f"{name} {n}/{len(trials)} [{numbers[warning_note(name)]}]"
        for name, n in counts.items()
        if n
    ]
    return "; ".join(cells) or None


def warned_line(names: Sequence[str]) -> str:
    """A trial's warnings in a few words, for a progress line: ``"livekit waited 5 s ..."``
    (in ``LIVEKIT_WARNINGS``' order, whichever livekit logged first)."""
    return "; ".join(w.meaning for name, w in LIVEKIT_WARNINGS.items() if name in names)
