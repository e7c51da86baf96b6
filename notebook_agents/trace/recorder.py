"""Recording in two steps: cheap on the session's thread, the rest later, in order.

livekit calls the trace on the session's own thread, in the middle of a turn: there the trace
only takes the time and keeps the raw fields (``capture``, a few microseconds). ``flush`` turns
what was captured into ``TraceEvent``s (normalized, labelled, numbered) in the order it was
captured and hands them to delivery. It runs wherever the events are next needed: on a
subscriber's loop (a notebook view), or in whoever reads the trace.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .delivery import Delivery
from .schema import ErrorData, ErrorSource, EventKind
from .store import EventLog

Record = tuple[EventKind, Any, str | None]
"""an event before it is stored: kind, data (its kind's TypedDict), agent"""
Normalize = Callable[..., Iterable[Record]]
"""makes the events of one capture from its raw fields: none, one or several"""

T = TypeVar("T")

logger = logging.getLogger(__name__)
_now = time.perf_counter


class Recorder:
    """Captures on the recording thread; flushes into the log, then to the subscribers."""

    def __init__(self, log: EventLog, delivery: Delivery) -> None:
        self._log = log
        self._delivery = delivery
        # (clock reading, normalize, its arguments); appending to a deque needs no lock
        self._pending: deque[tuple[float, Normalize, tuple[Any, ...]]] = deque()
        self._flushing = threading.Lock()
        self._last_t = 0.0
        self.last_alarm = -math.inf
        """the clock's reading at the last capture that may make an ``error`` or a
        ``context_diverged``: whoever looks for those since a moment makes events only if
        this is later (the notebook runner, after every turn)"""
        self.captures = 0
        """how many moments were captured: unchanged, nothing was heard in between"""

    def capture(self, normalize: Normalize, *args: Any) -> None:
        """``normalize(*args)`` will make this moment's events when flushed."""
        self.captures += 1
        self._pending.append((_now(), normalize, args))
        if self._delivery.needs_notify:
            self._delivery.notify()

    def capturing(
        self, normalize: Normalize, fixed: tuple[Any, ...], read: Callable[[T], Any], source: T
    ) -> Callable[[Any], None]:
        """A livekit event handler that only captures: ``normalize(*fixed, read(source),
        event)`` makes its events later. It runs inside livekit's emit for every such event:
        one Python frame, every name bound once (each call saved is a microsecond there)."""
        append, delivery = self._pending.append, self._delivery

        def capture(event: Any) -> None:
            self.captures += 1
            append((_now(), normalize, (*fixed, read(source), event)))
            if delivery.needs_notify:
                delivery.notify()

        return capture

    def capture_alarm(self, normalize: Normalize, *args: Any) -> None:
        """``capture``, for what may make an ``error`` or a ``context_diverged``."""
        self.last_alarm = _now()
        self.capture(normalize, *args)

    def capture_last(self, normalize: Normalize, *args: Any) -> None:
        """``capture``, for an event nothing follows (``closed``): delivered at once."""
        self.captures += 1
        self._pending.append((_now(), normalize, args))
        self._delivery.notify(last=True)

    def capture_error(
        self,
        message: str,
        type_name: str,
        source: ErrorSource,
        agent: str | None,
        *,
        recoverable: bool = True,
    ) -> None:
        """An ``error`` event, made already (at ``agent``, the active agent's label)."""
        data = error_data(message, type_name, source, recoverable)
        self.capture_alarm(given, "error", data, agent)

    def capture_failure(self, error: Exception, agent: str | None = None) -> None:
        """The trace's own failure, as an ``error`` event; never raises."""
        try:
            self.capture_alarm(given, "error", failure(error), agent)
        except Exception:  # nowhere left to record it: say so in the log at least
            logger.exception("the trace could not record its own failure")

    def flush(self) -> None:
        """Make and store the events of every capture so far, in order, and fan them out."""
        with self._flushing:
            pending, t0, last = self._pending, self._log.t0, self._last_t
            made: list[tuple[float, EventKind, Any, str | None]] = []
            append = made.append
            while pending:
                clock, normalize, args = pending.popleft()
                # two threads capturing at once may append out of clock order: t never goes back
                t = last = max(clock - t0, last)
                try:
                    for kind, data, agent in normalize(*args):
                        append((t, kind, data, agent))
                except Exception as e:  # a trace must never break what it observes
                    append((t, "error", failure(e), None))
            self._last_t = last
            new = self._log.extend(made) if made else []
            loopless = self._delivery.fan_out(new) if new else []
        for event in new:
            for callback in loopless:
                try:
                    callback(event)
                except Exception:  # as a loop's exception handler would: logged, not raised
                    logger.exception("trace subscriber %r failed", callback)


def error_data(
    message: str, type_name: str, source: ErrorSource, recoverable: bool = True
) -> ErrorData:
    return {"message": message, "type": type_name, "source": source, "recoverable": recoverable}


def failure(error: Exception) -> ErrorData:
    """The ``error`` data of the trace's own failure."""
    return error_data(f"trace failed: {error!r}", "TraceError", "trace")


def given(kind: EventKind, data: Any, agent: str | None) -> Iterable[Record]:
    """``capture(given, kind, data, agent)``: an event made already (the runner's, the
    trace's own failure)."""
    yield kind, data, agent
