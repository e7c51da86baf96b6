"""Listening to a livekit emitter through its ``emit``, at a fraction of ``on``'s cost.

livekit's ``EventEmitter.emit`` inspects each registered callback's signature on every emit:
inside a running session that costs about 10 µs per event and callback, more than the trace's
own capture (``benchmarks/trace_overhead.py``). A tap wraps the emitter's ``emit`` once, on the
instance, and after livekit's own callbacks calls each listener's handler for the event
directly. Every trace on an emitter shares its one tap; the last to stop listening puts
``emit`` back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

Handler = Callable[[Any], None]
Failed = Callable[[Exception], None]
Listener = tuple[Mapping[Any, Handler], Failed]
Event = TypeVar("Event", bound=str)

_ABSENT = object()
_taps_lock = threading.Lock()


class _Tap:
    """An emitter's ``emit`` and, after it, its listeners' handlers for the event."""

    __slots__ = ("emit", "listeners", "previous")

    def __init__(self, emit: Callable[..., None], previous: object) -> None:
        self.emit = emit
        self.previous = previous
        """the instance's own ``emit`` before the tap (``_ABSENT``: the class's)"""
        # replaced, never mutated: a listener joining or leaving mid-emit changes nothing
        self.listeners: tuple[Listener, ...] = ()

    def __call__(self, event: str, *args: Any) -> None:
        self.emit(event, *args)
        for handlers, failed in self.listeners:
            handler = handlers.get(event)
            if handler is not None:
                try:
                    handler(*args)
                except Exception as e:  # a listener must never break whoever emitted
                    failed(e)


def listen(emitter: Any, handlers: Mapping[Event, Handler], failed: Failed) -> Callable[[], None]:
    """Call ``handlers[event](arg)`` after each ``emitter.emit(event, arg)`` (``failed(e)``
    if it raises) until the returned function is called. ``handlers`` is read at each emit:
    an entry replaced later is called from then on."""
    listener = (handlers, failed)
    with _taps_lock:
        tap = vars(emitter).get("emit")
        if not isinstance(tap, _Tap):
            tap = _Tap(emitter.emit, vars(emitter).get("emit", _ABSENT))
            emitter.emit = tap
        tap.listeners = (*tap.listeners, listener)

    def stop() -> None:
        with _taps_lock:
            tap.listeners = tuple(other for other in tap.listeners if other is not listener)
            # wrapped again since (by someone else): a tap without listeners only passes on
            if tap.listeners or vars(emitter).get("emit") is not tap:
                return
            if tap.previous is _ABSENT:
                del emitter.emit
            else:
                emitter.emit = tap.previous

    return stop
