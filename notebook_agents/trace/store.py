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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._records import FieldError, build, not_utf8, value
from ..errors import NotebookAgentsError
from .schema import EventKind, TraceSpan, check_event_data, check_span, check_time

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
CHECKED_KINDS = frozenset({"agent_state", "user_state"})
"""kinds whose data ``load`` checks against the schema: the states every export and view draws
from (the same since the first format); other kinds' data load as written (a format 1 file's
predate the schema), nested no deeper than ``DEEPEST``"""
DEEPEST = 64
"""how deep an event's data may nest: deeper than any trace's, and well within what the
exports' JSON writers can write"""


class TraceFileError(NotebookAgentsError, ValueError):
    """A file ``Trace.load`` cannot read as a trace: names the file, the line and the field."""


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


class TraceEvents(list[TraceEvent]):
    """A trace's events (``Trace.events``), a list that also knows the trace's clock and its
    livekit spans: what reads the list (``TraceAnalysis(trace.events)``) reads the trace."""

    def __init__(
        self,
        events: Iterable[TraceEvent],
        started_at: float,
        spans: Callable[[], list[TraceSpan]],
    ) -> None:
        super().__init__(events)
        self.started_at = started_at
        """the trace's wall-clock time (Unix seconds) of t = 0"""
        self._spans = spans

    @property
    def spans(self) -> list[TraceSpan]:
        """The trace's livekit spans (``Trace.spans``), as they are now."""
        return self._spans()


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
        """Read the events a ``save`` wrote, each checked field by field, and against what
        every export can carry; for anything else a ``TraceFileError`` naming file, line and
        field."""
        path = Path(path)
        # bytes, decoded line by line: a file that is not UTF-8 is refused at its line
        with path.open("rb") as lines:
            header = _parse_line(path, 1, next(lines, b""))
            if header.get("format") != TRACE_FORMAT and header.get("format") not in EARLIER_FORMATS:
                raise TraceFileError(
                    f"{path}:1: not a notebook-agents trace (format {header.get('format')!r}, "
                    f"expected {TRACE_FORMAT!r}); save one with Trace.save()"
                )
            number = 1  # the line being read, which an error names
            try:
                if "started_at" in header:
                    self.started_at = value(header["started_at"], float, "started_at")
                    check_time(0.0, self.started_at, "started_at")
                for number, line in enumerate(lines, start=2):
                    if not line.strip():
                        continue
                    record = _parse_line(path, number, line)
                    if "span" in record and len(record) == 1:
                        self._spans.append(self._checked_span(record["span"]))
                    else:
                        self._events.append(self._checked_event(record))
            except FieldError as e:
                raise TraceFileError(f"{path}:{number}: {e}") from None

    def _checked_span(self, record: Any) -> TraceSpan:
        try:
            span = build(TraceSpan, record)
            check_span(span, self.started_at)
        except FieldError as e:
            raise e.under("span") from None
        return span

    def _checked_event(self, record: Any) -> TraceEvent:
        event = build(TraceEvent, record)
        check_time(self.started_at, event.t, "t")
        try:
            if event.kind in CHECKED_KINDS:
                check_event_data(event.kind, event.data)
            else:
                for key, held in event.data.items():
                    if _depth(held) > DEEPEST:
                        raise FieldError(f"nested deeper than {DEEPEST} levels", (key,))
        except FieldError as e:
            raise e.under("data") from None
        return event


def _depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (0 for a string or number); without
    recursion, which data nested deep enough would exhaust."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        if isinstance(node, dict):
            todo.extend((inner, level + 1) for inner in node.values())
        elif isinstance(node, list):
            todo.extend((inner, level + 1) for inner in node)
    return deepest


def _parse_line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TraceFileError(f"{path}:{number}: {not_utf8(e)}; is this a trace file?") from None
    except json.JSONDecodeError as e:
        raise TraceFileError(
            f"{path}:{number}: not JSON ({e.msg}); is this a trace file?"
        ) from None
    except RecursionError:
        raise TraceFileError(
            f"{path}:{number}: nested deeper than Python's JSON reader goes; is this a trace file?"
        ) from None
    if not isinstance(record, dict):
        raise TraceFileError(f"{path}:{number}: expected a JSON object")
    return record
