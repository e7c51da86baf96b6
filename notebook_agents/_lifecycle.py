"""``with thing:`` for the package's background services: start on enter, stop on exit."""

from __future__ import annotations

from types import TracebackType

from typing_extensions import Self


class StartStop:
    """A service with ``start() -> self`` and an idempotent ``stop()``, usable with ``with``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
