"""What LiveKit Inference's STT and TTS websockets share: a JSON message protocol in which the
client opens with ``session.create`` (livekit-agents 1.8.9 ``inference/stt.py`` ``_connect_ws``,
``inference/tts.py`` ``_connect_ws``) and the gateway answers an unserviceable message with an
``error`` message (the clients raise ``APIError`` on ``"type": "error"``, reading its ``code``).

Messages from the client arrive half a round trip late and are handled in order; replies leave
half a round trip late, in order (``LatencyModel``). The ``drop_after`` and ``error_on``
faults apply as on the realtime socket: the socket is lost after N client messages, and every
message of one type is answered with an ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from ...errors import NotebookAgentsError
from .._http import lose_connection
from .._open_connections import OPEN_CONNECTIONS_KEY
from .._settings import ConnectionLog
from ..latency import DelayedPipe, precise_sleep

logger = logging.getLogger(__name__)

Message = dict[str, Any]

_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class InferenceError(NotebookAgentsError):
    """A client message the gateway would refuse: answered as an ``error`` message, with an
    HTTP-like ``code`` (the clients keep it as the error's ``code``)."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class InferenceSocket:
    """One client's websocket: delayed, ordered messages both ways, handed to ``handle``."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        log: ConnectionLog,
    ) -> None:
        self._ws = ws
        self._request = request
        self.log = log
        self.latency = log.latency
        self._handle: Callable[[Message], Awaitable[None]] | None = None
        self.session_id = f"inference_{uuid.uuid4().hex[:12]}"
        self._client_messages = 0
        self._dropped = False
        self._inbound: DelayedPipe[str] = DelayedPipe(self.latency.one_way_s, self._handle_raw)
        self._outbound: DelayedPipe[Message | None] = DelayedPipe(
            self.latency.one_way_s, self._send_now
        )
        self._closed = asyncio.Event()

    async def run(self, handle: Callable[[Message], Awaitable[None]]) -> None:
        """Hand each client message to ``handle`` until the client leaves, the session is
        closed, or a fault drops it."""
        self._handle = handle
        open_connections = self._request.app[OPEN_CONNECTIONS_KEY]
        open_connections.add(self)
        pipes = [
            asyncio.create_task(self._inbound.run(), name="inference-inbound"),
            asyncio.create_task(self._outbound.run(), name="inference-outbound"),
        ]
        reading = asyncio.create_task(self._read(), name="inference-read")
        closed = asyncio.create_task(self._closed.wait(), name="inference-closed")
        try:
            await asyncio.wait([reading, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            tasks = [*pipes, reading, closed]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._ws.close()
            open_connections.discard(self)

    async def _read(self) -> None:
        async for message in self._ws:
            if message.type == WSMsgType.TEXT:
                self._inbound.put(message.data)
            elif message.type == WSMsgType.ERROR:
                break

    async def shut_down(self) -> None:
        """The server is stopping: close now."""
        await self._ws.close(code=WSCloseCode.GOING_AWAY, message=b"emulator shutting down")

    def send(self, message: Message) -> None:
        """Queue a message; it leaves half a round trip later."""
        self._outbound.put(message)

    def close(self) -> None:
        """Close the socket once everything queued before has left."""
        self._outbound.put(None)

    async def _send_now(self, message: Message | None) -> None:
        if message is None:
            self._closed.set()
            return
        if self._ws.closed or self._dropped:
            return
        self.log.record("out", str(message["type"]))
        with contextlib.suppress(ConnectionResetError):
            await self._ws.send_str(json.dumps(message))

    def error(self, failure: InferenceError) -> None:
        self.send({"type": "error", "code": failure.code, "message": failure.message})

    async def _handle_raw(self, raw: str) -> None:
        if self._dropped:
            return
        self._client_messages += 1
        kind = "?"
        try:
            message = json.loads(raw)
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                raise InferenceError(f"a message must be a JSON object with a type, not {raw!r}")
            kind = message["type"]
            self.log.record("in", kind)
            if kind == self.log.faults.error_on:
                raise InferenceError(
                    f"Injected fault: every {kind} fails on this connection.", code=500
                )
            assert self._handle is not None
            await self._handle(message)
        except json.JSONDecodeError as e:
            self.error(InferenceError(f"the message is not JSON ({e})"))
        except InferenceError as e:
            self.error(e)
        except Exception as e:  # the emulator's own failure, named with its traceback
            logger.exception("the LiveKit Inference emulator failed on %s", kind)
            self.error(InferenceError(f"The emulator failed on {kind}: {e!r}", code=500))
        drop_after = self.log.faults.drop_after
        if drop_after is not None and self._client_messages >= drop_after:
            self._drop()

    def _drop(self) -> None:
        self._dropped = True
        lose_connection(self._request)
        self._closed.set()


async def accept(
    request: web.Request,
    log: ConnectionLog,
    serve: Callable[[InferenceSocket], Callable[[Message], Awaitable[None]]],
) -> web.StreamResponse:
    """Upgrade ``request`` (after the connect's round trips) and serve it with the message
    handler ``serve`` makes for its socket."""
    ws = web.WebSocketResponse(max_msg_size=_MAX_MESSAGE_BYTES, autoping=True)
    if not ws.can_prepare(request).ok:
        raise InferenceError(f"{request.path} is a websocket: connect with a websocket client.")
    await precise_sleep(log.latency.connect_s())
    await ws.prepare(request)
    socket = InferenceSocket(ws, request, log)
    await socket.run(serve(socket))
    return ws
