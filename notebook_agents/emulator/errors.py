"""Errors shaped like OpenAI's, for HTTP responses and Realtime ``error`` events."""

from __future__ import annotations

from typing import Any

from aiohttp import web


class EmulatorError(RuntimeError):
    """The emulator could not start or serve; the message names the fix."""


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def http_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> web.Response:
    """A JSON error response as api.openai.com sends it."""
    return web.json_response(error_body(message, type=type, code=code, param=param), status=status)
