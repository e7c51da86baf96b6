"""Chat Completions (``POST /v1/chat/completions``) and Models (``GET /v1/models[/{id}]``).

What ``livekit.plugins.openai.LLM`` sends: Chat Completions (not Responses) with
``stream=True``, ``stream_options={"include_usage": True}``, ``tools`` when the agent has
any, optional ``tool_choice`` / ``parallel_tool_calls`` / ``reasoning_effort`` (ignored here),
and ``GET /v1/models`` to prewarm its connection. Replies come from the shared
``ReplyRules`` (see ``replies.py``); text streams one word per chunk. ``tool_choice="none"``
hides the tools from the rules and a named function offers only that one. A judge's request
(livekit's ``judge(llm, intent=)`` and ``JudgeGroup``) is answered with its verdict tool's call:
the verdict a rule scripts, else a fail naming the fix (judging.py). With
``settings.validate`` every object sent is checked against the ``openai`` package's types.

Per-request latency and faults, three equivalent ways:

* ``base_url=emu.base_url(rtt_ms=20)`` (``http://127.0.0.1:PORT/v1?rtt_ms=20``). The
  ``openai`` SDK does not keep a query string apart from the path it appends: it requests
  ``/v1/?rtt_ms=20chat/completions``. server.py recovers that shape (chat, the model
  list and speech; ``GET /v1/models/{id}`` is not recovered), so this works.
* ``AsyncOpenAI(base_url=emu.url + "/v1", default_query={"rtt_ms": "20"})``.
* ``openai.LLM(base_url=emu.url + "/v1", extra_query={"rtt_ms": "20"})`` (livekit).

Timing: the first chunk (or a non-streamed body) leaves ``LatencyModel.http_first_byte_s``
after the request arrived: connect round trips if it came on a new TCP connection (logged as
a ``connect`` event), the round trip, ``created_ms`` and ``first_token_ms``; then ``token_ms``
between deltas. A non-streamed
body waits for all its deltas. An error costs the round trip (and connect) only.

Faults: ``fail_responses`` answers 500 ``server_error``, as ``fail_every=N`` answers 1 request
in N (livekit's LLM retries a 5xx, so a turn outlives it); ``error_on=chat.completions`` answers
400; ``drop_after=N`` closes the connection after N streamed chunks (no ``[DONE]``; a
non-streamed body counts as one chunk, so ``drop_after=0`` drops it unanswered);
``cancel_responses`` ends the reply before any content: no deltas, no tool call,
``finish_reason`` ``"stop"`` (Chat Completions has no cancelled status, and an empty
completion is what a client sees of a reply cut off before it began).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ..speech.tokens import tokens
from ._http import Clock, Json, open_request, read_json
from ._settings import SETTINGS_KEY, ConnectionLog, EmulatorSettings
from .errors import ServiceError
from .latency import sleep_until
from .replies import (
    Reply,
    ReplyContext,
    TextReply,
    ToolCallReply,
    ToolSpec,
    Turn,
    calls_of,
)

CHAT_PATH = "/v1/chat/completions"
ERROR_ON_NAMES = ("chat.completions", "chat.completions.create")
"""``error_on`` values that fail a Chat Completions request"""
FINGERPRINT = "fp_emulator"
MODEL_CREATED = 1_700_000_000
"""a fixed ``created`` for listed models, so listings are deterministic"""
ARGUMENT_FRAGMENT = 16
"""tool-call arguments stream in pieces this long, as the real service splits them"""

_MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


# ---------------------------------------------------------------------------- handlers


async def list_models(request: web.Request) -> web.StreamResponse:
    """``GET /v1/models``: every model the catalog knows, as OpenAI's list object."""
    return await _serve_models(request, None)


async def retrieve_model(request: web.Request) -> web.StreamResponse:
    """``GET /v1/models/{model}``: one model, or 404 ``model_not_found``."""
    return await _serve_models(request, request.match_info["model"])


async def _serve_models(request: web.Request, model: str | None) -> web.StreamResponse:
    """The model list (``model`` None) or one model; costs the network round trip only."""
    settings = request.app[SETTINGS_KEY]
    try:
        _, clock = open_request(request, "models", request.path)
    except ServiceError as e:
        return e.response()
    await sleep_until(clock.error())
    if model is None:
        return web.json_response(
            {"object": "list", "data": [_model_object(m) for m in settings.models.all()]}
        )
    if not _known_model(settings, model):
        return _unknown_model(model).response()
    return web.json_response(_model_object(model))


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions``; the query string holds latency and fault parameters."""
    settings = request.app[SETTINGS_KEY]
    try:
        log, clock = open_request(request, "chat", CHAT_PATH, "chat.completions")
    except ServiceError as e:
        return e.response()
    try:
        chat = _ChatRequest.parse(await read_json(request))
        _check_request(settings, log, chat)
        settings.offered.offer(chat.reply_context().instructions, chat.tools)
        reply = None if log.faults.cancel_responses else _decide(settings, chat)
    except ServiceError as reject:
        log.record("out", "error")
        await sleep_until(clock.error())
        return reject.response()
    completion = _Completion.start(chat, reply)
    if chat.stream:
        return await _stream(request, settings, log, clock, completion)
    return await _respond(request, settings, log, clock, completion)


# ----------------------------------------------------------------------- request parsing


@dataclass(frozen=True)
class _ChatRequest:
    """The parts of a Chat Completions request the emulator acts on."""

    model: str
    messages: list[Json]
    tools: list[ToolSpec]
    tool_choice: Any
    stream: bool
    include_usage: bool

    @classmethod
    def parse(cls, body: Json) -> _ChatRequest:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ServiceError("You must provide a model parameter.", param="model")
        stream = body.get("stream") or False
        if not isinstance(stream, bool):
            raise ServiceError(f"stream must be true or false, not {stream!r}.", param="stream")
        stream_options = body.get("stream_options") or {}
        return cls(
            model=model,
            messages=_parse_messages(body.get("messages")),
            tools=_parse_tools(body.get("tools")),
            tool_choice=body.get("tool_choice"),
            stream=stream,
            include_usage=isinstance(stream_options, dict)
            and bool(stream_options.get("include_usage")),
        )

    def offered_tools(self) -> list[ToolSpec]:
        """``tool_choice`` "none" hides the tools; a named function offers that one only."""
        if self.tool_choice == "none":
            return []
        if isinstance(self.tool_choice, dict):
            name = (self.tool_choice.get("function") or {}).get("name")
            return [tool for tool in self.tools if tool.name == name]
        return self.tools

    def reply_context(self) -> ReplyContext:
        return reply_context(self.messages, self.offered_tools())


def _parse_messages(messages: Any) -> list[Json]:
    if messages is None:
        raise ServiceError("Missing required parameter: 'messages'.", param="messages")
    if not isinstance(messages, list) or not messages:
        raise ServiceError(
            "'messages' must be a non-empty array of message objects.", param="messages"
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ServiceError(f"messages[{i}] must be an object.", param=f"messages[{i}]")
        if message.get("role") not in _MESSAGE_ROLES:
            raise ServiceError(
                f"messages[{i}].role is {message.get('role')!r}; expected one of "
                f"{', '.join(_MESSAGE_ROLES)}.",
                param=f"messages[{i}].role",
            )
    return messages


def _parse_tools(tools: Any) -> list[ToolSpec]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise ServiceError("'tools' must be an array of tool objects.", param="tools")
    specs = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            continue  # custom / built-in tools: the rules only call functions
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise ServiceError(
                f"tools[{i}].function.name is required.", param=f"tools[{i}].function.name"
            )
        specs.append(
            ToolSpec(
                name=name,
                parameters=function.get("parameters") or {},
                description=function.get("description") or "",
            )
        )
    return specs


def _check_request(settings: EmulatorSettings, log: ConnectionLog, chat: _ChatRequest) -> None:
    if not _known_model(settings, chat.model):
        raise _unknown_model(chat.model)
    if log.faults.error_on in ERROR_ON_NAMES:
        raise ServiceError(
            f"Injected error: error_on={log.faults.error_on} fails every Chat Completions "
            "request on this connection.",
            code="injected_error",
        )
    if log.faults.fail_responses:
        raise ServiceError(
            "Injected failure: fail_responses is set, so every response fails.",
            code="server_error",
            type="server_error",
            status=500,
        )
    if settings.fails_in_turn(log.faults):
        raise ServiceError(
            f"Injected failure: fail_every={log.faults.fail_every} fails 1 response in "
            f"{log.faults.fail_every}, this one among them.",
            code="server_error",
            type="server_error",
            status=500,
        )


def _decide(settings: EmulatorSettings, chat: _ChatRequest) -> Reply:
    """The rules' reply; a rule that raises (a notebook's own, say) is a 500 naming it."""
    try:
        return settings.rules.reply(chat.reply_context())
    except Exception as e:
        raise ServiceError(
            f"A reply rule raised {type(e).__name__}: {e}. Fix the rule you added to "
            "ReplyRules, or take it out with ReplyRules.remove(rule).",
            code="server_error",
            type="server_error",
            status=500,
        ) from None


def _known_model(settings: EmulatorSettings, model: str) -> bool:
    return settings.models.knows(model, realtime=False) or settings.models.knows(
        model, realtime=True
    )


def _unknown_model(model: str) -> ServiceError:
    return ServiceError(
        f"The model `{model}` does not exist in the emulator's catalog. Use a known model "
        f"(GET /v1/models lists them) or add it: `emulator.settings.models.add([{model!r}])` "
        f"or `Emulator(models=ModelCatalog(...))` (ModelCatalog.add).",
        code="model_not_found",
        status=404,
    )


def _model_object(model: str) -> Json:
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": "system"}


# ------------------------------------------------------------------- messages -> context


def reply_context(messages: Sequence[Json], tools: Sequence[ToolSpec]) -> ReplyContext:
    """What the reply rules see of a Chat Completions request.

    Instructions are the system and developer messages' text, joined; the history keeps
    every message in order, tool calls and outputs included (outputs named after their call).
    """
    instructions = [
        content_text(m.get("content")) for m in messages if m["role"] in ("system", "developer")
    ]
    call_names: dict[str, str] = {}
    history: list[Turn] = []
    for message in messages:
        history.extend(_turns(message, call_names))
    return ReplyContext(
        instructions="\n".join(text for text in instructions if text),
        history=history,
        tools=tools,
    )


def _turns(message: Json, call_names: dict[str, str]) -> list[Turn]:
    role, text = message["role"], content_text(message.get("content"))
    if role in ("system", "developer"):
        return [Turn("system", text)]
    if role == "user":
        return [Turn("user", text)]
    if role in ("tool", "function"):
        call_id = message.get("tool_call_id")
        name = call_names.get(call_id) if isinstance(call_id, str) else message.get("name")
        return [Turn("tool_output", text, name=name)]
    turns = [Turn("assistant", text)] if text else []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        if isinstance(call.get("id"), str):
            call_names[call["id"]] = name
        turns.append(Turn("tool_call", str(function.get("arguments", "")), name=name))
    return turns


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list (images etc. skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


# ------------------------------------------------------------------------------ replies


@dataclass(frozen=True)
class _Completion:
    """One reply, as the deltas it streams as and the message it is when not streamed."""

    id: str
    created: int
    model: str
    reply: Reply | None
    """None when the reply was cancelled before any content"""
    prompt_tokens: int
    include_usage: bool

    @classmethod
    def start(cls, chat: _ChatRequest, reply: Reply | None) -> _Completion:
        return cls(
            id=f"chatcmpl-{uuid.uuid4().hex[:24]}",
            created=int(time.time()),
            model=chat.model,
            reply=reply,
            prompt_tokens=sum(_rough_tokens(content_text(m.get("content"))) for m in chat.messages),
            include_usage=chat.include_usage,
        )

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"

    @property
    def calls(self) -> list[tuple[str, ToolCallReply]]:
        """The reply's tool calls with their ids, in order."""
        calls = calls_of(self.reply) if self.reply is not None else ()
        return [(_call_id(self.id, index), call) for index, call in enumerate(calls)]

    def deltas(self) -> list[Json]:
        """The content deltas after the role chunk, one per token (or argument fragment)."""
        reply = self.reply
        if isinstance(reply, TextReply):
            return [{"content": token} for token in tokens(reply.text)]
        deltas: list[Json] = []
        for index, (call_id, call) in enumerate(self.calls):
            arguments = call.arguments_json
            first = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            deltas.append({"tool_calls": [first]})
            deltas += [
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "function": {"arguments": arguments[i : i + ARGUMENT_FRAGMENT]},
                        }
                    ]
                }
                for i in range(0, len(arguments), ARGUMENT_FRAGMENT)
            ]
        return deltas

    def chunk(self, delta: Json, finish_reason: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._envelope("chat.completion.chunk") | {"choices": [choice]}

    def chunks(self) -> list[tuple[int, Json]]:
        """Every streamed chunk with the index of the delta it goes out with."""
        deltas = self.deltas()
        last = max(len(deltas) - 1, 0)
        out = [(0, self.chunk({"role": "assistant", "content": ""}))]
        out += [(i, self.chunk(delta)) for i, delta in enumerate(deltas)]
        out.append((last, self.chunk({}, self.finish_reason)))
        if self.include_usage:
            usage_chunk = {"choices": [], "usage": self._usage(deltas)}
            out.append((last, self._envelope("chat.completion.chunk") | usage_chunk))
        return out

    def message(self) -> Json:
        """The whole ``chat.completion`` object, for a request without ``stream``."""
        reply = self.reply
        message: Json = {"role": "assistant", "content": None, "refusal": None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
                for call_id, call in self.calls
            ]
        else:
            message["content"] = reply.text if isinstance(reply, TextReply) else ""
        choice = {"index": 0, "message": message, "logprobs": None}
        return (
            self._envelope("chat.completion")
            | {"choices": [choice | {"finish_reason": self.finish_reason}]}
            | {"usage": self._usage(self.deltas())}
        )

    def _envelope(self, kind: str) -> Json:
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": FINGERPRINT,
        }

    def _usage(self, deltas: list[Json]) -> Json:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": len(deltas),
            "total_tokens": self.prompt_tokens + len(deltas),
        }


def _call_id(completion_id: str, index: int) -> str:
    # Derived from the completion id so the streamed and whole forms agree; the first call's
    # id is the completion's, each later one adds its index
    suffix = f"_{index}" if index else ""
    return "call_" + completion_id.removeprefix("chatcmpl-") + suffix


def _rough_tokens(text: str) -> int:
    """About four characters a token, as OpenAI's rule of thumb; at least one per message."""
    return max(1, math.ceil(len(text) / 4))


# ----------------------------------------------------------------------------- sending


async def _respond(
    request: web.Request,
    settings: EmulatorSettings,
    log: ConnectionLog,
    clock: Clock,
    completion: _Completion,
) -> web.StreamResponse:
    body = completion.message()
    if settings.validate:
        ChatCompletion.model_validate(body)
    await sleep_until(clock.delta(max(len(completion.deltas()) - 1, 0)))
    if log.faults.drop_after == 0:
        return _drop(request, log, web.Response())
    log.record("out", "chat.completion")
    return web.json_response(body)


async def _stream(
    request: web.Request,
    settings: EmulatorSettings,
    log: ConnectionLog,
    clock: Clock,
    completion: _Completion,
) -> web.StreamResponse:
    chunks = completion.chunks()
    if settings.validate:
        for _, chunk in chunks:
            ChatCompletionChunk.model_validate(chunk)
    await sleep_until(clock.first_byte())
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    # a client going away mid-stream (an interrupted agent turn) raises ConnectionError: the
    # app's middleware notes it
    await response.prepare(request)
    for sent, (index, chunk) in enumerate(chunks):
        if sent == log.faults.drop_after:
            return _drop(request, log, response)
        await sleep_until(clock.delta(index))
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        log.record("out", "chat.completion.chunk")
    if len(chunks) == log.faults.drop_after:
        return _drop(request, log, response)
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def _drop(
    request: web.Request, log: ConnectionLog, response: web.StreamResponse
) -> web.StreamResponse:
    """Close the connection abruptly: what was written is flushed, the rest never comes."""
    log.record("out", "drop")
    request.protocol.force_close()
    # aiohttp then fails to finish ``response`` on the closed transport, and ignores that.
    return response
