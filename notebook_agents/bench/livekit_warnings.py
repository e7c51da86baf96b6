"""What livekit warned during a trial that bears on its handoff, kept with the trial and said
per mode: a trial that waited out livekit's 5 s for a reply the model never made still
measures its handoff, so it is ok, but the user's agent has a race to fix.

livekit-agents 1.8.9 logs these from ``voice/agent_activity.py`` (logger ``livekit.agents``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
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
}
"""the warnings a trial keeps, by the name ``Trial.livekit_warned`` records"""

_LOGGER = "livekit.agents"


@contextmanager
def livekit_warned() -> Iterator[list[str]]:
    """The names of the ``LIVEKIT_WARNINGS`` livekit logs inside the block, each once, in the
    order first logged (from any thread: a server's session runs on its runner's). Those are
    said by the bench instead; anything else livekit logs goes where it went before."""
    found: list[str] = []
    handler = _Catch(found)
    logger = logging.getLogger(_LOGGER)
    logger.addHandler(handler)
    try:
        yield found
    finally:
        logger.removeHandler(handler)


class _Catch(logging.Handler):
    def __init__(self, found: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        name = next((n for n, w in LIVEKIT_WARNINGS.items() if message.startswith(w.says)), None)
        if name is not None:
            if name not in self.found:
                self.found.append(name)
        elif not self._handled_elsewhere(record) and logging.lastResort is not None:
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


def warned_note(trials: Sequence[_Warned]) -> str | None:
    """What livekit warned on these trials (one mode's), each with on how many of them and
    what to do: ``"livekit waited 5 s for ... on 4/4 trials: the tool_reply_race, ..."``;
    None when it warned of nothing."""
    counts = {
        name: sum(name in trial.livekit_warned for trial in trials) for name in LIVEKIT_WARNINGS
    }
    notes = [
        f"{LIVEKIT_WARNINGS[name].meaning} on {n}/{len(trials)} trials: "
        f"{LIVEKIT_WARNINGS[name].fix}"
        for name, n in counts.items()
        if n
    ]
    return "; ".join(notes) or None


def warned_line(names: Sequence[str]) -> str:
    """A trial's warnings in a few words, for a progress line: ``"livekit waited 5 s ..."``
    (in ``LIVEKIT_WARNINGS``' order, whichever livekit logged first)."""
    return "; ".join(w.meaning for name, w in LIVEKIT_WARNINGS.items() if name in names)
