"""What every HTTP endpoint of the emulator does with a request before its own work: open the
connection's log (its latency and faults from the query string), start its clock (a request
on a new TCP connection pays the connect), and read a JSON body as OpenAI reads it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ._params import ParameterError
from ._settings import SETTINGS_KEY, ConnectionLog
from .errors import ServiceError
from .latency import LatencyModel

Json = dict[str, Any]

MAX_BODY_BYTES = 26 * 1024 * 1024
"""the largest request body the emulator reads: OpenAI's 25 MB audio file and the form around
it (aiohttp's default, 1 MiB, refused a spoken turn over ~21.8 s with a plain-text 413)"""


def open_request(
    request: web.Request, kind: str, path: str, event: str | None = None
) -> tuple[ConnectionLog, Clock]:
    """The request's connection log and clock, ``event`` recorded as come in; a bad latency
    or fault parameter in its query is a ``ServiceError`` (400 ``invalid_parameter``)."""
    arrived = time.perf_counter()
    try:
        log = request.app[SETTINGS_KEY].open_connection(kind, path, request.query)
    except ParameterError as e:
        raise ServiceError(str(e), code="invalid_parameter") from None
    clock = start_clock(request, log, arrived)
    if event is not None:
        log.record("in", event)
    return log, clock


# ---------------------------------------------------------------- new-connection tracking

# A transport serves one server only, so one process-wide set is exact; weak, so closed
# connections drop out. The app itself is frozen once serving, so it cannot hold the set.
_seen_transports: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
_seen_lock = threading.Lock()  # emulators on several threads share the set


def first_request_on_connection(request: web.Request) -> bool:
    """True for the first request on its TCP connection: only that one pays the connect cost."""
    transport = request.transport
    if transport is None:
        return False
    with _seen_lock:
        if transport in _seen_transports:
            return False
        _seen_transports.add(transport)
        return True


@dataclass(frozen=True)
class Clock:
    """When a request's answer may leave, from the moment it arrived."""

    latency: LatencyModel
    new_connection: bool
    arrived: float

    def first_byte(self) -> float:
        return self.arrived + self.latency.http_first_byte_s(new_connection=self.new_connection)

    def delta(self, index: int) -> float:
        """The ``index``-th content delta (0 = the first chunk)."""
        return self.first_byte() + index * self.latency.token_ms / 1000.0

    def error(self) -> float:
        """An error does no server work: only the network costs."""
        connect = self.latency.connect_s() if self.new_connection else 0.0
        return self.arrived + connect + self.latency.rtt_ms / 1000.0


def start_clock(request: web.Request, log: ConnectionLog, arrived: float) -> Clock:
    """The request's clock; a new TCP connection is logged as ``connect`` (it costs more)."""
    new_connection = first_request_on_connection(request)
    if new_connection:
        log.record("in", "connect")
    return Clock(log.latency, new_connection, arrived)


async def read_json(request: web.Request) -> Json:
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge as e:
        raise ServiceError(f"The request body is too large: {e.text}", status=413) from None
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ServiceError(
            f"We could not parse the JSON body of your request ({e}). Send a JSON object "
            'such as {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}.',
        ) from None
    if not isinstance(body, dict):
        raise ServiceError(f"The request body must be a JSON object, not {type(body).__name__}.")
    return body


def lose_connection(request: web.Request) -> None:
    """Lose ``request``'s connection abruptly, as a network failure would: no close frame."""
    transport = request.transport
    if transport is not None:
        transport.abort()
