"""Subscribers called on the loop they subscribed from, however many threads record.

Events are recorded on the session's thread (the runner's job thread) and shown by views on
the kernel's loop. Each subscriber loop has an outbox; a *kick* lets the trace finish the
events waiting (``flush``, which fans them out to the outboxes) and wakes every subscriber
loop, where ``deliver`` calls the loop's callbacks in order. A kick runs on the recording
loop between its steps, batched: at most ``DELIVERY_INTERVAL_S`` after the first event that
asked for one, at once for the last event (``closed``). Every wake-up of another thread costs
the session (a syscall, then two threads taking turns at the GIL) more than making the
events does, so there are few, and the thread woken has little to do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

from .store import TraceEvent

Subscriber = Callable[[TraceEvent], None]

DELIVERY_INTERVAL_S = 0.1
"""subscribers on another thread get events in batches at most this late (10 a second, as a
live view needs; each wake-up costs the session: 0.01 s cost a traced round ~1.5% more, 0.05 s
~0.7% more, benchmarks/trace_overhead.py)"""

_Entry = tuple[asyncio.AbstractEventLoop | None, Subscriber]


class Delivery:
    """Who gets each new event, and on which loop."""

    def __init__(self, flush: Callable[[], None]) -> None:
        self._flush = flush
        self._lock = threading.Lock()
        # replaced on (un)subscribe, never mutated: read without copying or locking
        self._subscribers: list[_Entry] = []
        self._loops: tuple[asyncio.AbstractEventLoop, ...] = ()
        self._loopless = False
        self.needs_notify = False
        """whether a capture must call ``notify``: a loopless subscriber, or subscriber loops
        and no kick scheduled yet (read without a lock: at worst one call too many)"""
        # events fanned out but not yet delivered, per subscriber loop
        self._outboxes: dict[asyncio.AbstractEventLoop, list[tuple[Subscriber, TraceEvent]]] = {}
        self._kick_pending = False  # a kick is scheduled on a recording loop
        self._scheduled: set[asyncio.AbstractEventLoop] = set()  # loops a delivery is due on

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with each event recorded from now on, on the calling thread's
        running loop (without one: on the thread that records). Returns the unsubscriber."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        entry = (loop, callback)
        self._flush()  # what was recorded before is not new to this subscriber
        with self._lock:
            self._set([*self._subscribers, entry])

        def unsubscribe() -> None:
            self._flush()  # what was recorded while subscribed still reaches it
            with self._lock:
                self._set([s for s in self._subscribers if s is not entry])

        return unsubscribe

    def _set(self, subscribers: list[_Entry]) -> None:
        self._subscribers = subscribers
        self._loops = tuple({loop: None for loop, _ in subscribers if loop is not None})
        self._loopless = any(loop is None for loop, _ in subscribers)
        self.needs_notify = self._loopless or (bool(self._loops) and not self._kick_pending)

    # -- on the recording thread -----------------------------------------------------------

    def notify(self, *, last: bool = False) -> None:
        """An event waits to be flushed: have it delivered. Cheap when nobody subscribed."""
        if self._loopless:  # called on the recording thread: now
            self._flush()
        if not self._loops or (self._kick_pending and not last):
            return
        self._kick_pending = True
        self.needs_notify = self._loopless
        try:
            recording: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            recording = None
        if recording is None or last:
            self.kick()
        elif recording in self._loops:  # a subscriber here: deliver once this step is over
            recording.call_soon(self.kick)
        else:
            recording.call_later(DELIVERY_INTERVAL_S, self.kick)

    def kick(self) -> None:
        """Make the events waiting and wake every subscriber loop to deliver them (``detach``
        calls it: the session's loop may close before a scheduled kick)."""
        self._flush()
        self._kick_pending = False
        self.needs_notify = self._loopless or bool(self._loops)
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for loop in self._loops:
            with self._lock:
                if loop in self._scheduled:  # its delivery, not yet run, will take these too
                    continue
                self._scheduled.add(loop)
            try:
                if loop is here:  # no wake-up needed (a syscall)
                    loop.call_soon(self._deliver, loop)
                else:
                    loop.call_soon_threadsafe(self._deliver, loop)
            except RuntimeError:  # the loop is closed: nobody is left there to deliver to
                with self._lock:
                    self._outboxes.pop(loop, None)

    # -- wherever the events are flushed ---------------------------------------------------

    def fan_out(self, events: Sequence[TraceEvent]) -> list[Subscriber]:
        """Put ``events`` in each subscriber loop's outbox, in order; returns the loopless
        subscribers, for the caller to call with them."""
        with self._lock:
            subscribers = self._subscribers
            for event in events:
                for loop, callback in subscribers:
                    if loop is None:
                        continue
                    if loop.is_closed():  # nothing will drain it
                        self._outboxes.pop(loop, None)
                        continue
                    self._outboxes.setdefault(loop, []).append((callback, event))
        return [callback for loop, callback in subscribers if loop is None]

    # -- on a subscriber's loop ------------------------------------------------------------

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        """Call this loop's callbacks with the events waiting, in order."""
        with self._lock:
            self._scheduled.discard(loop)  # from here on, a kick schedules another
        self._flush()
        with self._lock:
            outbox = self._outboxes.pop(loop, [])
        for callback, event in outbox:
            try:
                callback(event)
            except Exception as e:  # one failing view must not starve the others
                loop.call_exception_handler(
                    {"message": f"trace subscriber {callback!r} failed", "exception": e}
                )
