"""The emulator's errors: those it raises to the caller (it cannot start, a reply rule's reply
is wrong), and those shaped like OpenAI's, for HTTP responses and Realtime ``error`` events."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import NotebookAgentsError


class EmulatorError(NotebookAgentsError, RuntimeError):
    """The emulator could not start or serve; the message names the fix."""


class ReplyError(NotebookAgentsError, ValueError):
    """A reply built wrong, as a reply rule returns it: a ``VerdictReply`` whose verdict is
    not ``pass``, ``fail`` or ``maybe``, a ``ToolCallsReply`` without calls."""


class UnknownRuleError(NotebookAgentsError, ValueError):
    """``ReplyRules.remove`` given a rule that is not among those added (the defaults cannot
    be removed, only preceded)."""


class ReplyRuleError(NotebookAgentsError, TypeError):
    """A reply rule that answered with a reply of the wrong kind for the request: a
    ``VerdictReply`` to a request that is not a judge's (return one only when
    ``ctx.judgment`` is set)."""


class ServiceError(NotebookAgentsError):
    """What the real service would refuse, worded as OpenAI words it: answered over HTTP as an
    error response (``response()``), on a Realtime socket as an ``error`` event (``to_event()``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        code: str | None = None,
        param: str | None = None,
        type: str = "invalid_request_error",
        event_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        """the HTTP status, where the error is answered over HTTP"""
        self.code = code
        self.param = param
        self.type = type
        self.event_id = event_id
        """the client event the error answers, on a Realtime socket"""

    def response(self) -> web.Response:
        """The JSON error response api.openai.com sends."""
        return web.json_response({"error": self._error()}, status=self.status)

    def to_event(self, event_id: str | None = None) -> dict[str, Any]:
        """An ``error`` server event answering ``event_id`` (default: the error's own)."""
        return {"type": "error", "error": {**self._error(), "event_id": event_id or self.event_id}}

    def _error(self) -> dict[str, Any]:
        return {"message": self.message, "type": self.type, "param": self.param, "code": self.code}


def http_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> web.Response:
    """A JSON error response as api.openai.com sends it."""
    return ServiceError(message, status=status, type=type, code=code, param=param).response()
