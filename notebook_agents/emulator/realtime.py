"""The Realtime websocket (``/v1/realtime``): one ``RealtimeConnection`` per client.

Events from the client arrive half a round trip late and are handled in order; replies leave
half a round trip late, in order. Responses run as tasks so a cancel can overtake them. An
event that cannot be served is answered with its ``error``; the session stays open.

Audio in: appended PCM16 24 kHz goes through a loudness VAD (``listening.ServerVad``) when the
session has turn detection (``semantic_vad`` is heard as server VAD): speech_started (a
barge-in cancels the running response, ``turn_detected``), speech_stopped, then the turn is
committed and added without words, heard by pocketsphinx in the words of the session's tools,
and its transcript sent (``input_audio_transcription.completed`` if asked, and
``conversation.item.done``); the reply rules answer the transcript as the caller's text (a
turn the recognizer fails on is not answered: its error is sent instead). Silence before the
prefix padding of where speech may begin is dropped: an open microphone does not pile up.
Audio out: a reply in the ``audio`` modality is eSpeak's voice, sent as fast as the latency
model says its text would be (a token's words and their audio together, ``token_ms`` apart),
faster than it plays, as the service sends it; the client's speaker plays it in real time and
truncates what it did not play: a truncate cuts the words to the share of the audio heard
(and stops a reply still being sent).

A transcription session (``?intent=transcription`` with the beta protocol's ``OpenAI-Beta:
realtime=v1`` header, as VideoSDK's ``OpenAISTT`` opens it) hears the same way and never
answers: ``transcription_session.created``, ``transcription_session.update`` (``.updated``),
then per turn speech_started, speech_stopped, ``input_audio_buffer.committed``,
``conversation.item.created`` and the transcript, in the beta protocol's events.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from aiohttp import WSCloseCode, WSMsgType, web

from ..speech import Vocabulary, synthesize, transcribe
from ._http import lose_connection
from ._open_connections import OpenConnections, Served, serve
from ._params import ParameterError
from ._settings import SETTINGS_KEY, ConnectionLog, EmulatorSettings
from .conversation import Conversation, public
from .errors import ServiceError, http_error
from .latency import DelayedPipe, precise_sleep
from .listening import ServerVad
from .protocol import (
    BETA_CLIENT_EVENTS,
    BETA_SERVER_EVENTS,
    CLIENT_EVENTS,
    SERVER_EVENTS,
    check_server_event,
    new_id,
    parse_client_event,
)
from .replies import ReplyContext, TextReply, ToolCallReply, ToolSpec, calls_of, tokens
from .vocabulary import vocabulary

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24_000
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
OPEN_CONNECTIONS_KEY = web.AppKey("open_connections", OpenConnections[Served])
"""every websocket being served (realtime and LiveKit Inference): what agents would lose"""


async def close_open_connections(app: web.Application) -> None:
    """On shutdown, say goodbye to connected clients instead of waiting for them to leave."""
    connections = app[OPEN_CONNECTIONS_KEY]
    for connection in list(connections):
        await connection.shut_down()


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
    ws = web.WebSocketResponse(max_msg_size=_MAX_MESSAGE_BYTES, autoping=True, autoclose=False)
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
    ws = web.WebSocketResponse(max_msg_size=_MAX_MESSAGE_BYTES)
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


def default_session(model: str) -> dict[str, Any]:
    """The session a new connection starts with, as the service defaults it."""
    audio_format = {"type": "audio/pcm", "rate": SAMPLE_RATE}
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": new_id("sess_"),
        "model": model,
        "output_modalities": ["audio"],
        "instructions": "",
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "audio": {
            "input": {
                "format": audio_format,
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": {
                    "type": "server_vad",
                    "threshold": 0.5,
                    "prefix_padding_ms": 300,
                    "silence_duration_ms": 200,
                    "create_response": True,
                    "interrupt_response": True,
                },
            },
            "output": {"format": audio_format, "voice": "marin", "speed": 1.0},
        },
    }


def merge_session(current: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Apply a ``session.update``: only the fields it names change (``audio`` merges deeply)."""
    merged = copy.deepcopy(current)
    for key, value in update.items():
        if key == "audio" and isinstance(value, dict):
            audio = merged.setdefault("audio", {})
            for direction, settings in value.items():
                if isinstance(settings, dict):
                    audio.setdefault(direction, {}).update(copy.deepcopy(settings))
        elif key != "type":
            merged[key] = copy.deepcopy(value)
    return merged


@dataclass
class _Response:
    id: str
    task: asyncio.Task[None] | None = None
    cancel_reason: str | None = None
    """why the response is being cancelled: ``client_cancelled``, ``turn_detected``"""


class RealtimeConnection:
    """One client's session: its settings, conversation, audio buffer and active response."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        settings: EmulatorSettings,
        log: ConnectionLog,
        model: str,
        *,
        transcription: bool = False,
    ) -> None:
        self._ws = ws
        self.transcription = transcription
        """a beta transcription session: it hears, transcribes and never answers"""
        self._client_events = BETA_CLIENT_EVENTS if transcription else CLIENT_EVENTS
        self._server_events = BETA_SERVER_EVENTS if transcription else SERVER_EVENTS
        self._beta_session: dict[str, Any] = {}
        """the transcription session as the beta protocol shows it"""
        self._request = request
        self.settings = settings
        self._log = log
        self.latency = log.latency
        self.faults = log.faults
        self.session = default_session(model)
        if transcription:
            self._transcription_update(_TRANSCRIPTION_DEFAULTS)
        self.conversation = Conversation()
        log.conversation, log.session_id = self.conversation, self.session["id"]
        self._audio = bytearray()
        self._audio_start_ms = 0  # where the input buffer begins in the session's input audio
        self._vad: ServerVad | None = None
        self._speech_item_id = ""
        self._response: _Response | None = None
        self._events_in = 0
        self._responses_run = 0
        self._dropped = False
        self._timers: set[asyncio.TimerHandle] = set()
        self._close_answered = asyncio.Event()
        self._inbound: DelayedPipe[str | None] = DelayedPipe(
            self.latency.one_way_s, self._handle_raw
        )
        self._outbound: DelayedPipe[dict[str, Any] | None] = DelayedPipe(
            self.latency.one_way_s, self._send_now
        )

    async def run(self) -> None:
        if self.transcription:
            self.send({"type": "transcription_session.created", "session": self._beta_session})
        else:
            self.send({"type": "session.created", "session": self.session})
        pipes = [
            asyncio.create_task(self._inbound.run(), name="emulator-inbound"),
            asyncio.create_task(self._outbound.run(), name="emulator-outbound"),
        ]
        try:
            async for message in self._ws:
                if message.type == WSMsgType.TEXT:
                    self._inbound.put(message.data)
                elif message.type == WSMsgType.ERROR:
                    break
            if not self._ws.closed and not self._dropped:
                # the client's close frame travels in order behind its events, and the reply
                # travels back behind ours
                self._inbound.put(None)
                await asyncio.wait_for(self._close_answered.wait(), self._close_budget_s())
        except asyncio.TimeoutError:
            pass
        finally:
            for timer in self._timers:
                timer.cancel()
            tasks = [
                *pipes,
                *([self._response.task] if self._response and self._response.task else []),
            ]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._ws.close()

    async def shut_down(self) -> None:
        """The server is stopping: close now, without the courtesy of a delayed close."""
        self._close_answered.set()
        await self._ws.close(code=WSCloseCode.GOING_AWAY, message=b"emulator shutting down")

    # -- sending ---------------------------------------------------------------------------

    def send(self, event: dict[str, Any], *, extra_delay_s: float = 0.0) -> None:
        """Queue a server event; it leaves half a round trip (plus ``extra_delay_s``) later."""
        event.setdefault("event_id", new_id("event_"))
        if self.settings.validate:
            check_server_event(event, self._server_events)
        if extra_delay_s > 0:
            timer = asyncio.get_running_loop().call_later(extra_delay_s, self._outbound.put, event)
            self._timers.add(timer)
        else:
            self._outbound.put(event)

    async def _send_now(self, event: dict[str, Any] | None) -> None:
        if event is None:  # the answer to the client's close frame
            if not self._ws.closed:
                await self._ws.close()
            self._close_answered.set()
            return
        if self._ws.closed or self._dropped:
            return
        self._log.record("out", event["type"])
        with contextlib.suppress(ConnectionResetError):
            await self._ws.send_str(json.dumps(event))

    def _ack(self, event: dict[str, Any], item_type: str | None) -> None:
        """Conversation acks can be held back by the ``ack_delay_ms`` fault."""
        delayed = self.faults.delays_ack_of(item_type)
        self.send(event, extra_delay_s=self.faults.ack_delay_ms / 1000.0 if delayed else 0.0)

    def fails_next_response(self) -> bool:
        """``fail_responses``, or one of the first ``fail_first`` responses."""
        self._responses_run += 1
        return self.faults.fail_responses or self._responses_run <= self.faults.fail_first

    # -- receiving -------------------------------------------------------------------------

    @property
    def buffered_ms(self) -> int:
        """How much input audio the buffer holds."""
        return _ms(len(self._audio))

    def _close_budget_s(self) -> float:
        return 2 * self.latency.rtt_ms / 1000.0 + 5.0

    async def _handle_raw(self, raw: str | None) -> None:
        if self._dropped:
            return
        if raw is None:  # the client's close frame arrived: answer it half a round trip later
            self._outbound.put(None)
            return
        self._events_in += 1
        event: dict[str, Any] = {}
        # OpenAI's reference for the ``error`` server event: "Most errors are recoverable and
        # the session will stay open": whatever goes wrong with one event is that event's
        # error, and the next is handled as usual
        try:
            event = parse_client_event(
                raw, validate=self.settings.validate, events=self._client_events
            )
            self._log.record("in", event["type"])
            if event["type"] == self.faults.error_on:
                raise ServiceError(
                    f"Injected fault: every {event['type']} fails on this connection.",
                    code="injected_fault",
                    type="server_error",
                    event_id=event.get("event_id"),
                )
            await self._dispatch(event)
        except ServiceError as e:
            self.send(e.to_event())
        except Exception as e:  # the emulator's own failure, named with its traceback
            logger.exception("the realtime emulator failed on %s", event.get("type"))
            self.send(
                ServiceError(
                    f"The emulator failed on {event.get('type')}: {e!r} (its log has the "
                    "traceback). The session stays open.",
                    type="server_error",
                    event_id=event.get("event_id"),
                ).to_event()
            )
        if self.faults.drop_after is not None and self._events_in >= self.faults.drop_after:
            self._drop()

    def _drop(self) -> None:
        self._dropped = True
        lose_connection(self._request)

    async def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        event_id = event.get("event_id")
        if kind == "session.update":
            self._update_session(event)
        elif kind == "transcription_session.update":
            self._update_transcription_session(event)
        elif kind == "conversation.item.create":
            await precise_sleep(self.latency.item_ms / 1000.0)
            self._create_item(event["item"], event.get("previous_item_id"), event_id)
        elif kind == "conversation.item.delete":
            deleted = self.conversation.get(event["item_id"])
            self.conversation.delete(event["item_id"], event_id=event_id)
            self._ack(
                {"type": "conversation.item.deleted", "item_id": event["item_id"]},
                deleted["type"] if deleted else None,
            )
        elif kind == "conversation.item.truncate":
            self._truncate(event)
        elif kind == "conversation.item.retrieve":
            item = self.conversation.get(event["item_id"])
            if item is None:
                raise ServiceError(
                    f"Item with id '{event['item_id']}' not found.",
                    code="item_retrieve_invalid_item_id",
                    param="item_id",
                    event_id=event_id,
                )
            self.send({"type": "conversation.item.retrieved", "item": public(item)})
        elif kind == "input_audio_buffer.append":
            chunk = _pcm16(event["audio"], event_id)
            self._audio.extend(chunk)
            await self._listen(np.frombuffer(chunk, "<i2"))
        elif kind == "input_audio_buffer.commit":
            await self._commit_audio(event_id, len(self._audio))
        elif kind == "input_audio_buffer.clear":
            self._audio_start_ms += _ms(len(self._audio))
            self._audio.clear()
            self.send({"type": "input_audio_buffer.cleared"})
        elif kind == "response.create":
            self._create_response(event.get("response") or {}, event_id)
        elif kind == "response.cancel":
            self._cancel_response(event.get("response_id"), event_id)
        # output_audio_buffer.clear only applies to WebRTC sessions: nothing to do here.

    def _update_session(self, event: dict[str, Any]) -> None:
        update = event["session"]
        if update.get("type") == "transcription":
            raise ServiceError(
                "Transcription sessions are not emulated; use a realtime session.",
                code="invalid_value",
                param="session.type",
                event_id=event.get("event_id"),
            )
        self.session = merge_session(self.session, update)
        if self._vad is not None and not self._vad.speaking:
            self._vad = None  # heard with the new turn detection from here on
        self.settings.offered.offer(self.session.get("instructions") or "", self._function_tools())
        self.send({"type": "session.updated", "session": self.session})

    def _update_transcription_session(self, event: dict[str, Any]) -> None:
        if not self.transcription:
            raise ServiceError(
                "transcription_session.update is for a transcription session: connect with "
                "?intent=transcription (and the OpenAI-Beta: realtime=v1 header).",
                code="invalid_value",
                param="type",
                event_id=event.get("event_id"),
            )
        self._transcription_update(event["session"])
        if self._vad is not None and not self._vad.speaking:
            self._vad = None
        self.send({"type": "transcription_session.updated", "session": self._beta_session})

    def _transcription_update(self, update: dict[str, Any]) -> None:
        """Apply a beta transcription session's settings to the session the emulator hears
        with. A transcription session only transcribes (OpenAI's realtime transcription
        guide: "the model does not generate responses"): its turns are never answered."""
        beta = {**self._beta_session, **copy.deepcopy(update)}
        beta.setdefault("id", self.session["id"])
        beta["object"] = "realtime.transcription_session"
        self._beta_session = beta
        audio_input = self.session["audio"]["input"]
        audio_input["transcription"] = beta.get("input_audio_transcription")
        audio_input["noise_reduction"] = beta.get("input_audio_noise_reduction")
        turn = beta.get("turn_detection")
        audio_input["turn_detection"] = (
            {**turn, "create_response": False, "interrupt_response": False} if turn else None
        )

    def _function_tools(self) -> list[ToolSpec]:
        """The session's function tools, as the reply rules and speech recognition see them."""
        tools = self.session.get("tools") or []
        return [_tool_spec(tool) for tool in tools if tool.get("type") == "function"]

    def _vocabulary(self) -> Vocabulary:
        """What a caller of this session may say: the words of its instructions and tools,
        and those its transcription expects (``prompt``, ``keywords``); a transcription
        session's, those of what the emulator's models were offered (``/audio/transcriptions``
        listens in the same)."""
        transcription = self.session["audio"]["input"].get("transcription") or {}
        if self.transcription:  # a cascaded session's STT: it hears what its LLM was offered
            return self.settings.offered.vocabulary(
                [str(transcription.get("prompt") or "")],
                keywords=[str(k) for k in transcription.get("keywords") or []],
            )
        return vocabulary(
            self.session.get("instructions") or "",
            self._function_tools(),
            [str(transcription.get("prompt") or "")],
            keywords=[str(k) for k in transcription.get("keywords") or []],
        )

    def _create_item(
        self, item: dict[str, Any], previous_item_id: str | None, event_id: str | None
    ) -> None:
        stored = self.conversation.insert(item, previous_item_id, event_id=event_id)
        self._ack(
            {
                "type": "conversation.item.added",
                "item": public(stored),
                "previous_item_id": self.conversation.predecessor(stored["id"]),
            },
            stored["type"],
        )

    def _truncate(self, event: dict[str, Any]) -> None:
        self.conversation.truncate(
            event["item_id"],
            event["content_index"],
            event["audio_end_ms"],
            event_id=event.get("event_id"),
        )
        self.send(
            {
                "type": "conversation.item.truncated",
                "item_id": event["item_id"],
                "content_index": event["content_index"],
                "audio_end_ms": event["audio_end_ms"],
            }
        )

    async def _listen(self, samples: np.ndarray) -> None:
        """Server VAD: speech started (a barge-in cancels the response), speech stopped (the
        turn is committed, heard, and answered)."""
        turn = self.session["audio"]["input"].get("turn_detection")
        if not turn:
            return
        if self._vad is None:
            fed_ms = self._audio_start_ms + _ms(len(self._audio) - samples.nbytes)
            self._vad = ServerVad(SAMPLE_RATE, turn, fed_ms)
        vad = self._vad
        for heard in vad.feed(samples):
            if heard.kind == "started":
                self._speech_item_id = new_id("item_")
                started = max(heard.ms - vad.prefix_ms, self._audio_start_ms)
                self.send(
                    {
                        "type": "input_audio_buffer.speech_started",
                        "audio_start_ms": started,
                        "item_id": self._speech_item_id,
                    }
                )
                if turn.get("interrupt_response", True) and self._response is not None:
                    self._stop_response(self._response, "turn_detected")
            else:
                self.send(
                    {
                        "type": "input_audio_buffer.speech_stopped",
                        "audio_end_ms": heard.ms,
                        "item_id": self._speech_item_id,
                    }
                )
                spoken = (heard.ms - self._audio_start_ms) * SAMPLE_RATE * 2 // 1000
                understood = await self._commit_audio(None, spoken, self._speech_item_id)
                if understood and turn.get("create_response", True) and self._response is None:
                    self._create_response({}, None)
        self._forget_silence(vad)

    def _forget_silence(self, vad: ServerVad) -> None:
        """Drop the input audio no turn will hold: an open microphone's silence would
        otherwise pile up (48 kB a second) for as long as the call lasts."""
        needed_ms = vad.needed_from_ms()
        if needed_ms is None or needed_ms <= self._audio_start_ms:
            return
        del self._audio[: (needed_ms - self._audio_start_ms) * SAMPLE_RATE * 2 // 1000]
        self._audio_start_ms = needed_ms

    async def _commit_audio(
        self, event_id: str | None, size: int, item_id: str | None = None
    ) -> bool:
        """The first ``size`` bytes of the input buffer become a user item, then are heard
        (False: the recognizer failed on them, which was answered as their error).

        As the service does, the item is committed and added at once with no transcript (the
        transcription runs after the commit); the transcript follows in
        ``input_audio_transcription.completed`` (when the session asks for it) and in
        ``conversation.item.done``. The plugin appends every transcript it is told to its
        copy of the item, so a transcript in ``added`` would reach its context twice.
        """
        duration_ms = _ms(size)
        if duration_ms < 100:
            raise ServiceError(
                "Error committing input audio buffer: buffer too small. Expected at least "
                f"100ms of audio, but buffer only has {duration_ms}ms of audio.",
                code="input_audio_buffer_commit_empty",
                event_id=event_id,
            )
        audio = np.frombuffer(bytes(self._audio[:size]), "<i2")
        del self._audio[:size]
        self._audio_start_ms += duration_ms
        previous = self.conversation.last_id()
        part: dict[str, Any] = {"type": "input_audio", "transcript": None}
        item: dict[str, Any] = {"type": "message", "role": "user", "content": [part]}
        if item_id is not None:
            item["id"] = item_id
        stored = self.conversation.insert(item)
        part = stored["content"][0]
        self.send(
            {
                "type": "input_audio_buffer.committed",
                "item_id": stored["id"],
                "previous_item_id": previous,
            }
        )
        # the beta protocol's name for a new item (conversation.item.created) is GA's added
        added = "conversation.item.created" if self.transcription else "conversation.item.added"
        self._ack(
            {"type": added, "item": public(stored), "previous_item_id": previous},
            stored["type"],
        )
        # pocketsphinx on a worker thread: the emulator's loop keeps serving meanwhile
        try:
            transcript = await asyncio.to_thread(transcribe, audio, SAMPLE_RATE, self._vocabulary())
        except Exception as e:
            self._not_heard(stored, previous, e, event_id)
            return False
        if self.session["audio"]["input"].get("transcription"):
            part["transcript"] = transcript
            self.send(
                {
                    "type": "conversation.item.input_audio_transcription.completed",
                    "item_id": stored["id"],
                    "content_index": 0,
                    "transcript": transcript,
                    "usage": {"type": "duration", "seconds": duration_ms / 1000.0},
                }
            )
        else:
            # the model hears the words even when nobody asked for them written down
            part["_heard"] = transcript
        self._item_done(stored, previous)
        return True

    def _item_done(self, stored: dict[str, Any], previous: str | None) -> None:
        if self.transcription:  # the beta protocol has no conversation.item.done
            return
        # held back with its item's added event by ack_delay_ms, so it never overtakes it
        done = {"type": "conversation.item.done", "item": public(stored)}
        self._ack({**done, "previous_item_id": previous}, stored["type"])

    def _not_heard(
        self,
        stored: dict[str, Any],
        previous: str | None,
        failure: Exception,
        event_id: str | None,
    ) -> None:
        """The recognizer failed on a committed turn: the turn stays, without words, and the
        failure is its error (the service's event for a failed transcription, if one was
        asked for, and an ``error``); it is not answered, and the next turn is heard anew."""
        logger.warning("speech recognition failed on %s", stored["id"], exc_info=failure)
        cause = f"{type(failure).__name__}: {failure}"
        if self.session["audio"]["input"].get("transcription"):
            self.send(
                {
                    "type": "conversation.item.input_audio_transcription.failed",
                    "item_id": stored["id"],
                    "content_index": 0,
                    "error": {
                        "type": "server_error",
                        "code": "transcription_failed",
                        "message": cause,
                        "param": None,
                    },
                }
            )
        self._item_done(stored, previous)
        self.send(
            ServiceError(
                f"The emulator's speech recognizer failed on the turn {stored['id']} ({cause}): "
                "it was not heard or answered. Later turns are heard as usual; the emulator's "
                "log has the traceback.",
                type="server_error",
                code="transcription_failed",
                event_id=event_id,
            ).to_event()
        )

    # -- responses -------------------------------------------------------------------------

    def _create_response(self, params: dict[str, Any], event_id: str | None) -> None:
        if self._response is not None:
            raise ServiceError(
                "Conversation already has an active response in progress: "
                f"{self._response.id}. Wait until the response is finished before creating "
                "a new one.",
                code="conversation_already_has_active_response",
                event_id=event_id,
            )
        response = _Response(id=new_id("resp_"))
        self._response = response
        response.task = asyncio.create_task(self._run_response(response, params))

    def _cancel_response(self, response_id: str | None, event_id: str | None) -> None:
        active = self._response
        if active is None or (response_id is not None and response_id != active.id):
            raise ServiceError(
                "Cancellation failed: no active response found"
                + (f" with id '{response_id}'." if response_id else "."),
                code="response_cancel_not_active",
                event_id=event_id,
            )
        self._stop_response(active, "client_cancelled")

    def _stop_response(self, response: _Response, reason: str) -> None:
        """Cancel ``response``: it ends ``cancelled`` with ``reason``."""
        response.cancel_reason = reason
        assert response.task is not None
        response.task.cancel()

    async def _run_response(self, response: _Response, params: dict[str, Any]) -> None:
        run = _ResponseRun(self, response, params)
        try:
            await run.execute()
        except asyncio.CancelledError:
            if response.cancel_reason is None:
                raise
            run.finish("cancelled", {"type": "cancelled", "reason": response.cancel_reason})
        finally:
            if self._response is response:
                self._response = None


class _ResponseRun:
    """One response from ``response.created`` to ``response.done``, in the service's order."""

    def __init__(
        self, connection: RealtimeConnection, response: _Response, params: dict[str, Any]
    ) -> None:
        self._conn = connection
        session = connection.session
        self.id = response.id
        self.params = params
        self.modalities: list[str] = params.get("output_modalities") or session["output_modalities"]
        self.instructions: str = params.get("instructions") or session.get("instructions") or ""
        self.tools: list[dict[str, Any]] = (
            params["tools"] if params.get("tools") is not None else session.get("tools") or []
        )
        self.in_conversation = params.get("conversation", "auto") != "none"
        self.output: list[dict[str, Any]] = []
        self._open_item: dict[str, Any] | None = None
        self._output_tokens = 0

    def _body(self, status: str, status_details: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "realtime.response",
            "status": status,
            "status_details": status_details,
            "output": [public(item) for item in self.output],
            "output_modalities": self.modalities,
            "metadata": self.params.get("metadata"),
            "conversation_id": "conv_emulator" if self.in_conversation else None,
            "usage": self._usage() if status != "in_progress" else None,
        }

    def _usage(self) -> dict[str, Any]:
        input_tokens = sum(len(turn.text.split()) + 1 for turn in self._conn.conversation.turns())
        audio = "audio" in self.modalities
        return {
            "input_tokens": input_tokens,
            "output_tokens": self._output_tokens,
            "total_tokens": input_tokens + self._output_tokens,
            "input_token_details": {
                "text_tokens": input_tokens,
                "audio_tokens": 0,
                "cached_tokens": 0,
            },
            "output_token_details": {
                "text_tokens": 0 if audio else self._output_tokens,
                "audio_tokens": self._output_tokens if audio else 0,
            },
        }

    async def execute(self) -> None:
        latency = self._conn.latency
        await precise_sleep(latency.created_ms / 1000.0)
        self._conn.send({"type": "response.created", "response": self._body("in_progress")})
        faults = self._conn.faults
        if faults.cancel_responses:
            self.finish("cancelled", {"type": "cancelled", "reason": "turn_detected"})
            return
        if self._conn.fails_next_response():
            self.finish(
                "failed",
                {
                    "type": "failed",
                    "error": {"type": "server_error", "code": "injected_fault"},
                },
            )
            return
        reply = self._conn.settings.rules.reply(
            ReplyContext(
                instructions=self.instructions,
                history=self._conn.conversation.turns(),
                tools=[_tool_spec(tool) for tool in self.tools if tool.get("type") == "function"],
            )
        )
        speech = None
        if isinstance(reply, TextReply) and "audio" in self.modalities:
            # eSpeak on a worker thread, while the model "thinks": it costs no latency
            speech = asyncio.ensure_future(asyncio.to_thread(synthesize, reply.text))
        try:
            await precise_sleep(latency.first_token_ms / 1000.0)
            if not isinstance(reply, TextReply):
                for call in calls_of(reply):
                    self._function_call(call)
            elif speech is not None:
                await self._spoken_message(reply, await speech, latency.token_ms / 1000.0)
            else:
                await self._message(reply, latency.token_ms / 1000.0)
        finally:
            if speech is not None:
                speech.cancel()
        self.finish("completed")

    def _add_item(self, item: dict[str, Any]) -> dict[str, Any]:
        conversation = self._conn.conversation
        previous = conversation.last_id()
        if self.in_conversation:
            item = conversation.insert(item)
        self.output.append(item)
        self._open_item = item
        self._announce("added", item, previous_item_id=previous)
        return item

    def _close_item(self, status: str) -> None:
        item = self._open_item
        if item is None:
            return
        item["status"] = status
        self._announce("done", item)
        self._open_item = None

    def _announce(self, phase: str, item: dict[str, Any], **conversation: Any) -> None:
        """``response.output_item.<phase>`` for the response's latest item, and
        ``conversation.item.<phase>`` (with ``conversation``'s fields) when it joins one."""
        shown = public(item)
        self._conn.send(
            {
                "type": f"response.output_item.{phase}",
                "response_id": self.id,
                "output_index": len(self.output) - 1,
                "item": shown,
            }
        )
        if self.in_conversation:
            self._conn.send({"type": f"conversation.item.{phase}", "item": shown, **conversation})

    def _function_call(self, reply: ToolCallReply) -> None:
        call_id = new_id("call_")
        item = self._add_item(
            {
                "type": "function_call",
                "status": "in_progress",
                "call_id": call_id,
                "name": reply.name,
                "arguments": "",
            }
        )
        arguments = reply.arguments_json
        where = {
            "response_id": self.id,
            "item_id": item["id"],
            "output_index": len(self.output) - 1,
        }
        self._conn.send(
            {
                "type": "response.function_call_arguments.delta",
                "call_id": call_id,
                "delta": arguments,
                **where,
            }
        )
        self._conn.send(
            {
                "type": "response.function_call_arguments.done",
                "call_id": call_id,
                "name": reply.name,
                "arguments": arguments,
                **where,
            }
        )
        item["arguments"] = arguments
        self._output_tokens += max(1, len(arguments) // 4)
        self._close_item("completed")

    def _open_message(self, part: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Add an assistant message with one content ``part``: the part as stored (it grows
        with each delta), and where its deltas go."""
        item = self._add_item(
            {"type": "message", "role": "assistant", "status": "in_progress", "content": [part]}
        )
        where = {
            "response_id": self.id,
            "item_id": item["id"],
            "output_index": len(self.output) - 1,
            "content_index": 0,
        }
        spoken = part["type"] == "output_audio"
        wire_part = {"type": "audio", "transcript": ""} if spoken else {"type": "text", "text": ""}
        self._conn.send({"type": "response.content_part.added", "part": wire_part, **where})
        return item["content"][0], where

    async def _message(self, reply: TextReply, token_s: float) -> None:
        part, where = self._open_message({"type": "output_text", "text": ""})
        for index, token in enumerate(tokens(reply.text)):
            if index:
                await precise_sleep(token_s)
            self._output_tokens += 1
            part["text"] += token
            self._conn.send({"type": "response.output_text.delta", "delta": token, **where})
        self._conn.send({"type": "response.output_text.done", "text": part["text"], **where})
        done = {"type": "text", "text": part["text"]}
        self._conn.send({"type": "response.content_part.done", "part": done, **where})
        self._close_item("completed")

    async def _spoken_message(self, reply: TextReply, speech: np.ndarray, token_s: float) -> None:
        """The reply spoken, sent as its text would stream: each token's words and their
        share of the audio leave together, ``token_s`` apart.

        OpenAI's reference (``conversation.item.truncate``): "The server will produce audio
        faster than realtime"; the client plays it at real-time pace and truncates what it
        did not play, by ``audio_end_ms``. The part's audio is what has been sent (a
        cancelled reply's is shorter), so a truncate can only cut what the client has; a
        truncate while the reply is still being sent stops it there.
        """
        part, where = self._open_message({"type": "output_audio", "transcript": "", "_audio_ms": 0})
        words = tokens(reply.text)
        for index, word in enumerate(words):
            if index:
                await precise_sleep(token_s)
            if part.get("_truncated"):
                break
            self._output_tokens += 1
            part["transcript"] += word
            self._conn.send(
                {"type": "response.output_audio_transcript.delta", "delta": word, **where}
            )
            begin, end = (speech.size * i // len(words) for i in (index, index + 1))
            part["_audio_ms"] = end * 1000 // SAMPLE_RATE
            delta = base64.b64encode(speech[begin:end].astype("<i2").tobytes()).decode()
            self._conn.send({"type": "response.output_audio.delta", "delta": delta, **where})
        # the service's order: the audio ends, then its transcript, then the part
        self._conn.send({"type": "response.output_audio.done", **where})
        transcript = part["transcript"]
        self._conn.send(
            {"type": "response.output_audio_transcript.done", "transcript": transcript, **where}
        )
        done = {"type": "audio", "transcript": transcript}
        self._conn.send({"type": "response.content_part.done", "part": done, **where})
        self._close_item("completed")

    def finish(self, status: str, status_details: dict[str, Any] | None = None) -> None:
        """Close whatever is open and send ``response.done`` with ``status``."""
        self._close_item("completed" if status == "completed" else "incomplete")
        self._conn.send({"type": "response.done", "response": self._body(status, status_details)})


_TRANSCRIPTION_DEFAULTS: dict[str, Any] = {
    "input_audio_format": "pcm16",
    "input_audio_transcription": None,
    "input_audio_noise_reduction": None,
    "turn_detection": {
        "type": "server_vad",
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 500,
    },
    "modalities": ["text"],
}
"""a new beta transcription session's, as OpenAI's reference defaults them"""


def _pcm16(audio: str, event_id: str | None) -> bytes:
    """An append's audio, or the error the service answers an invalid client event with.

    OpenAI's reference (``input_audio_buffer.append``): "Base64-encoded audio bytes. This
    must be in the format specified by the input_audio_format field in the session
    configuration", here PCM16 mono 24 kHz: whole 2-byte samples.
    """
    fix = "Send base64-encoded PCM16 audio: 16-bit little-endian mono samples at 24 kHz."
    try:
        chunk = base64.b64decode(audio, validate=True)
    except binascii.Error as e:
        raise ServiceError(
            f"Invalid 'audio': it is not base64 ({e}). {fix}",
            code="invalid_value",
            param="audio",
            event_id=event_id,
        ) from None
    if len(chunk) % 2:
        raise ServiceError(
            f"Invalid 'audio': {len(chunk)} bytes is not a whole number of PCM16 samples "
            f"(2 bytes each). {fix}",
            code="invalid_value",
            param="audio",
            event_id=event_id,
        )
    return chunk


def _ms(size: int) -> int:
    """Milliseconds of PCM16 mono 24 kHz audio in ``size`` bytes."""
    return size * 1000 // (SAMPLE_RATE * 2)


def _tool_spec(tool: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        name=str(tool.get("name", "")),
        parameters=tool.get("parameters") or {},
        description=str(tool.get("description") or ""),
    )
