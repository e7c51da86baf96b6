"""The Realtime websocket's route (``/v1/realtime``): the model and settings checked, then a
``RealtimeConnection`` served, or a connection refused so that the client learns why."""

from __future__ import annotations

import contextlib
import json

from aiohttp import WSCloseCode, WSMsgType, web

from .._open_connections import OPEN_CONNECTIONS_KEY, serve
from .._params import ParameterError
from .._settings import SETTINGS_KEY
from ..conversation import new_id
from ..errors import ServiceError, http_error
from ..latency import precise_sleep
from .connection import RealtimeConnection
from .protocol import check_server_event

MAX_MESSAGE_BYTES = 16 * 1024 * 1024


async def realtime_websocket(request: web.Request) -> web.StreamResponse:
    """Upgrade to a Realtime session after checking the model and the latency/fault query."""
    settings = request.app[SETTINGS_KEY]
    model = request.query.get("model", "")
    transcription = _beta_transcription(request)
    # a transcription session names its model in the session, not the URL
    if not (transcription and not model) and not settings.models.knows(model, realtime=True):
        return await _refuse(
            request,
            ServiceError(
                f"The model '{model}' does not exist or you do not have access to it. The "
                "emulator knows: " + ", ".join(sorted(settings.models.realtime)) + " (add more "
                "with ModelCatalog.add(..., realtime=True)).",
                status=404,
                code="model_not_found",
                param="model",
            ),
        )
    try:
        log = settings.open_connection("realtime", request.path, request.query)
    except ParameterError as e:
        return await _refuse(request, ServiceError(str(e), code="invalid_parameter"))
    # autoclose off: a client's close frame is answered through the delay pipes, a round trip
    # later, as a real server's would be (closing a session costs the client 1 RTT)
    ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, autoping=True, autoclose=False)
    if not ws.can_prepare(request).ok:
        return http_error(400, "/v1/realtime is a websocket: connect with a websocket client.")
    # TCP + TLS + upgrade: the client's connect returns after this many round trips.
    await precise_sleep(log.latency.connect_s())
    await ws.prepare(request)
    await serve(
        request.app[OPEN_CONNECTIONS_KEY],
        RealtimeConnection(ws, request, settings, log, model, transcription=transcription),
    )
    return ws


def _beta_transcription(request: web.Request) -> bool:
    """Whether the client opens a transcription session in the beta protocol.

    OpenAI's realtime transcription guide (beta): connect to
    ``wss://api.openai.com/v1/realtime?intent=transcription`` with the ``OpenAI-Beta:
    realtime=v1`` header, configure with ``transcription_session.update``; the server answers
    ``transcription_session.created`` on connect (OpenAPI spec:
    RealtimeBetaServerEventTranscriptionSessionCreated) and ``transcription_session.updated``.
    """
    beta = request.headers.get("OpenAI-Beta", "").replace(" ", "")
    return request.query.get("intent") == "transcription" and "realtime=v1" in beta.split(",")


async def _refuse(request: web.Request, reason: ServiceError) -> web.StreamResponse:
    """Refuse a connection so that the client learns why.

    A plain request gets the HTTP error. A websocket is accepted and told in an ``error``
    event, and stays open: the plugin reports a refused handshake only as an opaque
    ``WSServerHandshakeError`` (its caller's reply then times out), and a close right after
    the error makes it reconnect and discard the pending reply.
    """
    ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES)
    if not ws.can_prepare(request).ok:
        return reason.response()
    await ws.prepare(request)
    refused = RefusedConnection(ws, reason, request.app[SETTINGS_KEY].validate)
    await serve(request.app[OPEN_CONNECTIONS_KEY], refused)
    return ws


class RefusedConnection:
    """A websocket the emulator will not serve: it says why, then answers every event with it.

    Each answer carries the event's id, so whatever the client awaits (a reply, a context
    sync) fails at once with the reason instead of timing out. Closed by the client.
    """

    def __init__(self, ws: web.WebSocketResponse, reason: ServiceError, validate: bool) -> None:
        self._ws = ws
        self._reason = reason
        self._validate = validate

    async def run(self) -> None:
        await self._send(None)
        async for message in self._ws:
            if message.type == WSMsgType.TEXT:
                await self._send(_event_id(message.data))

    async def shut_down(self) -> None:
        await self._ws.close(code=WSCloseCode.GOING_AWAY, message=b"emulator shutting down")

    async def _send(self, event_id: str | None) -> None:
        event = self._reason.to_event(event_id)
        event["event_id"] = new_id("event_")
        if self._validate:
            check_server_event(event)
        with contextlib.suppress(ConnectionResetError):
            await self._ws.send_json(event)


def _event_id(raw: str) -> str | None:
    """The ``event_id`` of a client event, if it has one (it may not even be JSON)."""
    try:
        event = json.loads(raw)
    except json.JSONDecodeError:
        return None
    event_id = event.get("event_id") if isinstance(event, dict) else None
    return event_id if isinstance(event_id, str) else None
