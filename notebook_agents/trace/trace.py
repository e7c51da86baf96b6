"""Trace: every event of a LiveKit ``AgentSession``, normalized, each exactly once.

A ``Trace`` attaches to a session on the session's own loop (the job thread, under the
runner) and records ``TraceEvent``s on one monotonic clock. On that thread it only captures
(``recorder``); the events are made when they are next needed, by a reader of the trace or on
a subscriber's loop (``delivery``), so views never touch the job thread.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from livekit.agents import AgentSession
from livekit.agents.voice.remote_session import RemoteSession

from .._deprecated import warn_renamed
from . import chrome, otlp
from .contexts import agent_contexts, divergences
from .delivery import Delivery, Subscriber
from .errors import TraceArgumentError, TraceAttachError
from .foreign import ForeignReader
from .model_server import ModelServer
from .reading import SessionReader
from .recorder import Recorder, given
from .remote import RemoteReader
from .schema import BargeInData, EventKind, TraceSpan
from .store import EventLog, TraceEvent, TraceEvents

Reader = TypeVar("Reader", bound=ForeignReader)


class Trace:
    """Records a session's events; attach with ``Trace(session)`` or ``trace.attach(session)``.

    ``trace.events`` is the list so far; ``trace.subscribe(fn)`` calls ``fn`` with each new
    event on the subscriber's loop. ``save``/``load`` round-trip through JSON Lines.
    """

    def __init__(
        self,
        session: AgentSession[Any] | None = None,
        *,
        model_server: ModelServer | None = None,
        model_truth: ModelServer | None = None,
    ) -> None:
        self._log = EventLog()
        self._delivery = Delivery(self._flush)
        self._recorder = Recorder(self._log, self._delivery)
        self._reader = SessionReader(self._recorder)
        self._foreign: ForeignReader | None = None
        """the reader of a session that is not a livekit one in this kernel, once attached"""
        if model_truth is not None:
            _model_truth_renamed("Trace(model_truth=...)", "Trace(model_server=...)")
        self.model_server = model_server if model_server is not None else model_truth
        self.loaded = False
        """True for a trace read by ``load``: a replay, it will not grow"""
        if session is not None:
            self.attach(session)

    @property
    def model_server(self) -> ModelServer | None:
        """Where each realtime session's conversation can be read as the model holds it (an
        ``Emulator`` does for the sessions it serves): livekit's chat context is then held
        against it as well as against the plugin's view. None: the plugin's view only."""
        return self._reader.model.server

    @model_server.setter
    def model_server(self, server: ModelServer | None) -> None:
        if server is not None and not all(
            callable(getattr(server, method, None)) for method in ("conversation", "item_ids")
        ):
            raise TraceArgumentError(
                f"model_server= needs an object with conversation(session_id) and "
                f"item_ids(session_id), such as an Emulator, not {type(server).__name__}"
            )
        self._reader.model.server = server

    @property
    def model_truth(self) -> ModelServer | None:
        """Deprecated: ``model_server``."""
        _model_truth_renamed("Trace.model_truth", "Trace.model_server")
        return self.model_server

    @model_truth.setter
    def model_truth(self, server: ModelServer | None) -> None:
        _model_truth_renamed("Trace.model_truth", "Trace.model_server")
        self.model_server = server

    @property
    def started_at(self) -> float:
        """wall-clock time (Unix seconds) of t = 0, so a view can tell how long ago t was"""
        return self._log.started_at

    # -- reading (each read first makes the events captured so far) ------------------------

    def _flush(self) -> None:
        self._recorder.flush()

    @property
    def events(self) -> TraceEvents:
        """The events so far, in order: a list that knows the trace's clock and spans."""
        self._flush()
        return TraceEvents(self._log.events(), self.started_at, self._log.spans)

    def __len__(self) -> int:
        self._flush()
        return len(self._log)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    @property
    def spans(self) -> list[TraceSpan]:
        """livekit's OpenTelemetry spans of this session, in the order they ended (a runner
        captures them; ``livekit_spans``)."""
        return self._log.spans()

    def _span_ended(self, make: Callable[[], TraceSpan]) -> None:
        """Keep a span that ended, made (``make()``) when the spans are next read."""
        self._log.add_span(make)

    def _add_span(self, span: TraceSpan) -> None:
        """Keep a span made already (a test's, a replay's)."""
        self._log.add_span(lambda: span)

    def of_kind(self, *kinds: EventKind) -> list[TraceEvent]:
        return [e for e in self.events if e.kind in kinds]

    def events_since(self, seq: int) -> list[TraceEvent]:
        """The events from sequence number ``seq`` on (``len(trace)`` taken earlier)."""
        self._flush()
        return self._log.since(seq)

    def now(self) -> float:
        """Trace time now: mark where something begins, for ``problems_since``."""
        return time.perf_counter() - self._log.t0

    def problems_since(self, t: float, agent: str | None) -> list[TraceEvent]:
        """The ``error`` events from trace time ``t`` on, ``agent``'s ``context_diverged``
        while its chat context and its model's conversation are apart, and the refused
        ``session.update`` while the active realtime session runs without what it set, in
        order.

        Makes the events only when one of these may be among them, so asking after every turn
        (the notebook runner does) costs the session next to nothing."""
        model = self._reader.model
        alarmed = self._recorder.last_alarm - self._log.t0 >= t
        unconfigured = bool(model.lacking())
        if not alarmed and agent not in model.parted and not unconfigured:
            return []
        events = self.events
        first = bisect.bisect_left(events, t, key=lambda event: event.t)
        found = [e for e in events[first:] if e.kind == "error"]
        standing = [divergences(events).get(agent) if agent is not None else None]
        if unconfigured:  # the refusal that left the session without its settings stands
            standing.append(next(filter(_refused_update, reversed(events)), None))
        for event in standing:
            if event is not None and event not in found:
                found = sorted([*found, event], key=lambda event: event.seq)
        return found

    def contexts_at(self, t: float | None = None) -> dict[str, list[dict[str, Any]]]:
        """Each agent's chat context at trace time ``t`` (default: the end), rebuilt from the
        events: what a replay shows when scrubbed to ``t``. Items as ``describe_item`` gives."""
        return agent_contexts(self.events, t)

    def divergences_at(self, t: float | None = None) -> dict[str, TraceEvent]:
        """Each agent whose chat context and model's conversation were apart at trace time
        ``t`` (default: the end): its ``context_diverged`` event, both sides as they parted."""
        return divergences(self.events, t)

    def to_records(self) -> list[dict[str, Any]]:
        """Plain dicts, one per event, for pandas or matplotlib."""
        return [e.to_record() for e in self.events]

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for each new event, on the calling thread's running loop.

        Returns a function that unsubscribes. Without a running loop, callbacks run on
        whichever thread records the event.
        """
        return self._delivery.subscribe(callback)

    def to_otlp_json(self) -> str:
        """The events and livekit's spans as OTLP JSON (Jaeger, Langfuse, Phoenix, an
        OpenTelemetry collector's ``/v1/traces``)."""
        return otlp.to_otlp_json(self)

    def send_otlp(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int:
        """Send what ``to_otlp_json`` writes to an OpenTelemetry collector (OTLP/HTTP, with
        OpenTelemetry's own exporter); returns how many spans it took. ``endpoint``: its base
        URL (``http://127.0.0.1:4318``, sent to ``/v1/traces``) or its traces URL; raises
        ``OTLPSendError`` when the collector does not take them
        (``notebook_agents.trace.otlp.send_otlp`` says more)."""
        return otlp.send_otlp(self, endpoint, headers=headers, timeout=timeout)

    def to_chrome_json(self) -> str:
        """The events and livekit's spans as Chrome trace-event JSON (ui.perfetto.dev,
        speedscope, ``chrome://tracing``): write it to a file named ``*.chrome-trace.json``
        (speedscope reads ``*.chrome.json`` as another format)."""
        return chrome.to_chrome_json(self)

    # -- saving ----------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the events and spans as JSON Lines (a format line first; docs/trace-format.md)."""
        self._flush()
        return self._log.save(path)

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """A trace saved by ``save``, for replay in the views; no session is attached. A file
        that is not one is a ``TraceFileError`` naming its line and field."""
        trace = cls()
        trace.loaded = True
        trace._log.load(path)
        return trace

    # -- attaching -------------------------------------------------------------------------

    def attach(self, session: AgentSession[Any]) -> None:
        """Start recording ``session``; call before ``session.start`` to see everything."""
        self._reader.attach(session)

    def attach_remote(
        self, remote: RemoteSession, *, agent_classes: Mapping[str, str] | None = None
    ) -> None:
        """Start recording an agent in another process, through livekit's ``RemoteSession``
        (``AgentProcess`` does): the same kinds of event, from what the process reports.
        ``agent_classes`` (read as each agent starts) gives each agent's class by its id, as
        ``module:qualname``: the protocol reports ids only, so without it agents are named by
        their ids."""
        self.attach_reader(RemoteReader(agent_classes)).attach(remote)

    def attach_reader(self, reader: Reader) -> Reader:
        """Record what ``reader`` reads of a session outside this kernel's livekit (another
        framework's, as ``notebook_agents.videosdk.reading.VideoSDKReader`` reads VideoSDK's;
        ``VideoSDKRunner`` does): the same kinds of event, so every view and analysis reads
        it. Returns ``reader``, to attach to its session next (before the session starts,
        to see everything)."""
        if self._foreign is not None:
            raise TraceAttachError("this Trace is already attached; make a new Trace per session")
        reader.record_into(self._recorder)
        self._foreign = reader
        return reader

    def detach(self) -> None:
        """Stop recording and restore every agent method the trace wrapped."""
        if self._foreign is not None:
            self._foreign.detach()
        self._reader.detach()
        self._delivery.kick()  # the session's loop may close before a scheduled kick

    def compare_contexts(self, *, if_changed: bool = False) -> None:
        """Record ``context_diverged`` if the active agent's chat context and its realtime
        model's conversation now differ (``context_converged`` if they agree again).

        The trace calls it between turns; call it when you know the session is settled (the
        runner does after each turn). ``if_changed``: not if the trace heard nothing since
        the last comparison (the model's server is read again only after a change on the
        client's side). Never raises: a failure is recorded instead."""
        if if_changed:
            self._reader.model.compare_if_changed()
        else:
            self._reader.model.compare()

    @property
    def caller_conditions(self) -> list[dict[str, Any]]:
        """The line conditions the caller's audio crosses now, in their written form
        (``Line.to_records()``; [] a clean line), as the runner sets them: each user message
        heard from speech keeps those in force when the caller began to speak (its
        ``conditions``)."""
        return self._reader.caller_conditions

    @caller_conditions.setter
    def caller_conditions(self, conditions: list[dict[str, Any]]) -> None:
        self._reader.caller_conditions = conditions

    def record_failure(self, message: str) -> None:
        """Record why the session cannot go on (an ``error``, not recoverable); the
        ``closed`` that follows carries it as its error, with reason ``error``."""
        (self._foreign or self._reader).record_failure(message)

    def record_closed(self, reason: str, error: str | None = None) -> None:
        """Record ``closed`` once: from livekit's close event, or from the runner when
        livekit closes a session without one (a close that raised)."""
        (self._foreign or self._reader).record_closed(reason, error)

    def record_barge_in(self, data: BargeInData, agent: str | None) -> None:
        """Record a caller's speech over ``agent``'s reply and what became of the reply
        (``barge_in``), once the reply has ended."""
        self._recorder.capture(given, "barge_in", data, agent)

    def _record(self, kind: EventKind, data: dict[str, Any], agent: str | None = None) -> None:
        """Record an event made already, as a session's would be (a benchmark's replay)."""
        if kind in ("error", "context_diverged"):
            self._recorder.capture_alarm(given, kind, data, agent)
        else:
            self._recorder.capture(given, kind, data, agent)


def _refused_update(event: TraceEvent) -> bool:
    return event.kind == "error" and event.data.get("type") == "SessionUpdateRejected"


def _model_truth_renamed(old: str, new: str) -> None:
    warn_renamed(
        old,
        f"{new} (the same object: where the model's conversation is read, such as an Emulator)",
        stacklevel=4,  # the user's line: past here and the Trace method
    )
