"""Errors a ``Trace`` raises when misused: each derives from ``NotebookAgentsError`` and keeps
the builtin base it had (a file that is no trace is ``store.TraceFileError``; a collector that
refuses an export, ``otlp.OTLPSendError``)."""

from __future__ import annotations

from ..errors import NotebookAgentsError


class TraceAttachError(NotebookAgentsError, RuntimeError):
    """A ``Trace`` or reader attached twice, or a reader used before it is attached: a trace
    records one session, and a reader records into one trace (make a new one per session,
    and give a reader to its trace first, ``trace.attach_reader(reader)``)."""


class TraceArgumentError(NotebookAgentsError, TypeError):
    """An argument a ``Trace`` cannot use: a ``model_server=`` that cannot say the model's
    conversation (no ``conversation(session_id)`` and ``item_ids(session_id)``, as an
    ``Emulator`` has)."""
