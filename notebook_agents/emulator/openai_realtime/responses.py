"""A response, from ``response.created`` to ``response.done`` in the service's order: the reply
rules' answer as a function call, a text message or a spoken one (eSpeak's voice, sent faster
than it plays), cancelled by the client or a barge-in."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...speech import synthesize
from ...speech.tokens import tokens
from ..conversation import new_id, public
from ..latency import precise_sleep
from ..replies import ReplyContext, TextReply, ToolCallReply, calls_of
from .session import SAMPLE_RATE, tool_spec

if TYPE_CHECKING:
    from .connection import RealtimeConnection


@dataclass
class Response:
    id: str
    task: asyncio.Task[None] | None = None
    cancel_reason: str | None = None
    """why the response is being cancelled: ``client_cancelled``, ``turn_detected``"""


class ResponseRun:
    """One response from ``response.created`` to ``response.done``, in the service's order."""

    def __init__(
        self, connection: RealtimeConnection, response: Response, params: dict[str, Any]
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
                tools=[tool_spec(tool) for tool in self.tools if tool.get("type") == "function"],
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
