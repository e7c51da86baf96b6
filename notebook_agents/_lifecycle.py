"""``with thing:`` for the package's background services: start on enter, stop on exit; and
closing what a failed run opened without letting the close hang or hide the run's error."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from types import TracebackType
from typing import Any

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


async def close_quietly(closing: Awaitable[Any], timeout: float = 5.0) -> None:
    """Cleanup after a failed trial must not hang or mask the trial's own error."""
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(closing, timeout)
