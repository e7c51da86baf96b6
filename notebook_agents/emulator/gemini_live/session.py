"""The Live API's websocket (``BidiGenerateContent``): one ``LiveConnection`` per client.

As the OpenAI side (``openai_realtime``): messages from the client arrive half a round trip late
and are handled in order, replies leave half a round trip late, in order; the connect costs
``connect_rtts`` round trips; a generation is the reply rules' answer, ``created_ms`` +
``first_token_ms`` after its request arrived, then a token each ``token_ms``, spoken by eSpeak
in the ``AUDIO`` modality and sent faster than it plays (Google's reference,
``BidiGenerateContentServerContent``: "Content is generated as quickly as possible, and not in
real time. Clients may choose to buffer and play it out in real time").

Google's reference decides the rest:

- ``setup`` is the first message, answered by ``setupComplete``;
- ``clientContent`` is "unconditionally appended to the conversation history" and "will
  interrupt any current model generation"; ``turnComplete`` starts a generation;
- ``realtimeInput`` audio (16 kHz PCM) is heard by the automatic activity detection (a
  loudness VAD, ``listening.ServerVad``) unless the setup disabled it, when ``activityStart``
  and ``activityEnd`` bound the turn; the turn's words (heard in the session's vocabulary
  as the connection's ``hearing`` says: pocketsphinx's grammar, or Whisper) come back as
  ``inputTranscription`` when asked for, then the model answers;
- a ``toolCall`` holds the generation until every call has its ``toolResponse``; the model
  then answers the results by itself (``BLOCKING``, the default behaviour), unless every
  response's ``scheduling`` is ``SILENT``;
- an interrupted generation ends with ``interrupted`` then ``turnComplete``, without
  ``generationComplete``; a spoken one's ``turnComplete`` waits until its audio would have
  played out ("a delay between generation_complete and turn_complete that is caused by model
  waiting for playback to finish").

The conversation is kept as the OpenAI side keeps it (``Conversation``), so
``Emulator.conversations()`` and the reply rules read both alike.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from typing import Any

import numpy as np
from aiohttp import WSCloseCode, WSMsgType, web

from ...errors import MissingExtraError
from ...speech import synthesize, transcribe
from ...speech.tokens import tokens
from .._http import lose_connection
from .._params import ParameterError
from .._settings import ConnectionLog, EmulatorSettings
from ..conversation import Conversation, new_id
from ..latency import DelayedPipe, precise_sleep
from ..listening import ServerVad
from ..replies import ReplyContext, TextReply, ToolCallReply, Turn, calls_of
from ..vocabulary import vocabulary
from .protocol import (
    INTERNAL_ERROR,
    INVALID_ARGUMENT,
    POLICY_VIOLATION,
    Closing,
    check_server_message,
    content_items,
    function_call_item,
    function_response_item,
    instructions_of,
    parse_client_message,
    tool_specs,
)

logger = logging.getLogger(__name__)

INPUT_RATE = 16_000
"""realtimeInput audio: "16-bit PCM audio at 16kHz" (Live API guide, audio formats)"""
OUTPUT_RATE = 24_000
"""the model's audio: "always uses a sample rate of 24kHz" (Live API guide)"""
OUTPUT_MIME = f"audio/pcm;rate={OUTPUT_RATE}"

_AUTOMATIC_VAD = {"threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}
"""the automatic activity detection, in the terms of the shared loudness VAD"""

_PLACEHOLDER = "."
"""livekit's ``generate_reply`` appends a user turn of "." so that Gemini sees a completed
turn (realtime_api.py, ``_needs_reply_placeholder``): the model goes on from what came before"""

_FAULTS_WITHOUT_MEANING = ("ack_delay_ms", "ack_delay_items", "cancel_responses")
"""faults of the OpenAI protocol that Gemini Live has nothing to apply to (it acks no item)"""


class LiveConnection:
    """One client's Live session: its setup, conversation, input audio and generation."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        settings: EmulatorSettings,
        log: ConnectionLog,
    ) -> None:
        self._ws = ws
        self._request = request
        self.settings = settings
        self._log = log
        self.latency = log.latency
        self.faults = log.faults
        self.setup: dict[str, Any] | None = None
        self.conversation = Conversation()
        log.conversation, log.session_id = self.conversation, new_id("gemini_")
        self._generation: asyncio.Task[None] | None = None
        self._pending_calls: set[str] = set()
        self._vad: ServerVad | None = None
        self._audio = bytearray()
        self._in_activity = False
        self._client_messages = 0
        self._generations = 0
        self._closing: Closing | None = None
        self._inbound: DelayedPipe[str | bytes | None] = DelayedPipe(
            self.latency.one_way_s, self._handle_raw
        )
        self._outbound: DelayedPipe[dict[str, Any] | Closing | None] = DelayedPipe(
            self.latency.one_way_s, self._send_now
        )
        self._done = asyncio.Event()

    async def run(self) -> None:
        pipes = [
            asyncio.create_task(self._inbound.run(), name="gemini-inbound"),
            asyncio.create_task(self._outbound.run(), name="gemini-outbound"),
        ]
        try:
            async for message in self._ws:
                if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    self._inbound.put(message.data)
                elif message.type == WSMsgType.ERROR:
                    break
            if not self._ws.closed:
                # the client's close travels behind its messages; ours back behind our replies
                self._inbound.put(None)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._done.wait(), 2 * self.latency.rtt_ms / 1000 + 5)
        finally:
            tasks = [*pipes, *([self._generation] if self._generation else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._ws.close()

    async def shut_down(self) -> None:
        """The server is stopping: close now."""
        self._done.set()
        await self._ws.close(code=WSCloseCode.GOING_AWAY, message=b"emulator shutting down")

    # -- sending ---------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Queue a server message; it leaves half a round trip later."""
        if self.settings.validate:
            check_server_message(message)
        self._outbound.put(message)

    def close_with(self, closing: Closing) -> None:
        """End the session as the service does: a close frame, after what was sent before."""
        if self._closing is None:
            self._closing = closing
            self._outbound.put(closing)

    async def _send_now(self, message: dict[str, Any] | Closing | None) -> None:
        if self._ws.closed:
            self._done.set()
            return
        if message is None or isinstance(message, Closing):
            code, reason = (1000, "") if message is None else (message.code, message.reason)
            await self._ws.close(code=code, message=reason.encode()[:120])
            self._done.set()
            return
        self._log.record("out", next(iter(_server_kinds(message))))
        with contextlib.suppress(ConnectionResetError):
            await self._ws.send_str(json.dumps(message))

    # -- receiving -------------------------------------------------------------------------

    async def _handle_raw(self, raw: str | bytes | None) -> None:
        if raw is None:  # the client's close arrived: answer it half a round trip later
            self._outbound.put(None)
            return
        if self._closing is not None:
            return
        self._client_messages += 1
        try:
            kind, body = parse_client_message(raw, validate=self.settings.validate)
            self._log.record("in", kind)
            if kind == self.faults.error_on:
                raise Closing(INTERNAL_ERROR, f"Injected fault: every {kind} fails here.")
            await self._dispatch(kind, body)
        except Closing as e:
            self.close_with(e)
        except Exception as e:  # the emulator's own failure, named with its traceback
            logger.exception("the Gemini Live emulator failed")
            self.close_with(Closing(INTERNAL_ERROR, f"The emulator failed: {e!r} (see its log)"))
        if self.faults.drop_after is not None and self._client_messages >= self.faults.drop_after:
            self._closing = Closing(INTERNAL_ERROR, "dropped")
            lose_connection(self._request)

    async def _dispatch(self, kind: str, body: dict[str, Any]) -> None:
        if kind == "setup":
            self._setup(body)
            return
        if self.setup is None:
            raise Closing(INVALID_ARGUMENT, "The first message must be a setup message.")
        if kind == "clientContent":
            self._interrupt()
            for content in body.get("turns") or []:
                for item in content_items(content):
                    self.conversation.insert(item)
            if body.get("turnComplete"):
                self._generate()
        elif kind == "toolResponse":
            self._tool_response(body.get("functionResponses") or [])
        elif kind == "realtimeInput":
            await self._realtime_input(body)

    def _setup(self, setup: dict[str, Any]) -> None:
        if self.setup is not None:
            raise Closing(INVALID_ARGUMENT, "setup was already sent on this session.")
        model = str(setup.get("model") or "")
        if not model.startswith("models/gemini-"):
            raise Closing(
                POLICY_VIOLATION,
                f"{model} is not found for API version v1beta, or is not supported for "
                "bidiGenerateContent.",
            )
        for name in _FAULTS_WITHOUT_MEANING:
            if getattr(self.faults, name) not in (None, 0, 0.0, False):
                raise Closing(
                    INVALID_ARGUMENT,
                    f"the fault {name} has no meaning on Gemini Live (it acknowledges no "
                    "item); use drop_after, error_on, fail_first, fail_every or fail_responses",
                )
        self.setup = setup
        self.settings.offered.offer(instructions_of(setup), tool_specs(setup))
        self.send({"setupComplete": {}})

    # -- audio in --------------------------------------------------------------------------

    async def _realtime_input(self, body: dict[str, Any]) -> None:
        if "activityStart" in body:
            self._interrupt()
            self._in_activity = True
            self._audio.clear()
        elif "activityEnd" in body:
            self._in_activity = False
            await self._hear_turn()
        elif isinstance(body.get("text"), str):
            self._interrupt()
            self.conversation.insert(_user_text(body["text"]))
            self._generate()
        elif (
            audio := body.get("audio") or next(iter(body.get("mediaChunks") or []), None)
        ) and str(audio.get("mimeType", "")).startswith("audio/"):
            await self._listen(_bytes(str(audio.get("data") or "")))

    def _automatic_detection(self) -> bool:
        assert self.setup is not None
        config = self.setup.get("realtimeInputConfig") or {}
        return not (config.get("automaticActivityDetection") or {}).get("disabled", False)

    async def _listen(self, chunk: bytes) -> None:
        samples = np.frombuffer(chunk[: len(chunk) // 2 * 2], "<i2")
        if not self._automatic_detection():
            if self._in_activity:
                self._audio.extend(samples.tobytes())
            return
        if self._vad is None:
            self._vad = ServerVad(INPUT_RATE, _AUTOMATIC_VAD)
        self._audio.extend(samples.tobytes())
        for heard in self._vad.feed(samples):
            if heard.kind == "started":
                self._interrupt()  # a barge-in: the model stops talking
                keep = (self._vad.prefix_ms + 60) * INPUT_RATE * 2 // 1000
                del self._audio[: max(0, len(self._audio) - len(samples) * 2 - keep)]
            else:
                await self._hear_turn()
        if not self._vad.speaking:
            keep = (self._vad.prefix_ms + 60) * INPUT_RATE * 2 // 1000
            del self._audio[: max(0, len(self._audio) - keep)]

    async def _hear_turn(self) -> None:
        """The caller's turn ended: hear its words, add them, send their transcript, answer."""
        audio = np.frombuffer(bytes(self._audio), "<i2")
        self._audio.clear()
        assert self.setup is not None
        words = vocabulary(instructions_of(self.setup), tool_specs(self.setup))
        heard = (
            await asyncio.to_thread(transcribe, audio, INPUT_RATE, words, self._log.hearing)
            if audio.size
            else ""
        )
        self.conversation.insert(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_audio", "transcript": heard}],
            }
        )
        if "inputAudioTranscription" in self.setup and heard:
            self.send({"serverContent": {"inputTranscription": {"text": heard}}})
        self._generate()

    # -- tools -----------------------------------------------------------------------------

    def _tool_response(self, responses: list[dict[str, Any]]) -> None:
        for response in responses:
            self.conversation.insert(function_response_item(response))
            self._pending_calls.discard(str(response.get("id") or ""))
        silent = all(r.get("scheduling") == "SILENT" for r in responses)
        if responses and not self._pending_calls and not silent:
            self._generate()

    # -- generations -----------------------------------------------------------------------

    def _interrupt(self) -> None:
        """A client message interrupts the generation under way: ``interrupted``, then
        ``turnComplete``."""
        generation = self._generation
        if generation is not None and not generation.done():
            generation.cancel()
            self._generation = None
            self.send({"serverContent": {"interrupted": True}})
            self.send({"serverContent": {"turnComplete": True}})

    def _generate(self) -> None:
        self._interrupt()
        self._generation = asyncio.create_task(self._generation_run(), name="gemini-generation")

    def _fails(self) -> bool:
        self._generations += 1
        in_turn = self.settings.fails_in_turn(self.faults)  # counted whatever else fails it
        first = self._generations <= self.faults.fail_first
        return self.faults.fail_responses or first or in_turn

    async def _generation_run(self) -> None:
        assert self.setup is not None
        latency = self.latency
        if self._fails():
            await precise_sleep(latency.created_ms / 1000.0)
            self.close_with(Closing(INTERNAL_ERROR, "Internal error encountered. (injected)"))
            return
        tools = tool_specs(self.setup)
        reply = self.settings.rules.reply(
            ReplyContext(
                instructions=instructions_of(self.setup), history=self._turns(), tools=tools
            )
        )
        spoken = "AUDIO" in _modalities(self.setup)
        speech = None
        if isinstance(reply, TextReply) and spoken:
            # eSpeak on a worker thread while the model "thinks": it costs no latency
            speech = asyncio.ensure_future(asyncio.to_thread(synthesize, reply.text))
        try:
            await precise_sleep((latency.created_ms + latency.first_token_ms) / 1000.0)
            if calls := calls_of(reply):
                self._tool_call(calls)
                return
            assert isinstance(reply, TextReply)
            item = self.conversation.insert(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": ""}],
                }
            )
            part = item["content"][0]
            words = tokens(reply.text)
            audio = await speech if speech is not None else None
            first_sent = time.perf_counter()
            for index, word in enumerate(words):
                if index:
                    await precise_sleep(latency.token_ms / 1000.0)
                part["text"] += word
                self._content(word, index, len(words), audio)
            self.send({"serverContent": {"generationComplete": True}})
            if audio is not None:
                # the model waits for the playback it assumes before completing the turn
                await precise_sleep(first_sent + audio.size / OUTPUT_RATE - time.perf_counter())
            self.send(
                {"serverContent": {"turnComplete": True}, "usageMetadata": self._usage(len(words))}
            )
        finally:
            if speech is not None:
                speech.cancel()
            if asyncio.current_task() is self._generation:
                self._generation = None

    def _content(self, word: str, index: int, count: int, audio: np.ndarray | None) -> None:
        """One token: its text (``TEXT``), or its share of the audio and its transcript."""
        assert self.setup is not None
        if audio is None:
            self.send(
                {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": word}]}}}
            )
            return
        begin, end = (audio.size * i // count for i in (index, index + 1))
        data = base64.b64encode(audio[begin:end].astype("<i2").tobytes()).decode()
        part = {"inlineData": {"mimeType": OUTPUT_MIME, "data": data}}
        self.send({"serverContent": {"modelTurn": {"role": "model", "parts": [part]}}})
        if "outputAudioTranscription" in self.setup:
            self.send({"serverContent": {"outputTranscription": {"text": word}}})

    def _tool_call(self, replies: tuple[ToolCallReply, ...]) -> None:
        """The model's calls, parallel ones in one message: ``BidiGenerateContentToolCall``
        holds a list, ``functionCalls[]`` (ai.google.dev/api/live), and "from a single
        prompt, the model can generate multiple function calls" (Live API tool use guide,
        ai.google.dev/gemini-api/docs/live-tools)."""
        calls: list[dict[str, Any]] = []
        for reply in replies:
            call: dict[str, Any] = {
                "id": new_id("function-call-"),
                "name": reply.name,
                "args": reply.arguments,
            }
            self.conversation.insert(function_call_item(call))
            self._pending_calls.add(call["id"])
            calls.append(call)
        self.send({"toolCall": {"functionCalls": calls}})

    def _turns(self) -> list[Turn]:
        """The conversation as the rules read it, without livekit's "." placeholders."""
        return [
            turn
            for turn in self.conversation.turns()
            if not (turn.role == "user" and turn.text.strip() == _PLACEHOLDER)
        ]

    def _usage(self, output_tokens: int) -> dict[str, Any]:
        prompt = sum(len(turn.text.split()) + 1 for turn in self.conversation.turns())
        assert self.setup is not None
        modality = "AUDIO" if "AUDIO" in _modalities(self.setup) else "TEXT"
        return {
            "promptTokenCount": prompt,
            "responseTokenCount": output_tokens,
            "totalTokenCount": prompt + output_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
            "responseTokensDetails": [{"modality": modality, "tokenCount": output_tokens}],
        }


def _modalities(setup: dict[str, Any]) -> list[str]:
    config = setup.get("generationConfig") or {}
    return [str(m).upper() for m in config.get("responseModalities") or ["AUDIO"]]


def _bytes(data: str) -> bytes:
    """A ``Blob``'s data: protobuf's JSON takes standard or URL-safe base64, padded or not
    (google-genai sends it URL-safe, unpadded)."""
    return base64.urlsafe_b64decode(
        data.replace("+", "-").replace("/", "_") + "=" * (-len(data) % 4)
    )


def _user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _server_kinds(message: dict[str, Any]) -> list[str]:
    """A message's kind for the connection log: ``serverContent.modelTurn``, ``toolCall``..."""
    kinds: list[str] = []
    for key, value in message.items():
        if key == "serverContent" and isinstance(value, dict):
            kinds.extend(f"serverContent.{field}" for field in value)
        else:
            kinds.append(key)
    return kinds


_REFUSAL_WAIT_S = 5.0
"""how long a refused connection waits for the client's setup before closing anyway"""


async def refuse(
    request: web.Request, reason: ParameterError | MissingExtraError
) -> web.StreamResponse:
    """Refuse bad per-connection settings as the service refuses a bad setup: the websocket
    opens and closes with 1007 and the reason, which google-genai raises as ``APIError``."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    # the setup, or nothing from a client that sends none: the refusal does not wait on it
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(ws.receive(), _REFUSAL_WAIT_S)
    await ws.close(code=INVALID_ARGUMENT, message=str(reason).encode()[:120])
    return ws
