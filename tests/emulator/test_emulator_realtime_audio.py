"""The Realtime websocket hears and speaks: server VAD on the appended audio, a real
transcript (pocketsphinx), and the reply spoken by eSpeak, sent as fast as its text would be
(faster than it plays), all through livekit's own realtime plugin, unmodified."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import numpy as np
import pytest
from livekit import rtc
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, llm
from livekit.agents.llm import function_tool
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.emulator.latency import LatencyModel
from notebook_agents.emulator.listening import ServerVad
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.tokens import tokens
from tests.conftest import API_KEY, started
from tests.emulator.test_emulator_realtime import (
    ServerEvents,
    emulator_item,
    realtime_session,
    realtime_ws_url,
)
from tests.speech_check import envelope_match

TURN = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
}


@function_tool
async def transfer_to_billing() -> str:
    """Hand the caller to billing."""
    return "ok"


def say(sess: llm.RealtimeSession[Any], text: str, quiet_s: float = 1.0) -> None:
    """Push ``text`` spoken, then ``quiet_s`` of silence, in 20 ms frames (faster than real
    time: the server's VAD counts audio, not seconds)."""
    spoken = np.concatenate([synthesize(text), np.zeros(int(quiet_s * SAMPLE_RATE), np.int16)])
    for chunk in np.array_split(spoken, spoken.size // 480):
        sess.push_audio(rtc.AudioFrame(chunk.tobytes(), SAMPLE_RATE, 1, chunk.size))


class RawClient:
    """A bare websocket client, for what the plugin hides: every server event in order, with
    the time it arrived."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.arrived: list[float] = []

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send_json(event)

    async def until(
        self, event_type: str, timeout: float = 10.0, *, errors: bool = False
    ) -> dict[str, Any]:
        """Receive events until one of ``event_type`` (an ``error`` fails the test, unless
        ``errors``)."""
        async with asyncio.timeout(timeout):
            while True:
                event: dict[str, Any] = await self.ws.receive_json()
                self.arrived.append(time.perf_counter())
                self.events.append(event)
                assert errors or event["type"] != "error", event
                if event["type"] == event_type:
                    return event

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def first(self, event_type: str) -> dict[str, Any]:
        return next(e for e in self.events if e["type"] == event_type)

    async def speak(self, samples: np.ndarray, chunk_ms: int = 40) -> None:
        """Append audio in ``chunk_ms`` pieces, as fast as the socket takes them."""
        step = SAMPLE_RATE * chunk_ms // 1000
        for start in range(0, samples.size, step):
            chunk = samples[start : start + step].astype("<i2").tobytes()
            await self.send(
                {"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()}
            )


@asynccontextmanager
async def raw_session(
    emulator: Emulator, query: dict[str, Any] | None = None, **session: Any
) -> AsyncIterator[RawClient]:
    """A bare websocket (``query``: its latency and faults) with ``session`` applied by a
    ``session.update``."""
    headers = {"Authorization": f"Bearer {API_KEY}"}
    url = realtime_ws_url(emulator, **(query or {}))
    async with aiohttp.ClientSession() as http, http.ws_connect(url, headers=headers) as ws:
        client = RawClient(ws)
        await client.until("session.created")
        await client.send({"type": "session.update", "session": {"type": "realtime", **session}})
        await client.until("session.updated")
        yield client


def spoken(text: str, quiet_s: float = 1.0) -> np.ndarray:
    """``text`` in eSpeak's voice, then ``quiet_s`` of silence: a caller's turn."""
    return np.concatenate([synthesize(text), np.zeros(int(quiet_s * SAMPLE_RATE), np.int16)])


TRANSFER_TOOL = {
    "type": "function",
    "name": "transfer_to_billing",
    "description": "Hand the caller to billing.",
    "parameters": {"type": "object", "properties": {}},
}
TRANSCRIBED = {"model": "gpt-4o-mini-transcribe"}


def audio_of(events: list[dict[str, Any]]) -> np.ndarray:
    deltas = [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]
    return np.frombuffer(b"".join(base64.b64decode(d) for d in deltas), "<i2")


def test_the_vad_finds_speech_between_silences() -> None:
    vad = ServerVad(SAMPLE_RATE, TURN)
    quiet = np.zeros(SAMPLE_RATE, np.int16)
    spoken = synthesize("hello there")
    heard_at = list(vad.feed(np.concatenate([quiet, spoken, quiet])))
    assert [h.kind for h in heard_at] == ["started", "stopped"]
    start, stop = (h.ms for h in heard_at)
    assert 950 <= start <= 1100  # within a few frames of where the speech begins
    assert stop - start >= 0.8 * spoken.size * 1000 / SAMPLE_RATE


async def test_a_spoken_request_is_heard_transcribed_and_answered_with_a_tool_call(
    emulator: Emulator,
) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        await sess.update_tools([transfer_to_billing])
        say(sess, "transfer to billing please")
        started = await events.wait_for("input_audio_buffer.speech_started")
        stopped = await events.wait_for("input_audio_buffer.speech_stopped")
        assert stopped["item_id"] == started["item_id"]
        committed = await events.wait_for("input_audio_buffer.committed")
        assert committed["item_id"] == started["item_id"]
        transcribed = await events.wait_for("conversation.item.input_audio_transcription.completed")
        assert transcribed["transcript"] == "transfer to billing please"
        # the server's VAD creates the response on its own; the words name the tool
        call = await events.wait_for("response.function_call_arguments.done")
        assert call["name"] == "transfer_to_billing"


async def test_the_reply_is_spoken_whole_and_sent_faster_than_it_plays(
    emulator: Emulator,
) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        arrived: list[float] = []
        sess.on(
            "openai_server_event_received",
            lambda e: (
                arrived.append(time.perf_counter())
                if e["type"] == "response.output_audio.delta"
                else None
            ),
        )
        say(sess, "hello there")
        done = await events.wait_for("response.done", timeout=15)
        assert done["response"]["status"] == "completed"
        text = (await events.wait_for("response.output_audio_transcript.done"))["transcript"]
        assert text == 'You said: "hello there".'
        spoken = audio_of(events.events)
        expected = synthesize(text)
        assert abs(spoken.size - expected.size) < 0.1 * expected.size
        assert envelope_match(spoken, expected) > 0.9  # eSpeak saying the reply
        # all of it, faster than it plays: the client's speaker plays it in real time
        assert arrived[-1] - arrived[0] < 0.5 * spoken.size / SAMPLE_RATE


async def test_a_typed_turn_to_a_speaking_agent_costs_its_tokens_not_its_speech(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """An agent as deployed (livekit's default modalities: it speaks), typed to: the turn
    ends when the model has sent the reply, which it does faster than the reply plays."""
    latency = LatencyModel(rtt_ms=20, first_token_ms=150, token_ms=10)
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(**latency.as_query()), api_key=API_KEY
        )
        session: AgentSession[None] = AgentSession(llm=model)
        await session.start(agent=Agent(instructions="You are Ada."), room=ctx.room)

    runner = await started(runners, NotebookRunner(server))
    await runner.send_text("hello")  # warm
    began = time.perf_counter()
    reply = await runner.send_text("tell me about the weather in Paris this week")
    took = time.perf_counter() - began
    assert reply == 'You are Ada. You said: "tell me about the weather in Paris this week".'
    # the caller's item, acked, then the response: the latency model's truth
    truth = latency.item_ack_s() + latency.response_s(len(tokens(reply)))
    assert took >= truth
    assert took < 0.5 * synthesize(reply).size / SAMPLE_RATE  # ~4 s to say


async def test_speaking_over_the_reply_cancels_it(emulator: Emulator) -> None:
    # a reply the model is still producing (300 ms a token): a barge-in cancels the rest
    async with realtime_session(emulator, listening=True, token_ms=300) as sess:
        events = ServerEvents(sess)
        say(sess, "hello there")
        await events.wait_for("response.output_audio.delta", timeout=10)
        say(sess, "thank you")  # a barge-in
        cancelled = await events.wait_for("response.done", response__status="cancelled")
        assert cancelled["response"]["status_details"]["reason"] == "turn_detected"
        # and the new turn is answered
        answered = await events.wait_for(
            "response.output_audio_transcript.done", transcript='You said: "thank you".', timeout=15
        )
        assert answered


async def test_server_vad_commits_the_turn_then_hears_it_in_the_words_of_the_tools(
    emulator: Emulator,
) -> None:
    words = synthesize("transfer to billing")
    async with raw_session(
        emulator,
        output_modalities=["text"],
        tools=[TRANSFER_TOOL],
        audio={"input": {"transcription": TRANSCRIBED, "turn_detection": TURN}},
    ) as client:
        await client.speak(np.concatenate([words, np.zeros(SAMPLE_RATE, np.int16)]))
        await client.until("response.done")
    turn = [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.done",
        "response.created",
    ]
    types = client.types()
    heard_turn = types[: types.index("response.created") + 1]
    assert [t for t in heard_turn if t in turn] == turn
    started, stopped = (client.first(t) for t in turn[:2])
    item_id = started["item_id"]
    assert all(client.first(t)["item_id"] == item_id for t in turn[1:3] + turn[4:5])
    assert all(client.first(t)["item"]["id"] == item_id for t in turn[3:6:2])
    # the speech begins the audio (the prefix padding cannot reach before it) and stops
    # where the words end, give or take the VAD's frames
    words_ms = words.size * 1000 // SAMPLE_RATE
    assert started["audio_start_ms"] == 0
    assert words_ms - 150 <= stopped["audio_end_ms"] <= words_ms + 100
    # committed at once, without words; they follow as the transcription completes
    assert client.first("conversation.item.added")["item"]["content"][0]["transcript"] is None
    heard = client.first("conversation.item.input_audio_transcription.completed")
    assert heard["transcript"] == "transfer to billing"
    done = client.first("conversation.item.done")["item"]
    assert done["content"][0]["transcript"] == "transfer to billing"
    # the turn is answered on its own, by the tool its words name
    call = client.first("response.function_call_arguments.done")
    assert call["name"] == "transfer_to_billing"


async def test_without_turn_detection_only_a_commit_ends_the_turn(emulator: Emulator) -> None:
    async with raw_session(
        emulator, output_modalities=["text"], audio={"input": {"turn_detection": None}}
    ) as client:
        await client.speak(spoken("hello there"))
        await client.send({"type": "input_audio_buffer.commit"})
        done = await client.until("conversation.item.done")
        # no transcription asked for: none is sent, but the model heard the words
        assert done["item"]["content"][0]["transcript"] is None
        await client.send({"type": "response.create"})  # an error if one were running
        reply = await client.until("response.output_text.done")
        await client.until("response.done")
    assert reply["text"] == 'You said: "hello there".'
    assert "input_audio_buffer.speech_started" not in client.types()
    assert "conversation.item.input_audio_transcription.completed" not in client.types()
    assert client.types().count("response.created") == 1


async def test_a_held_back_ack_holds_the_turns_done_event_behind_it(emulator: Emulator) -> None:
    async with raw_session(
        emulator,
        query={"ack_delay_ms": 300},
        output_modalities=["text"],
        audio={"input": {"transcription": TRANSCRIBED, "turn_detection": None}},
    ) as client:
        await client.speak(spoken("hello there"))
        await client.send({"type": "input_audio_buffer.commit"})
        await client.until("conversation.item.done")
    types = client.types()
    assert "conversation.item.added" in types  # before the done event that ended the wait


async def test_the_spoken_reply_streams_in_the_services_order(emulator: Emulator) -> None:
    async with raw_session(
        emulator,
        output_modalities=["audio"],
        audio={"input": {"transcription": TRANSCRIBED, "turn_detection": TURN}},
    ) as client:
        await client.speak(spoken("hello there"))
        await client.until("response.done", timeout=15)
    reply = [e for e in client.events if e["type"].startswith("response.")]
    kinds = [e["type"] for e in reply]
    first_audio = kinds.index("response.output_audio.delta")
    last_audio = len(kinds) - 1 - kinds[::-1].index("response.output_audio.delta")
    assert kinds[:first_audio] == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_audio_transcript.delta",
    ]
    assert set(kinds[first_audio : last_audio + 1]) == {
        "response.output_audio.delta",
        "response.output_audio_transcript.delta",
    }
    assert kinds[last_audio + 1 :] == [
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.done",
    ]
    assert reply[2]["part"] == {"type": "audio", "transcript": ""}
    text = client.first("response.output_audio_transcript.done")["transcript"]
    assert text == 'You said: "hello there".'
    deltas = "".join(e["delta"] for e in reply if e["type"].endswith("transcript.delta"))
    assert deltas == text
    item = client.first("response.done")["response"]["output"][0]
    assert item["content"] == [{"type": "output_audio", "transcript": text}]
    audio = audio_of(reply)
    expected = synthesize(text)
    assert abs(audio.size - expected.size) < 0.1 * expected.size
    assert np.sqrt(np.mean(audio.astype(np.float64) ** 2)) > 300  # speech, not silence


async def ask(client: RawClient, said: str) -> float:
    """Add ``said`` as the caller's text and ask for a response; when it was asked."""
    await client.send(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": said}],
            },
        }
    )
    await client.until("conversation.item.added")
    asked = time.perf_counter()
    await client.send({"type": "response.create"})
    return asked


async def test_a_spoken_reply_costs_the_time_of_its_tokens_not_of_its_speech(
    emulator: Emulator,
) -> None:
    latency = LatencyModel(rtt_ms=10, first_token_ms=100, token_ms=20)
    async with raw_session(
        emulator,
        query=latency.as_query(),
        output_modalities=["audio"],
        audio={"input": {"turn_detection": None}},
    ) as client:
        asked = await ask(client, "tell me about the weather in Paris this week")
        await client.until("response.done")
    arrived = dict(zip((id(e) for e in client.events), client.arrived, strict=True))
    reply = [e for e in client.events if e["type"].startswith("response.")]
    text = client.first("response.output_audio_transcript.done")["transcript"]
    audio_s = audio_of(reply).size / SAMPLE_RATE
    assert audio_s == pytest.approx(synthesize(text).size / SAMPLE_RATE, rel=0.1)
    # each token leaves with its words and their audio, as its text would: the latency
    # model's truth, the first audio where the first text would be
    words = tokens(text)
    first_audio = client.first("response.output_audio.delta")
    assert [e["delta"] for e in reply if e["type"].endswith("transcript.delta")] == words
    assert [e["type"] for e in reply].count("response.output_audio.delta") == len(words)
    assert arrived[id(first_audio)] - asked >= latency.first_token_s()
    done = arrived[id(client.first("response.done"))] - asked
    assert done >= latency.response_s(len(words))
    # and not at the pace it plays: "The server will produce audio faster than realtime"
    assert done < 0.5 * audio_s


async def test_a_truncate_cuts_a_reply_sent_whole_to_what_was_played(
    emulator: Emulator,
) -> None:
    said = "one two three four five six seven eight nine ten"
    async with raw_session(
        emulator, output_modalities=["audio"], audio={"input": {"turn_detection": None}}
    ) as client:
        await ask(client, said)
        done = await client.until("response.done")
        item = done["response"]["output"][0]
        whole = item["content"][0]["transcript"]
        assert whole == f'You said: "{said}".'
        whole_ms = audio_of(client.events).size * 1000 // SAMPLE_RATE
        await client.send(
            {
                "type": "conversation.item.truncate",
                "item_id": item["id"],
                "content_index": 0,
                "audio_end_ms": 600,
            }
        )
        truncated = await client.until("conversation.item.truncated")
        await client.send({"type": "conversation.item.retrieve", "item_id": item["id"]})
        retrieved = (await client.until("conversation.item.retrieved"))["item"]
    assert truncated["audio_end_ms"] == 600
    # the words of the first 600 ms played, by their share of the whole reply
    words = whole.split()
    kept = round(len(words) * 600 / whole_ms)
    assert 0 < kept < len(words)
    assert retrieved["content"][0]["transcript"] == " ".join(words[:kept])
    assert emulator_item(emulator, item["id"])["content"][0]["_audio_ms"] == 600


async def test_a_truncate_while_the_reply_streams_cuts_its_words_and_stops_its_audio(
    emulator: Emulator,
) -> None:
    async with raw_session(
        emulator,
        query={"token_ms": 200},  # a reply the model is still producing
        output_modalities=["audio"],
        audio={"input": {"turn_detection": None}},
    ) as client:
        said = "one two three four five six seven eight nine ten"
        await ask(client, said)
        for _ in range(3):  # three words and their audio have arrived
            delta = await client.until("response.output_audio.delta")
        item_id = delta["item_id"]
        await client.send(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": 300,
            }
        )
        truncated = await client.until("conversation.item.truncated")
        cut_at = len(client.events)
        done = await client.until("response.done")
    assert truncated["audio_end_ms"] == 300
    after = client.types()[cut_at:]
    assert "response.output_audio.delta" not in after
    full = f'You said: "{said}".'
    assert audio_of(client.events).size < 0.5 * synthesize(full).size
    # the words of the first 300 ms, by their share of what was sent, and nothing after
    transcript = client.first("response.output_audio_transcript.done")["transcript"]
    words = transcript.split()
    assert 0 < len(words) < len(full.split()) and full.split()[: len(words)] == words
    assert done["response"]["status"] == "completed"
    assert done["response"]["output"][0]["content"][0]["transcript"] == transcript
    assert emulator_item(emulator, item_id)["content"][0]["_audio_ms"] == 300


async def test_the_plugin_holds_the_callers_words_once(emulator: Emulator) -> None:
    async with realtime_session(emulator, listening=True) as sess:
        events = ServerEvents(sess)
        say(sess, "hello there")
        added = await events.wait_for("conversation.item.added", item__role="user")
        await events.wait_for("response.done", timeout=15)
        (message,) = (m for m in sess.chat_ctx.messages() if m.id == added["item"]["id"])
        assert message.content == ["hello there"]
