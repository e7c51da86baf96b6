"""A view fed by a trace's events, sent to the browser incrementally.

Each event the view wants crosses once, in batches at most 30 times a second; a new rendering
(another output of the view, a reloaded page) asks for the history and gets it once.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from ..trace import Trace, TraceEvent
from ._throttle import Throttle


class TraceStreamView(anywidget.AnyWidget):
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
        self._next_seq = 0
        self._throttle = Throttle(self._flush)
        # subscribe before reading the history: an event recorded in between arrives through
        # the subscription too and is dropped by its seq, rather than lost
        self._unsubscribe = trace.subscribe(self._on_event)
        for event in trace.events:
            self._take(event)
        self._flush()
        self.on_msg(self._on_browser_message)

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        """What the browser gets of ``event``; None: nothing."""
        raise NotImplementedError

    def _on_event(self, event: TraceEvent) -> None:
        if self._take(event):
            self._throttle.request()

    def _take(self, event: TraceEvent) -> bool:
        if event.seq < self._next_seq:
            return False
        self._next_seq = event.seq + 1
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

    def close(self) -> None:
        self._unsubscribe()
        self._throttle.cancel()
        super().close()
