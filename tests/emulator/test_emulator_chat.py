"""The emulator's Chat Completions and Models endpoints, driven by the real clients over 127.0.0.1.

Clients: livekit's ``openai.LLM`` (unmodified) and the ``openai`` SDK; raw aiohttp requests
for what the SDK will not send (no key, bad JSON). Every chunk is checked against the
``openai`` package's types.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    APIConnectOptions,
    JobContext,
    function_tool,
    llm,
)
from livekit.plugins import openai as lk_openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
)

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator, LatencyModel, ReplyContext, TextReply, ToolSpec
from notebook_agents.emulator.chat import content_text, reply_context
from tests.conftest import API_KEY

MODEL = "gpt-4o-mini"
INSTRUCTIONS = "You are Bob, the weather bot. Answer briefly."
WEATHER_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
NO_RETRY = APIConnectOptions(max_retry=0, timeout=5.0)


def sdk(emulator: Emulator, **query: Any) -> openai.AsyncOpenAI:
    """An SDK client without retries, so a failure shows as the first error."""
    return openai.AsyncOpenAI(base_url=emulator.base_url(**query), api_key=API_KEY, max_retries=0)


def messages(user: str) -> list[Any]:
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": user}]


async def raw_request(
    emulator: Emulator,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    key: str | None = API_KEY,
) -> tuple[int, Any]:
    """A request the SDK would not send, answered as (status, parsed JSON)."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, emulator.url + path, data=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def sse_chunks(emulator: Emulator, body: dict[str, Any]) -> list[str]:
    """The ``data:`` payloads of a streamed response, exactly as sent."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(emulator.url + "/v1/chat/completions", json=body, headers=headers) as resp,
    ):
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        text = await resp.text()
    events = [event for event in text.split("\n\n") if event]
    assert all(event.startswith("data: ") for event in events)
    return [event.removeprefix("data: ") for event in events]


async def collect(stream: AsyncIterator[llm.ChatChunk]) -> tuple[str, list[llm.FunctionToolCall]]:
    """A livekit LLM stream's text and tool calls."""
    text, calls = "", []
    async for chunk in stream:
        if chunk.delta is not None:
            text += chunk.delta.content or ""
            calls += chunk.delta.tool_calls
    return text, calls


async def chat_once(
    model: lk_openai.LLM, ctx: llm.ChatContext, **options: Any
) -> tuple[str, list[llm.FunctionToolCall]]:
    """One livekit LLM request, without retries: its text and tool calls."""
    async with model.chat(chat_ctx=ctx, conn_options=NO_RETRY, **options) as stream:
        return await collect(stream)


# ------------------------------------------------------------------------ livekit's LLM


@function_tool
async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"Sunny in {city}"


def conversation(user_text: str, *, system: str | None = INSTRUCTIONS) -> llm.ChatContext:
    ctx = llm.ChatContext.empty()
    if system is not None:
        ctx.add_message(role="system", content=system)
    ctx.add_message(role="user", content=user_text)
    return ctx


async def test_livekit_llm_streams_a_reply_led_by_the_instructions(emulator: Emulator) -> None:
    model = lk_openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model=MODEL)
    ctx = conversation("Hello there")
    try:
        text, calls = await chat_once(model, ctx)
    finally:
        await model.aclose()
    assert text == 'You are Bob, the weather bot. You said: "Hello there".'
    assert calls == []


async def test_livekit_llm_tool_call_round_trip(emulator: Emulator) -> None:
    model = lk_openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model=MODEL)
    ctx = conversation("Please call get_weather city=Paris")
    try:
        text, calls = await chat_once(model, ctx, tools=[get_weather])
        assert text == ""
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [
            ("get_weather", {"city": "Paris"})
        ]
        call = calls[0]
        output = await get_weather(**json.loads(call.arguments))
        ctx.insert(llm.FunctionCall(call_id=call.call_id, name=call.name, arguments=call.arguments))
        ctx.insert(
            llm.FunctionCallOutput(
                call_id=call.call_id, name=call.name, output=output, is_error=False
            )
        )
        text, calls = await chat_once(model, ctx, tools=[get_weather])
    finally:
        await model.aclose()
    assert text == "You are Bob, the weather bot. The tool returned: Sunny in Paris"
    assert calls == []


async def test_livekit_llm_base_url_query_reaches_the_emulator(emulator: Emulator) -> None:
    model = lk_openai.LLM(base_url=emulator.base_url(token_ms=1), api_key=API_KEY, model=MODEL)
    ctx = conversation("hi", system=None)
    try:
        text, _ = await chat_once(model, ctx)
    finally:
        await model.aclose()
    assert text == 'You said: "hi".'
    assert emulator.connections[-1].kind == "chat"
    assert emulator.connections[-1].latency.token_ms == 1


# --------------------------------------------------------------------------- openai SDK


async def test_sdk_non_streaming_text(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        completion = await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content == 'You are Bob, the weather bot. You said: "Hi".'
    assert completion.usage is not None
    assert completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


async def test_sdk_streaming_text_with_usage(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=messages("what is 2 + 3 * 4"),
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You are Bob, the weather bot. 2 + 3 * 4 = 14."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(text.split())
    assert len({c.id for c in chunks}) == 1


async def test_sdk_streamed_tool_call(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=messages("What's the weather? Use get weather, city: Oslo"),
            tools=[WEATHER_TOOL],
            stream=True,
        )
        chunks = [chunk async for chunk in stream]
    calls = [call for c in chunks for call in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].id is not None and calls[0].id.startswith("call_")
    assert calls[0].function is not None and calls[0].function.name == "get_weather"
    arguments = "".join(c.function.arguments or "" for c in calls if c.function)
    assert json.loads(arguments) == {"city": "Oslo"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert not any(c.choices[0].delta.content for c in chunks)


async def test_sdk_non_streaming_tool_call(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        completion = await client.chat.completions.create(
            model=MODEL, messages=messages("get_weather city=Oslo please"), tools=[WEATHER_TOOL]
        )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}


async def test_tool_choice_none_hides_the_tools(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        completion = await client.chat.completions.create(
            model=MODEL, messages=messages("get_weather"), tools=[WEATHER_TOOL], tool_choice="none"
        )
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content is not None


async def test_raw_stream_matches_the_openai_types(emulator: Emulator) -> None:
    body = {
        "model": MODEL,
        "messages": messages("get_weather city=Rome"),
        "tools": [WEATHER_TOOL],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    *payloads, done = await sse_chunks(emulator, body)
    assert done == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(p) for p in payloads]
    assert all(c.object == "chat.completion.chunk" and c.model == MODEL for c in chunks)
    first_call = chunks[1].choices[0].delta.tool_calls
    assert first_call is not None and first_call[0].function is not None
    assert first_call[0].function.arguments == ""  # name first, arguments after
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


async def test_raw_completion_matches_the_openai_types(emulator: Emulator) -> None:
    body = json.dumps({"model": MODEL, "messages": messages("Hi")}).encode()
    status, payload = await raw_request(emulator, "POST", "/v1/chat/completions", body=body)
    assert status == 200
    completion = ChatCompletion.model_validate(payload)
    assert completion.choices[0].message.role == "assistant"


async def test_models_list_and_retrieve(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        listed = [model.id async for model in client.models.list()]
        one = await client.models.retrieve(MODEL)
        with pytest.raises(openai.NotFoundError) as info:
            await client.models.retrieve("no-such-model")
    assert MODEL in listed and "gpt-realtime" in listed
    assert one.id == MODEL and one.object == "model"
    assert info.value.code == "model_not_found"


# ------------------------------------------------------------------------------ latency


async def test_rtt_delays_the_first_chunk(emulator: Emulator) -> None:
    latency = LatencyModel(rtt_ms=60)
    async with sdk(emulator, rtt_ms=60) as client:
        for new_connection in (True, False):  # the second request reuses the connection
            start = time.perf_counter()
            stream = await client.chat.completions.create(
                model=MODEL, messages=messages("Hi"), stream=True
            )
            arrivals = [time.perf_counter() async for _ in stream]  # read it all: keep-alive
            elapsed = arrivals[0] - start
            assert elapsed >= latency.http_first_byte_s(new_connection=new_connection)
            assert ("connect" in emulator.connections[-1].types("in")) == new_connection
    assert latency.http_first_byte_s(new_connection=False) == pytest.approx(0.060)


async def test_default_query_selects_latency_and_faults(emulator: Emulator) -> None:
    client = openai.AsyncOpenAI(
        base_url=emulator.url + "/v1",
        api_key=API_KEY,
        max_retries=0,
        default_query={"created_ms": "5", "fail_responses": "1"},
    )
    async with client:
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert emulator.connections[-1].latency.created_ms == 5


# ------------------------------------------------------------------------------- errors


async def test_unknown_model_is_404_model_not_found(emulator: Emulator) -> None:
    async with sdk(emulator) as client:
        with pytest.raises(openai.NotFoundError) as info:
            await client.chat.completions.create(model="gpt-nope", messages=messages("Hi"))
    assert info.value.code == "model_not_found"
    assert "gpt-nope" in info.value.message and "ModelCatalog" in info.value.message


async def test_added_model_is_served(emulator: Emulator) -> None:
    emulator.settings.models.add(["my-finetune"])
    async with sdk(emulator) as client:
        completion = await client.chat.completions.create(
            model="my-finetune", messages=messages("Hi")
        )
    assert completion.model == "my-finetune"


@pytest.mark.parametrize("path", ["/v1/nope", "/nope"])
async def test_unknown_path_is_404(emulator: Emulator, path: str) -> None:
    status, payload = await raw_request(emulator, "GET", path)
    assert status == 404
    assert payload["error"]["code"] == "unknown_url"


async def test_missing_key_is_401(emulator: Emulator) -> None:
    body = json.dumps({"model": MODEL, "messages": messages("Hi")}).encode()
    status, payload = await raw_request(
        emulator, "POST", "/v1/chat/completions", body=body, key=None
    )
    assert status == 401
    assert payload["error"]["code"] == "invalid_api_key"


async def test_malformed_json_is_400(emulator: Emulator) -> None:
    status, payload = await raw_request(
        emulator, "POST", "/v1/chat/completions", body=b'{"model": "gpt-4o", '
    )
    assert status == 400
    assert "JSON" in payload["error"]["message"]
    assert payload["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL}, "messages"),
        ({"model": MODEL, "messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": MODEL, "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"model": MODEL, "messages": [{"role": "user"}], "tools": [{}]}, "tools[0].function.name"),
    ],
)
async def test_bad_request_names_the_param(
    emulator: Emulator, body: dict[str, Any], param: str
) -> None:
    status, payload = await raw_request(
        emulator, "POST", "/v1/chat/completions", body=json.dumps(body).encode()
    )
    assert status == 400
    assert payload["error"]["param"] == param


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("abc", "rtt_ms='abc' is not a number"),
        # an infinite delay used to hang the request (and leave its task behind)
        ("inf", "rtt_ms=inf must be between 0 and 60000 ms"),
        ("1e12", "rtt_ms=1e12 must be between 0 and 60000 ms"),
    ],
)
async def test_bad_query_param_is_400_naming_it(emulator: Emulator, raw: str, message: str) -> None:
    # built by hand: base_url() itself refuses these values
    client = openai.AsyncOpenAI(
        base_url=emulator.url + "/v1",
        default_query={"rtt_ms": raw},
        api_key=API_KEY,
        max_retries=0,
        timeout=10,
    )
    async with client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert message in info.value.message


async def test_a_failing_custom_rule_is_a_500_naming_it(emulator: Emulator) -> None:
    @emulator.settings.rules.add
    def broken(ctx: ReplyContext) -> TextReply:
        raise KeyError("oops")

    async with sdk(emulator) as client:
        with pytest.raises(openai.InternalServerError) as info:
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert "KeyError" in info.value.message and "ReplyRules" in info.value.message


async def test_a_rule_taken_out_of_a_running_emulator_no_longer_answers(
    emulator: Emulator,
) -> None:
    @emulator.settings.rules.add
    def opening_hours(ctx: ReplyContext) -> TextReply | None:
        return TextReply("We are open 9 to 5.") if ctx.user_text == "When are you open?" else None

    async def answer() -> str | None:
        async with sdk(emulator) as client:
            reply = await client.chat.completions.create(
                model=MODEL, messages=messages("When are you open?")
            )
        return reply.choices[0].message.content

    assert await answer() == "You are Bob, the weather bot. We are open 9 to 5."
    emulator.settings.rules.remove(opening_hours)
    echoed = 'You are Bob, the weather bot. You said: "When are you open?".'
    assert await answer() == echoed
    emulator.settings.rules.add(opening_hours)
    emulator.settings.rules.clear()
    assert await answer() == echoed


# ------------------------------------------------------------------------------- faults


async def test_fail_responses_is_500(emulator: Emulator) -> None:
    async with sdk(emulator, fail_responses=1) as client:
        with pytest.raises(openai.InternalServerError) as info:
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"), stream=True)
    assert info.value.status_code == 500


async def test_fail_every_is_a_500_for_one_request_in_n(emulator: Emulator) -> None:
    async with sdk(emulator, fail_every=2) as client:
        answered = await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
        with pytest.raises(openai.InternalServerError, match="fail_every=2 fails 1 response in 2"):
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
        await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert answered.choices[0].message.content


async def test_error_on_chat_completions_is_400(emulator: Emulator) -> None:
    async with sdk(emulator, error_on="chat.completions") as client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert info.value.code == "injected_error"


async def test_drop_after_aborts_the_stream(emulator: Emulator) -> None:
    received: list[ChatCompletionChunk] = []
    async with sdk(emulator, drop_after=2) as client:
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages("Tell me something long"), stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            async for chunk in stream:
                received.append(chunk)
    assert len(received) == 2
    assert all(c.choices[0].finish_reason is None for c in received)


async def test_drop_after_zero_drops_a_non_streamed_request(emulator: Emulator) -> None:
    async with sdk(emulator, drop_after=0) as client:
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model=MODEL, messages=messages("Hi"))


async def test_drop_after_fails_livekit_llm_stream(emulator: Emulator) -> None:
    model = lk_openai.LLM(base_url=emulator.base_url(drop_after=3), api_key=API_KEY, model=MODEL)
    ctx = conversation("Hello there, how are you", system=None)
    try:
        with pytest.raises(Exception, match="Connection error"):
            await chat_once(model, ctx)
    finally:
        await model.aclose()


async def test_cancel_responses_ends_before_any_content(emulator: Emulator) -> None:
    async with sdk(emulator, cancel_responses=1) as client:
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages("get_weather"), tools=[WEATHER_TOOL], stream=True
        )
        chunks = [chunk async for chunk in stream]
        completion = await client.chat.completions.create(model=MODEL, messages=messages("Hi"))
    assert not any(c.choices[0].delta.content or c.choices[0].delta.tool_calls for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content == ""


# -------------------------------------------------------------------- messages -> rules


def test_reply_context_maps_every_role() -> None:
    ctx = reply_context(
        [
            {"role": "system", "content": "You are Ann."},
            {"role": "developer", "content": [{"type": "text", "text": "Be kind."}]},
            {"role": "user", "content": [{"type": "image_url"}, {"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ],
        [ToolSpec("f")],
    )
    assert ctx.instructions == "You are Ann.\nBe kind."
    assert [(t.role, t.text, t.name) for t in ctx.history] == [
        ("system", "You are Ann.", None),
        ("system", "Be kind.", None),
        ("user", "hi", None),
        ("assistant", "Checking.", None),
        ("tool_call", "{}", "f"),
        ("tool_output", "42", "f"),
    ]


@pytest.mark.parametrize(
    ("content", "text"),
    [("plain", "plain"), (None, ""), ([{"type": "text", "text": "a"}, {"text": "b"}], "ab")],
)
def test_content_text(content: Any, text: str) -> None:
    assert content_text(content) == text


class _Heard(logging.Handler):
    """Keeps what the emulator and aiohttp's server log; ``said`` is set at the first of them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.said = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("notebook_agents.emulator", "aiohttp")):
            self.records.append(record)
            self.said.set()


def test_a_client_hanging_up_while_its_request_is_read_is_one_quiet_line(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    """A client going away is normal for a server: no ERROR with a traceback (aiohttp's
    "Error handling request ... ConnectionResetError"), one debug line saying what happened.
    ``Expect: 100-continue`` tells the client the handler runs before it hangs up."""
    caplog.set_level(logging.DEBUG, logger="notebook_agents.emulator")
    heard = _Heard()
    logging.getLogger().addHandler(heard)
    try:
        with socket.create_connection(("127.0.0.1", emulator.port), timeout=5) as client:
            client.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Authorization: Bearer " + API_KEY.encode() + b"\r\n"
                b"Content-Type: application/json\r\nContent-Length: 1000\r\n"
                b"Expect: 100-continue\r\n\r\n"
            )
            assert client.recv(64).startswith(b"HTTP/1.1 100 Continue")
            client.sendall(b'{"model": "gpt-4o-mini", "messa')
        assert heard.said.wait(5), "nothing logged about the request"
    finally:
        logging.getLogger().removeHandler(heard)
    assert [r for r in heard.records if r.levelno >= logging.WARNING] == []
    (line,) = heard.records
    assert line.levelno == logging.DEBUG and line.exc_info is None
    assert line.getMessage() == (
        "POST /v1/chat/completions: the client went away before the answer (Connection lost)"
    )


async def test_a_runner_stopped_while_its_greeting_streams_logs_no_error(
    emulator: Emulator, runners: list[NotebookRunner], caplog: pytest.LogCaptureFixture
) -> None:
    """The newcomer's case: a cascaded agent greets in ``on_enter``, the cell stops the runner
    right after ``ready()``, cutting the greeting's chat completion."""
    server = AgentServer()

    class Greeter(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are Ada. You greet callers.")

        async def on_enter(self) -> None:
            self.session.generate_reply()

    slow = emulator.base_url(token_ms=200)  # the greeting streams for seconds

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            llm=lk_openai.LLM(base_url=slow, api_key=API_KEY, model=MODEL)
        )
        await session.start(agent=Greeter(), room=ctx.room)

    caplog.set_level(logging.DEBUG, logger="notebook_agents.emulator")
    for _ in range(3):
        runner = NotebookRunner(server).start()
        runners.append(runner)
        await runner.ready()
        runner.stop()
    emulator.stop()  # every request it was serving has ended
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    went_away = [r for r in caplog.records if "the client went away" in r.getMessage()]
    assert len(went_away) == 3  # each greeting was cut, and said so quietly
    assert {r.levelno for r in went_away} == {logging.DEBUG}
