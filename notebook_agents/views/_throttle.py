"""Coalesce updates to the front end: at most ``hz`` flushes a second, on the caller's loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

MAX_HZ = 30.0


class Throttle:
    """``request()`` asks for ``flush()``; it runs at once if the last flush is old enough,
    else once at the end of the interval, however many requests came in between."""

    def __init__(self, flush: Callable[[], None], hz: float = MAX_HZ) -> None:
        self._flush = flush
        self.interval_s = 1.0 / hz
        self._last = float("-inf")
        self._scheduled: asyncio.TimerHandle | None = None
        self.flushes = 0

    def request(self) -> None:
        if self._scheduled is not None:
            return
        wait = self._last + self.interval_s - time.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if wait <= 0 or loop is None:
            self._run()
        else:
            self._scheduled = loop.call_later(wait, self._run)

    def flush_pending(self) -> None:
        """Run a flush waiting for its interval now."""
        if self._scheduled is not None:
            self.cancel()
            self._run()

    def cancel(self) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None

    def _run(self) -> None:
        self._scheduled = None
        self._last = time.monotonic()
        self.flushes += 1
        self._flush()
