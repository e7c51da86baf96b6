"""The model names the emulator answers to, as the real service would list them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

REALTIME_MODELS = (
    "gpt-realtime",
    "gpt-realtime-mini",
    "gpt-realtime-2",
    "gpt-4o-realtime-preview",
    "gpt-4o-mini-realtime-preview",
)
CHAT_MODELS = (
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
)


@dataclass
class ModelCatalog:
    """Known models; a dated snapshot (``gpt-4o-mini-2024-07-18``) counts as its family."""

    realtime: set[str] = field(default_factory=lambda: set(REALTIME_MODELS))
    chat: set[str] = field(default_factory=lambda: set(CHAT_MODELS))

    def add(self, names: Iterable[str], *, realtime: bool = False) -> None:
        (self.realtime if realtime else self.chat).update(names)

    def knows(self, model: str, *, realtime: bool) -> bool:
        names = self.realtime if realtime else self.chat
        return model in names or any(model.startswith(f"{name}-20") for name in names)

    def all(self) -> list[str]:
        return sorted(self.realtime | self.chat)
