"""A trial's clock: its moments on one ``perf_counter`` clock, from t0 = A's tool returning B."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Clock:
    """The trial's moments on one perf_counter clock; each recorded once, the first time."""

    t0: float | None = None
    marks: dict[str, float] = field(default_factory=dict)
    reply_after: str | None = None
    """a mark the reply's marks must follow (B's ``on_enter``): a generation before it is
    not B's (Gemini answers A's handoff tool on its own)"""

    def mark(self, name: str) -> None:
        if self.t0 is not None and name not in self.marks:
            self.marks[name] = time.perf_counter()

    def mark_reply(self, name: str) -> None:
        """``mark``, once the reply can be B's."""
        if self.reply_after is None or self.reply_after in self.marks:
            self.mark(name)

    def since_t0(self, name: str) -> float | None:
        if self.t0 is None or name not in self.marks:
            return None
        return (self.marks[name] - self.t0) * 1000.0
