"""What every reader of a session outside this kernel's livekit shares: the runner's word.

A ``Trace`` reads a livekit ``AgentSession`` in the kernel itself (``reading``); a session it
hears about some other way (another process's reports, ``remote``; another framework's
session, ``notebook_agents.videosdk``) is read by a ``ForeignReader``. Each knows the active
agent's label, and takes from its runner why the session failed and that it closed, once.
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import TraceAttachError
from .recorder import Recorder, error_data, given
from .schema import EventKind


class ForeignReader:
    """Records into the trace it is given to (``Trace.attach_reader``) at the active agent
    (``agent``); ``detach`` stops it."""

    def __init__(self) -> None:
        self._recorder_of_trace: Recorder | None = None
        self.agent: str | None = None
        """the active agent's label, as the session last made it known"""
        self._closing = threading.Lock()
        self._closed_recorded = False
        self._failure: str | None = None

    def record_into(self, recorder: Recorder) -> None:
        """Record into ``recorder`` from now on (``Trace.attach_reader`` gives its own)."""
        if self._recorder_of_trace is not None:
            raise TraceAttachError("this reader already records a trace; make a new one per trace")
        self._recorder_of_trace = recorder

    @property
    def _recorder(self) -> Recorder:
        if self._recorder_of_trace is None:
            raise TraceAttachError(
                f"this {type(self).__name__} records no trace yet: "
                "give it to one first, trace.attach_reader(reader)"
            )
        return self._recorder_of_trace

    def detach(self) -> None:
        """Stop listening; a subclass puts back what it changed."""

    def record_failure(self, message: str) -> None:
        self._failure = message
        data = error_data(message, "RunnerError", "runner", recoverable=False)
        self._recorder.capture_alarm(given, "error", data, self.agent)

    def record_closed(self, reason: str, error: str | None = None) -> None:
        with self._closing:
            if self._closed_recorded:
                return
            self._closed_recorded = True
        if self._failure is not None:
            reason, error = "error", error or self._failure
        self._recorder.capture_last(given, "closed", {"reason": reason, "error": error}, self.agent)

    def _capture(self, kind: EventKind, data: Any) -> None:
        self._recorder.capture(given, kind, data, self.agent)
