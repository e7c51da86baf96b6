"""The trace's events in order, livekit's spans as they ended, and their JSON Lines file.

``EventLog`` numbers events as they are stored (``seq``, from 0, no gaps) and hands out copies,
so a reader on another thread never sees the list change under it. Spans are kept apart from
the events: a span has a duration and a parent and is known only once it ends (a turn's span
after the events inside it), so it has no place in the events' order.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._records import FieldError, build, not_utf8, value
from .schema import EventKind, TraceSpan

TRACE_FORMAT = "notebook-agents.trace/5"
"""the first line of a saved trace, so an unrelated or newer file is refused clearly"""
EARLIER_FORMATS = {
    "notebook-agents.trace/4": "no livekit spans",
    "notebook-agents.trace/3": "no tool errors, refused session updates or model_source of "
    "a divergence (the plugin's view)",
    "notebook-agents.trace/2": "no user_transcript events; agent messages do not say whether "
    "they were interrupted",
    "notebook-agents.trace/1": "its metrics events hold livekit's metrics of one model call, "
    "not the session's usage",
}
"""formats ``load`` still reads, and how their events differ (docs/trace-format.md)"""


@dataclass(frozen=True, slots=True)  # slots: one object per event, not two (a dict too)
class TraceEvent:
    """One session event: ``t`` is seconds since the trace started; ``agent`` the active agent;
    ``data`` a plain dict, its keys per kind as ``schema.EVENT_DATA[kind]`` writes them."""

    seq: int
    t: float
    kind: EventKind
    agent: str | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class EventLog:
    """The events stored so far, numbered in the order they are appended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[TraceEvent] = []
        self._spans: list[TraceSpan] = []
        # spans as they ended, made when next read (appending to a deque needs no lock)
        self._unmade_spans: deque[Callable[[], TraceSpan]] = deque()
        self.t0 = time.perf_counter()
        """the monotonic clock's reading at trace time 0"""
        self.started_at = time.time()
        """wall-clock time (Unix seconds) of t = 0, so a view can tell how long ago t was"""

    def extend(self, made: list[tuple[float, EventKind, Any, str | None]]) -> list[TraceEvent]:
        """Store events (time, kind, data, agent), numbered in this order; ``data`` is the
        kind's TypedDict (a plain dict). Returns them."""
        with self._lock:
            first = len(self._events)
            events = [
                TraceEvent(seq, t, kind, agent, data)
                for seq, (t, kind, data, agent) in enumerate(made, start=first)
            ]
            self._events.extend(events)
        return events

    def events(self) -> list[TraceEvent]:
        with self._lock:
            return list(self._events)

    def since(self, seq: int) -> list[TraceEvent]:
        with self._lock:
            return self._events[seq:]

    def __len__(self) -> int:
        return len(self._events)

    def add_span(self, make: Callable[[], TraceSpan]) -> None:
        """Keep a span that ended; ``make()`` gives it when the spans are next read (on the
        session's thread a span's end is only kept, as an event's capture is)."""
        self._unmade_spans.append(make)

    def spans(self) -> list[TraceSpan]:
        with self._lock:
            unmade = self._unmade_spans
            while unmade:
                self._spans.append(unmade.popleft()())
            return list(self._spans)

    def save(self, path: str | Path) -> Path:
        """Write the events as JSON Lines (a format line first), then one ``{"span": ...}``
        line per span."""
        path = Path(path)
        with path.open("w", encoding="utf-8") as out:
            header = {"format": TRACE_FORMAT, "started_at": self.started_at}
            out.write(json.dumps(header) + "\n")
            for event in self.events():
                out.write(json.dumps(event.to_record(), default=str) + "\n")
            for span in self.spans():
                out.write(json.dumps({"span": span.to_record()}, default=str) + "\n")
        return path

    def load(self, path: str | Path) -> None:
        """Read the events a ``save`` wrote, each checked field by field; ``ValueError``
        naming file and line for anything else."""
        path = Path(path)
        # bytes, decoded line by line: a file that is not UTF-8 is refused at its line
        with path.open("rb") as lines:
            header = _parse_line(path, 1, next(lines, b""))
            if header.get("format") != TRACE_FORMAT and header.get("format") not in EARLIER_FORMATS:
                raise ValueError(
                    f"{path}:1: not a notebook-agents trace (format {header.get('format')!r}, "
                    f"expected {TRACE_FORMAT!r}); save one with Trace.save()"
                )
            number = 1  # the line being read, which an error names
            try:
                if "started_at" in header:
                    self.started_at = value(header["started_at"], float, "started_at")
                for number, line in enumerate(lines, start=2):
                    if not line.strip():
                        continue
                    record = _parse_line(path, number, line)
                    if "span" in record and len(record) == 1:
                        self._spans.append(build(TraceSpan, record["span"]))
                    else:
                        self._events.append(build(TraceEvent, record))
            except FieldError as e:
                raise ValueError(f"{path}:{number}: {e}") from None


def _parse_line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{number}: {not_utf8(e)}; is this a trace file?") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: not JSON ({e.msg}); is this a trace file?") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object")
    return record
