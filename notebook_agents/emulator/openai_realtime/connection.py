"""One client's Realtime session (``RealtimeConnection``): its events in and out through the
network's delay, dispatched in order, each failure answered with its ``error``.

Events from the client arrive half a round trip late and are handled in order; replies leave
half a round trip late, in order. Responses run as tasks (``responses``) so a cancel can
overtake them; input audio is the ``audio_input``'s. An event that cannot be served is
answered with its ``error``; the session stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from .._http import lose_connection
from .._settings import ConnectionLog, EmulatorSettings
from ..conversation import Conversation, new_id, public
from ..errors import ServiceError
from ..latency import DelayedPipe, precise_sleep
from ..replies import ToolSpec
from .audio_input import AudioInput
from .protocol import (
    BETA_CLIENT_EVENTS,
    BETA_SERVER_EVENTS,
    CLIENT_EVENTS,
    SERVER_EVENTS,
    check_server_event,
    parse_client_event,
)
from .responses import Response, ResponseRun
from .session import TRANSCRIPTION_DEFAULTS, default_session, merge_session, tool_spec

logger = logging.getLogger(__name__)


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
        self.hearing = log.hearing
        self.session = default_session(model)
        if transcription:
            self._transcription_update(TRANSCRIPTION_DEFAULTS)
        self.conversation = Conversation()
        log.conversation, log.session_id = self.conversation, self.session["id"]
        self.audio = AudioInput(self)
        self._response: Response | None = None
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

    def ack(self, event: dict[str, Any], item_type: str | None) -> None:
        """Conversation acks can be held back by the ``ack_delay_ms`` fault."""
        delayed = self.faults.delays_ack_of(item_type)
        self.send(event, extra_delay_s=self.faults.ack_delay_ms / 1000.0 if delayed else 0.0)

    def fails_next_response(self) -> bool:
        """``fail_responses``, one of the first ``fail_first`` responses, or one in
        ``fail_every`` of the emulator's."""
        self._responses_run += 1
        in_turn = self.settings.fails_in_turn(self.faults)  # counted whatever else fails it
        first = self._responses_run <= self.faults.fail_first
        return self.faults.fail_responses or first or in_turn

    # -- receiving -------------------------------------------------------------------------

    @property
    def buffered_ms(self) -> int:
        """How much input audio the buffer holds."""
        return self.audio.buffered_ms

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
            self.ack(
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
            await self.audio.append(event["audio"], event_id)
        elif kind == "input_audio_buffer.commit":
            await self.audio.commit(event_id)
        elif kind == "input_audio_buffer.clear":
            self.audio.clear()
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
        self.audio.turn_detection_changed()
        self.settings.offered.offer(self.session.get("instructions") or "", self.function_tools())
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
        self.audio.turn_detection_changed()
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

    def function_tools(self) -> list[ToolSpec]:
        """The session's function tools, as the reply rules and speech recognition see them."""
        tools = self.session.get("tools") or []
        return [tool_spec(tool) for tool in tools if tool.get("type") == "function"]

    def _create_item(
        self, item: dict[str, Any], previous_item_id: str | None, event_id: str | None
    ) -> None:
        stored = self.conversation.insert(item, previous_item_id, event_id=event_id)
        self.ack(
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

    # -- responses -------------------------------------------------------------------------

    def interrupt_response(self) -> None:
        """A barge-in: the running response, if any, ends ``cancelled`` (``turn_detected``)."""
        if self._response is not None:
            self._stop_response(self._response, "turn_detected")

    def answer_turn(self) -> None:
        """A heard turn is answered, unless a response is already running."""
        if self._response is None:
            self._create_response({}, None)

    def _create_response(self, params: dict[str, Any], event_id: str | None) -> None:
        if self._response is not None:
            raise ServiceError(
                "Conversation already has an active response in progress: "
                f"{self._response.id}. Wait until the response is finished before creating "
                "a new one.",
                code="conversation_already_has_active_response",
                event_id=event_id,
            )
        response = Response(id=new_id("resp_"))
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

    def _stop_response(self, response: Response, reason: str) -> None:
        """Cancel ``response``: it ends ``cancelled`` with ``reason``."""
        response.cancel_reason = reason
        assert response.task is not None
        response.task.cancel()

    async def _run_response(self, response: Response, params: dict[str, Any]) -> None:
        run = ResponseRun(self, response, params)
        try:
            await run.execute()
        except asyncio.CancelledError:
            if response.cancel_reason is None:
                raise
            run.finish("cancelled", {"type": "cancelled", "reason": response.cancel_reason})
        finally:
            if self._response is response:
                self._response = None
