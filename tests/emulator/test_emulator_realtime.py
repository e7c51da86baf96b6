"""The real LiveKit OpenAI realtime plugin, unmodified, against the emulator over loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from livekit import rtc
from livekit.agents import llm
from livekit.agents.llm import function_tool
from livekit.plugins import openai
from openai.types.realtime import ResponseCancelEvent

from notebook_agents.bench.scenario import history
from notebook_agents.emulator import Emulator
from notebook_agents.emulator._settings import CONNECTIONS_KEPT
from notebook_agents.emulator.latency import query_to_str
from tests.conftest import API_KEY


@asynccontextmanager
async def realtime_session(
    emulator: Emulator, *, audio: bool = False, listening: bool = False, **query: Any
) -> AsyncIterator[openai.realtime.RealtimeSession]:
    """A plugin session on its own model; ``query`` sets the connection's latency and faults.
    ``listening``: speaking audio, with the service's server VAD and transcripts, as the
    plugin sets a session up by default."""
    options: dict[str, Any] = (
        {}
        if listening
        else {"modalities": ["audio"] if audio else ["text"], "turn_detection": None}
    )
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(**query), api_key=API_KEY, **options
    )
    sess = model.session()
    try:
        yield sess
    finally:
        await sess.aclose()
        await model.aclose()


@pytest.fixture
async def session(emulator: Emulator) -> AsyncIterator[openai.realtime.RealtimeSession]:
    async with realtime_session(emulator) as sess:
        yield sess


class ServerEvents:
    """The raw server events one plugin session received, with a way to wait for one."""

    def __init__(self, sess: llm.RealtimeSession[Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        sess.on("openai_server_event_received", self._on_event)

    def _on_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self._changed.set()

    async def wait_for(
        self, event_type: str, timeout: float = 5.0, **fields: Any
    ) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.events:
                    if event["type"] == event_type and all(
                        _field(event, k) == v for k, v in fields.items()
                    ):
                        return event
                self._changed.clear()
                await self._changed.wait()


def _field(event: dict[str, Any], dotted: str) -> Any:
    value: Any = event
    for part in dotted.split("__"):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def realtime_ws_url(emulator: Emulator, **query: Any) -> str:
    """The websocket URL a bare client opens (the plugin builds the same one)."""
    return f"ws://127.0.0.1:{emulator.port}/v1/realtime?" + query_to_str(
        {"model": "gpt-realtime", **query}
    )


async def reply_text(gen: llm.GenerationCreatedEvent) -> str:
    text = ""
    async for message in gen.message_stream:
        async for delta in message.text_stream:
            text += delta
    return text


@function_tool
async def get_weather(location: str) -> str:
    """Look up the weather in a location."""
    return f"sunny in {location}"


async def test_session_syncs_context_instructions_tools_and_replies(
    emulator: Emulator, session: openai.realtime.RealtimeSession
) -> None:
    ctx = history(10)
    await session.update_chat_ctx(ctx)
    assert [item.id for item in session.chat_ctx.items] == [item.id for item in ctx.items]

    await session.update_instructions("You are Ada. Answer briefly.")
    await session.update_tools([get_weather])
    assert [tool.id for tool in session.tools.flatten()] == ["get_weather"]

    # the reply proves the instructions were applied, and it joins the remote context
    text = await reply_text(await session.generate_reply())
    assert text.startswith("You are Ada.")
    assert len(session.chat_ctx.items) == 21

    received = emulator.connections[-1].types("in")
    assert received.count("conversation.item.create") == 20
    assert received.count("session.update") == 3  # full at connect, instructions, tools


async def test_audio_reply_streams_pcm16_24khz_with_a_transcript(emulator: Emulator) -> None:
    async with realtime_session(emulator, audio=True) as sess:
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="say something nice")
        await sess.update_chat_ctx(ctx)
        gen = await sess.generate_reply()
        transcript, frames = "", []
        async for message in gen.message_stream:
            assert await message.modalities == ["audio", "text"]

            async def collect_audio(stream: AsyncIterable[Any] = message.audio_stream) -> None:
                async for frame in stream:
                    frames.append(frame)

            audio_task = asyncio.create_task(collect_audio())
            async for delta in message.text_stream:
                transcript += delta
            await audio_task
        assert transcript == 'You said: "say something nice".'
        assert frames and all(f.sample_rate == 24000 and f.num_channels == 1 for f in frames)
        assert sum(f.samples_per_channel for f in frames) > 0


async def test_tool_call_round_trip(session: openai.realtime.RealtimeSession) -> None:
    await session.update_tools([get_weather])
    ctx = llm.ChatContext()
    ctx.add_message(role="user", content="What is the weather? Use get weather, location=Paris")
    await session.update_chat_ctx(ctx)

    gen = await session.generate_reply()
    calls = [call async for call in gen.function_stream]
    assert await reply_text(gen) == ""
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"location":"Paris"}')]

    ctx = session.chat_ctx.copy()
    ctx.items.append(
        llm.FunctionCallOutput(call_id=calls[0].call_id, output="sunny in Paris", is_error=False)
    )
    await session.update_chat_ctx(ctx)
    text = await reply_text(await session.generate_reply())
    assert text == "The tool returned: sunny in Paris"


async def test_conversations_are_each_connections_items_in_server_order(
    emulator: Emulator,
) -> None:
    async with realtime_session(emulator) as sess:
        await sess.update_tools([get_weather])
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="Use get weather, location=Paris")
        await sess.update_chat_ctx(ctx)
        (call,) = [call async for call in (await sess.generate_reply()).function_stream]
        ctx = sess.chat_ctx.copy()
        ctx.items.append(
            llm.FunctionCallOutput(call_id=call.call_id, output="sunny in Paris", is_error=False)
        )
        await sess.update_chat_ctx(ctx)
        await reply_text(await sess.generate_reply())

        (server,) = emulator.conversations()  # the one realtime connection
        assert [item["id"] for item in server] == [item.id for item in sess.chat_ctx.items]
        user, tool_call, output, reply = server
        assert user == {
            "id": ctx.items[0].id,
            "type": "message",
            "role": "user",
            "text": "Use get weather, location=Paris",
        }
        assert (tool_call["name"], tool_call["text"]) == ("get_weather", '{"location":"Paris"}')
        # named after its call, as livekit names a tool output
        assert (output["type"], output["name"], output["text"]) == (
            "function_call_output",
            "get_weather",
            "sunny in Paris",
        )
        assert output["call_id"] == tool_call["call_id"] == call.call_id
        assert (reply["role"], reply["text"]) == ("assistant", "The tool returned: sunny in Paris")
    emulator.stop()
    assert emulator.conversations() == [server]  # still there to read once it stopped


async def test_item_ids_follow_the_conversation_through_inserts_and_deletes(
    emulator: Emulator,
) -> None:
    """``item_ids`` (read after every turn, off the server's thread) is the described
    conversation's messages and tool items, whatever the edits: an item put first or in the
    middle, one deleted, a system message the model keeps that no chat context holds."""
    async with realtime_session(emulator) as sess:
        ctx = llm.ChatContext()
        ctx.add_message(role="system", content="Be brief.")
        for text in ("one", "two", "three"):
            ctx.add_message(role="user", content=text)
        await sess.update_chat_ctx(ctx)
        session_id = emulator.connections[-1].session_id
        assert session_id is not None

        def chat_items(ctx: llm.ChatContext) -> list[str]:
            return [i.id for i in ctx.messages() if i.role != "system"]

        def described() -> list[str]:
            items = emulator.conversation(session_id) or []
            return [i["id"] for i in items if i.get("role") in ("user", "assistant")]

        assert emulator.item_ids(session_id) == described() == chat_items(ctx)
        edited = sess.chat_ctx.copy()
        edited.items[2:2] = [llm.ChatMessage(role="assistant", content=["one and a half"])]
        edited.items.insert(0, llm.ChatMessage(role="user", content=["zero"]))
        del edited.items[-2]  # "two"
        await sess.update_chat_ctx(edited)
        assert emulator.item_ids(session_id) == described() == chat_items(edited)
        await reply_text(await sess.generate_reply())  # appended by the model
        assert emulator.item_ids(session_id) == described() == chat_items(sess.chat_ctx)
        assert len(described()) == 5
    assert emulator.item_ids("no-such-session") is None


async def test_cancel_bare_and_by_response_id(emulator: Emulator) -> None:
    async with realtime_session(emulator, token_ms=20) as sess:
        events = ServerEvents(sess)
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content=" ".join(["word"] * 40))
        await sess.update_chat_ctx(ctx)

        first = await sess.generate_reply()
        await events.wait_for("response.output_text.delta")
        sess.interrupt()  # bare response.cancel
        done = await events.wait_for("response.done", response__id=first.response_id)
        assert done["response"]["status"] == "cancelled"
        assert len((await reply_text(first)).split()) < 40

        second = await sess.generate_reply()
        sess.send_event(ResponseCancelEvent(type="response.cancel", response_id=second.response_id))
        done = await events.wait_for("response.done", response__id=second.response_id)
        assert done["response"]["status"] == "cancelled"

        # nothing active any more: the service says so, and the plugin ignores it
        sess.send_event(ResponseCancelEvent(type="response.cancel", event_id="cancel_again"))
        error = await events.wait_for("error", error__event_id="cancel_again")
        assert error["error"]["message"].startswith("Cancellation failed")


async def test_truncate_cuts_audio_and_transcript(emulator: Emulator) -> None:
    async with realtime_session(emulator, audio=True) as sess:
        events = ServerEvents(sess)
        ctx = llm.ChatContext()
        ctx.add_message(role="user", content="one two three four five six seven")
        await sess.update_chat_ctx(ctx)
        gen = await sess.generate_reply()
        message_id = ""
        async for message in gen.message_stream:
            message_id = message.message_id
            async for _ in message.audio_stream:
                pass
        await events.wait_for("response.done")

        whole = emulator_item(emulator, message_id)["content"][0]
        words, duration_ms = whole["transcript"].split(), whole["_audio_ms"]
        sess.truncate(message_id=message_id, modalities=["audio"], audio_end_ms=1000)
        truncated = await events.wait_for("conversation.item.truncated", item_id=message_id)
        assert truncated["audio_end_ms"] == 1000

        item = emulator_item(emulator, message_id)
        # the words heard in the first second, by their share of the speech
        kept = round(len(words) * 1000 / duration_ms)
        assert 0 < kept < len(words)
        assert item["content"][0]["transcript"] == " ".join(words[:kept])


def emulator_item(emulator: Emulator, item_id: str) -> dict[str, Any]:
    """The server's copy of an item."""
    conversation = emulator.connections[-1].conversation
    assert conversation is not None
    item = conversation.get(item_id)
    assert item is not None
    return item


async def test_injected_rtt_is_a_lower_bound_on_each_exchange(emulator: Emulator) -> None:
    rtt_s = 0.05
    async with realtime_session(emulator, rtt_ms=rtt_s * 1000, connect_rtts=2) as sess:
        started = time.perf_counter()
        await sess.update_chat_ctx(history(1))
        # connect (2 RTT) + the item round trip (1 RTT)
        assert time.perf_counter() - started >= 3 * rtt_s

        started = time.perf_counter()
        await sess.generate_reply()
        assert time.perf_counter() - started >= rtt_s


async def test_input_audio_buffer_commit_and_clear(emulator: Emulator) -> None:
    async with realtime_session(emulator) as sess:
        events = ServerEvents(sess)
        tone = rtc.AudioFrame(
            data=b"\x01\x00" * 4800, sample_rate=24000, num_channels=1, samples_per_channel=4800
        )
        sess.push_audio(tone)  # 200 ms
        sess.commit_audio()
        committed = await events.wait_for("input_audio_buffer.committed")
        added = await events.wait_for("conversation.item.added", item__id=committed["item_id"])
        assert added["item"]["role"] == "user"
        assert added["item"]["content"][0]["type"] == "input_audio"

        sess.push_audio(tone)
        sess.clear_audio()
        await events.wait_for("input_audio_buffer.cleared")
        # the cleared buffer is empty: committing it now is an error
        sess.send_event({"type": "input_audio_buffer.commit", "event_id": "commit_empty"})
        error = await events.wait_for("error", error__event_id="commit_empty")
        assert error["error"]["code"] == "input_audio_buffer_commit_empty"


async def test_a_close_frame_is_answered_a_round_trip_later(emulator: Emulator) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(realtime_ws_url(emulator, rtt_ms=60), headers=headers)
        assert (await ws.receive_json())["type"] == "session.created"
        started = time.perf_counter()
        await ws.close()  # waits for the server's close frame
        assert time.perf_counter() - started >= 0.06
    # the connection's events were all handled before the close was answered
    assert emulator.connections[-1].types("out")[-1] == "session.created"


async def test_the_emulator_keeps_the_logs_of_its_latest_connections_only(
    emulator: Emulator,
) -> None:
    """A kernel that runs call after call keeps a bounded log of them, not one per call."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with aiohttp.ClientSession() as http:
        for _ in range(CONNECTIONS_KEPT + 5):
            async with http.ws_connect(realtime_ws_url(emulator), headers=headers) as ws:
                assert (await ws.receive_json())["type"] == "session.created"
    logs = emulator.connections
    assert len(logs) == CONNECTIONS_KEPT
    assert len(emulator.conversations()) == CONNECTIONS_KEPT
    # each holds its own events, a bounded number of them
    assert all(log.events.maxlen is not None and len(log.events) == 1 for log in logs)
