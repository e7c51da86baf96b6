"""Validation and fault injection: each failure reaches the client as it should, and only it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from livekit.agents import llm
from livekit.plugins import openai

from notebook_agents.emulator import Emulator, ParameterError
from tests.conftest import API_KEY
from tests.emulator.test_emulator_realtime import (
    ServerEvents,
    realtime_session,
    realtime_ws_url,
    reply_text,
)

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
async def raw_ws(emulator: Emulator) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    """A bare websocket, for events the plugin would never send."""
    url = realtime_ws_url(emulator)
    async with aiohttp.ClientSession() as http, http.ws_connect(url, headers=HEADERS) as ws:
        assert (await ws.receive_json())["type"] == "session.created"
        yield ws


async def next_error(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    async with asyncio.timeout(5):
        while True:
            event = await ws.receive_json()
            if event["type"] == "error":
                return dict(event["error"])


async def test_malformed_json_gets_an_error_event(raw_ws: aiohttp.ClientWebSocketResponse) -> None:
    await raw_ws.send_str("{not json")
    error = await next_error(raw_ws)
    assert error["code"] == "invalid_json"


async def test_invalid_event_is_rejected_with_its_event_id(
    raw_ws: aiohttp.ClientWebSocketResponse,
) -> None:
    bad_item = {"type": "message", "role": "wizard", "content": []}
    await raw_ws.send_json(
        {"type": "conversation.item.create", "event_id": "evt_bad", "item": bad_item}
    )
    error = await next_error(raw_ws)
    assert error["event_id"] == "evt_bad"
    assert error["code"] == "invalid_value"
    assert error["param"].startswith("item")

    await raw_ws.send_json({"type": "response.explode", "event_id": "evt_unknown"})
    error = await next_error(raw_ws)
    assert (error["event_id"], error["param"]) == ("evt_unknown", "type")


async def test_plugin_sees_a_rejected_event_as_a_recoverable_error(emulator: Emulator) -> None:
    async with realtime_session(emulator) as sess:
        errors: list[llm.RealtimeModelError] = []
        sess.on("error", errors.append)
        events = ServerEvents(sess)
        sess.send_event({"type": "conversation.item.delete", "item_id": "nope", "event_id": "e1"})
        await events.wait_for("error", error__event_id="e1")
        assert errors and errors[0].recoverable
        # the connection is still good
        assert (await reply_text(await sess.generate_reply())).startswith("How can I help")


async def healthy_reply(emulator: Emulator) -> str:
    """A reply on a fault-free connection, alongside a faulty one."""
    async with realtime_session(emulator) as sess:
        return await reply_text(await sess.generate_reply())


async def test_drop_after_n_events_makes_the_plugin_reconnect(emulator: Emulator) -> None:
    async with realtime_session(emulator, drop_after=3) as sess:
        reconnected = asyncio.Event()
        sess.on("session_reconnected", lambda _: reconnected.set())
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="hello")
        await sess.update_chat_ctx(ctx)  # session.update, item.create -> 2 events
        sess.send_event({"type": "input_audio_buffer.clear"})  # the 3rd: dropped after it
        async with asyncio.timeout(5):
            await reconnected.wait()
        assert len([c for c in emulator.connections if c.kind == "realtime"]) == 2
        assert await healthy_reply(emulator) == "How can I help you?"


async def test_error_on_response_create_fails_generate_reply_at_once(emulator: Emulator) -> None:
    async with realtime_session(emulator, error_on="response.create") as sess:
        started = time.perf_counter()
        with pytest.raises(llm.RealtimeError, match="Injected fault"):
            await sess.generate_reply()
        # answered by the error carrying the event id, not by the plugin's 10 s timeout
        assert time.perf_counter() - started < 5
        assert await healthy_reply(emulator) == "How can I help you?"


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_delayed_acks_time_out_update_chat_ctx(emulator: Emulator) -> None:
    async with realtime_session(emulator, ack_delay_ms=6000) as sess:
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="hello")
        reply = asyncio.create_task(healthy_reply(emulator))
        with pytest.raises(llm.RealtimeError, match="update_chat_ctx timed out"):
            await sess.update_chat_ctx(ctx)
        assert await reply == "How can I help you?"


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_ack_delay_can_hold_back_only_tool_results(emulator: Emulator) -> None:
    held = "function_call_output"
    async with realtime_session(emulator, ack_delay_ms=6000, ack_delay_items=held) as sess:
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="what is the weather?")
        call = llm.FunctionCall(call_id="call_1", name="get_weather", arguments="{}")
        ctx.insert(call)
        async with asyncio.timeout(4):  # a message and a call are acknowledged at once
            await sess.update_chat_ctx(ctx)
        ctx.insert(
            llm.FunctionCallOutput(
                call_id="call_1", name="get_weather", output="sunny", is_error=False
            )
        )
        with pytest.raises(llm.RealtimeError, match="update_chat_ctx timed out"):
            await sess.update_chat_ctx(ctx)


async def test_fail_first_fails_only_the_first_responses(emulator: Emulator) -> None:
    async with realtime_session(emulator, fail_first=1) as sess:
        errors: list[llm.RealtimeModelError] = []
        sess.on("error", errors.append)
        assert await reply_text(await sess.generate_reply()) == ""
        assert await reply_text(await sess.generate_reply()) == "How can I help you?"
        assert len(errors) == 1 and "response failed" in str(errors[0].error)


async def test_fail_every_fails_one_response_in_n_across_connections(emulator: Emulator) -> None:
    """A model that fails now and then: every third response the emulator answers under the
    fault fails, on whichever connection asks, each new connection counted on."""
    replies = []
    for _ in range(3):  # a session of its own each time, as each repetition of a scenario has
        async with realtime_session(emulator, fail_every=3) as sess:
            replies += [await reply_text(await sess.generate_reply()) for _ in range(2)]
    assert replies == ["How can I help you?", "How can I help you?", ""] * 2
    async with realtime_session(emulator) as sess:  # a connection without it is not counted
        assert await reply_text(await sess.generate_reply()) == "How can I help you?"


async def test_failed_responses_surface_as_errors(emulator: Emulator) -> None:
    async with realtime_session(emulator, fail_responses=1) as sess:
        errors: list[llm.RealtimeModelError] = []
        sess.on("error", errors.append)
        events = ServerEvents(sess)
        gen = await sess.generate_reply()
        assert await reply_text(gen) == ""
        done = await events.wait_for("response.done")
        assert done["response"]["status"] == "failed"
        assert errors and "response failed" in str(errors[0].error)
        assert await healthy_reply(emulator) == "How can I help you?"


async def test_cancelled_responses_end_without_content(emulator: Emulator) -> None:
    async with realtime_session(emulator, cancel_responses="true") as sess:
        events = ServerEvents(sess)
        assert await reply_text(await sess.generate_reply()) == ""
        done = await events.wait_for("response.done")
        assert done["response"]["status"] == "cancelled"
        assert await healthy_reply(emulator) == "How can I help you?"


BAD_CONNECTIONS = [
    ("model=gpt-imaginary", 404, "model_not_found", "gpt-imaginary"),
    ("model=gpt-realtime&rtt_ms=fast", 400, "invalid_parameter", "rtt_ms"),
    ("model=gpt-realtime&rtt_ms=inf", 400, "invalid_parameter", "rtt_ms=inf must be between"),
    ("model=gpt-realtime&rtt_ms=-1", 400, "invalid_parameter", "rtt_ms=-1 must be between"),
    ("model=gpt-realtime&drop_after=1.5", 400, "invalid_parameter", "drop_after"),
    ("model=gpt-realtime&ack_delay_items=", 400, "invalid_parameter", "ack_delay_items"),
    ("model=gpt-realtime&fail_first=-", 400, "invalid_parameter", "fail_first"),
    ("model=gpt-realtime&fail_every=0.5", 400, "invalid_parameter", "fail_every"),
]


@pytest.mark.parametrize(("query", "status", "code", "needle"), BAD_CONNECTIONS)
async def test_a_refused_websocket_hears_why_in_an_error_event(
    emulator: Emulator, query: str, status: int, code: str, needle: str
) -> None:
    ws_url = emulator.base_url().replace("http", "ws", 1) + f"/realtime?{query}"
    async with aiohttp.ClientSession() as http:
        # a plain request gets the HTTP error
        async with http.get(ws_url, headers=HEADERS) as response:
            assert response.status == status
            assert needle in (await response.json())["error"]["message"]
        # a websocket is accepted, told why in an ``error`` event (a failed handshake reaches
        # the plugin as an opaque WSServerHandshakeError), and every event it sends gets the same
        async with asyncio.timeout(5), http.ws_connect(ws_url, headers=HEADERS) as ws:
            first = await ws.receive_json()
            assert first["type"] == "error" and first["error"]["code"] == code
            assert needle in first["error"]["message"]
            await ws.send_json({"type": "response.create", "event_id": "evt_1"})
            answer = await ws.receive_json()
            assert answer["error"]["event_id"] == "evt_1"
            assert answer["error"]["message"] == first["error"]["message"]


@pytest.mark.parametrize("rtt", ["inf", "1e12"])
async def test_plugin_reports_a_bad_latency_as_its_message(emulator: Emulator, rtt: str) -> None:
    model = openai.realtime.RealtimeModel(
        base_url=f"{emulator.url}/v1?rtt_ms={rtt}",  # by hand: base_url() refuses it
        api_key=API_KEY,
        modalities=["text"],
        turn_detection=None,
    )
    sess = model.session()
    errors: list[llm.RealtimeModelError] = []
    sess.on("error", errors.append)
    try:
        started = time.perf_counter()
        with pytest.raises(llm.RealtimeError, match=f"rtt_ms={rtt} must be between 0 and 60000"):
            await sess.generate_reply()
        # the message itself, at once: not a handshake error and the 10 s reply timeout
        assert time.perf_counter() - started < 5
        assert errors and "must be between 0 and 60000 ms" in errors[0].error.body.message  # type: ignore[attr-defined]
    finally:
        await sess.aclose()
        await model.aclose()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"rtt_ms": float("inf")}, "rtt_ms=inf must be between 0 and 60000 ms"),
        ({"token_ms": 1e12}, "token_ms=1000000000000 must be between 0 and 60000 ms"),
        ({"rtt_ms": -20}, "rtt_ms=-20 must be between 0 and 60000 ms"),
        ({"connect_rtts": 50}, "connect_rtts=50 must be between 0 and 10"),
        ({"drop_after": 1.5}, "drop_after=1.5 must be a whole number"),
        ({"rtt": 20}, "unknown parameter 'rtt'.*rtt_ms"),
    ],
)
def test_base_url_refuses_bad_values_before_any_connection(
    emulator: Emulator, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        emulator.base_url(**overrides)
    assert emulator.connections == []
