"""The views a trace feeds: each event taken once and in order, the history first, then live;
the browser updated at most 30 times a second.

``TraceFedView`` folds events into state the browser gets as traits (StateView,
AgentGraphView); ``TraceStreamView`` sends the events themselves, incrementally: each event
the view wants crosses once, in batches, and a new rendering (another output of the view, a
reloaded page) asks for the history and gets it once (TimelineView, ChatView).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

import anywidget
import traitlets

from ..trace import Trace, TraceEvent
from ._throttle import MAX_HZ, Throttle

SPAN_POLL_S = 0.5
"""how often a live view looks for livekit spans that ended after the last event (a turn's or
a handoff's span closes after its events, and no event announces it)"""


class TraceFedView(anywidget.AnyWidget):
    """Base of the views fed by a trace. A subclass sets up its state, then calls ``_follow``;
    ``_take`` gets each event once, ``_flush`` sends what changed, throttled."""

    flush_hz: ClassVar[float] = MAX_HZ
    """the most flushes a second: fewer for a view whose flush reads the whole trace"""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._next_seq = 0
        self._throttle = Throttle(self._flush, self.flush_hz)
        self._unsubscribe: Callable[[], None] = _nothing
        self._fed_by: Trace | None = None

    def _follow(self, trace: Trace | None) -> None:
        """Take ``trace``'s history, then each event it records from now on; flush once."""
        self._fed_by = trace
        if trace is not None:
            # subscribe before reading the history: an event recorded in between arrives
            # through the subscription too and is dropped by its seq, rather than lost
            self._unsubscribe = trace.subscribe(self._on_event)
            for event in trace.events:
                self._offer(event)
        self._flush()

    def _catch_up(self) -> None:
        """Fold in what the trace recorded that its delivery (on the kernel's loop, in
        batches) has not brought yet, and flush what waits: a static picture drawn in a cell
        right after a turn shows the trace as it is, not as last delivered."""
        if self._fed_by is None:
            return
        if any([self._offer(event) for event in self._fed_by.events]):  # each offered
            self._throttle.request()
        self._throttle.flush_pending()

    def _take(self, event: TraceEvent) -> bool:
        """Fold ``event`` into the view; True if the browser needs to hear of it."""
        raise NotImplementedError

    def _flush(self) -> None:
        """Send the browser what changed since the last flush."""
        raise NotImplementedError

    def _on_event(self, event: TraceEvent) -> None:
        if self._offer(event):
            self._throttle.request()

    def _offer(self, event: TraceEvent) -> bool:
        if event.seq < self._next_seq:
            return False
        self._next_seq = event.seq + 1
        return self._take(event)

    def close(self) -> None:
        if hasattr(self, "_throttle"):  # else its __init__ refused it: nothing to undo
            self._unsubscribe()
            self._throttle.cancel()
        super().close()


class TraceStreamView(TraceFedView):
    """Base of the views that show events; subclasses choose and shape them in ``_record``."""

    started_at = traitlets.Float(0.0).tag(sync=True)
    """wall-clock seconds of trace time 0"""
    live = traitlets.Bool(True).tag(sync=True)
    """False for a loaded trace or once the session closed"""
    event_count = traitlets.Int(0).tag(sync=True)
    """events sent to the browser so far"""

    def __init__(self, trace: Trace, **kwargs: Any) -> None:
        super().__init__(started_at=trace.started_at, live=not trace.loaded, **kwargs)
        self.trace = trace
        self._sent: list[dict[str, Any]] = []
        self._pending: list[dict[str, Any]] = []
        self._follow(trace)
        self.on_msg(self._on_browser_message)

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        """What the browser gets of ``event``; None: nothing."""
        raise NotImplementedError

    def _take(self, event: TraceEvent) -> bool:
        if event.kind == "closed":
            self.live = False
        record = self._record(event)
        if record is not None:
            self._pending.append(record)
        return record is not None

    def _flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        self._sent.extend(batch)
        self.event_count = len(self._sent)
        self.send({"type": "events", "events": batch})

    def _on_browser_message(self, _: Any, content: dict[str, Any], __: Any) -> None:
        if content.get("type") == "history":
            self.send({"type": "events", "events": self._sent, "reset": True})


class SpanWatch:
    """Looks for livekit spans that ended since the view last read them, for the views that
    split a trace's waits from its spans (WaterfallView, TimelineView): ``grew`` (the view's
    throttled refresh) when some did; again every ``SPAN_POLL_S`` until ``closed()`` says the
    session ended and none came after. A view calls ``read`` as it reads the spans."""

    _poll: asyncio.TimerHandle | None = None
    """the next look, while live"""

    def __init__(self, trace: Trace, grew: Callable[[], None], closed: Callable[[], bool]) -> None:
        self._trace = trace
        self._grew = grew
        self._closed = closed
        self.seen = 0
        """the spans the view read last"""
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # no loop to look again from: events alone bring spans in
            self._loop = None
        else:
            self._poll = self._loop.call_later(SPAN_POLL_S, self._look)

    def read(self) -> bool:
        """Note the spans as the view reads them now; True if some ended since last time."""
        count = len(self._trace.spans)
        grew, self.seen = count != self.seen, count
        return grew

    def _look(self) -> None:
        assert self._loop is not None  # only a loop calls it
        self._poll = None
        grew = len(self._trace.spans) != self.seen
        if grew:
            self._grew()
        if grew or not self._closed():
            self._poll = self._loop.call_later(SPAN_POLL_S, self._look)

    def cancel(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None


def _nothing() -> None:
    """Unsubscribes a view that follows no trace."""
