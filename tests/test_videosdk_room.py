"""A VideoSDK session in the offline room: a spoken user turn is heard and answered aloud.

Real parts: videosdk's ``AgentSession`` and cascaded ``Pipeline`` with the OpenAI plugins as a
user writes them (no arguments: ``OPENAI_BASE_URL`` points them at the emulator on loopback),
the agent's real audio track read in real time by the room.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytest.importorskip("videosdk.agents", reason="the videosdk extra is not installed")

from videosdk.agents import Agent, AgentSession, JobContext, Pipeline, RoomOptions
from videosdk.agents.event_bus import get_current_event_bus
from videosdk.agents.job import (
    _enter_session_scope,
    _exit_session_scope,
    _reset_current_job_context,
    _set_current_job_context,
)
from videosdk.plugins.openai import OpenAILLM, OpenAISTT, OpenAITTS

from notebook_agents.emulator import Emulator
from notebook_agents.runner.errors import AudioError
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.videosdk.room import OfflineRoom

from .conftest import API_KEY

TIMEOUT_S = 60.0
"""for what takes seconds unloaded: a turn heard, answered and played"""
QUIET = ("idle", "listening")


class Receptionist(Agent):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(instructions="You are the receptionist of a dental clinic.")

    async def on_enter(self) -> None:
        pass

    async def on_exit(self) -> None:
        pass


@dataclass
class Heard:
    """What the session said on its bus and its state events, in order."""

    states: list[tuple[str, str]] = field(default_factory=list)
    user_transcripts: list[dict[str, Any]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def agent(self) -> list[str]:
        """The agent's states so far."""
        return [state for who, state in self.states if who == "agent"]

    def state(self, who: str) -> Any:
        def on(data: dict[str, Any]) -> None:
            self.states.append((who, data["state"]))
            self.changed.set()

        return on

    def user_transcript(self, data: dict[str, Any]) -> None:
        self.user_transcripts.append(data)
        self.changed.set()

    async def until(self, done: Any) -> None:
        async with asyncio.timeout(TIMEOUT_S):
            while not done():
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
def openai_env(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugins' defaults reach the emulator, as the bench sets them per trial."""
    monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url())
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    yield


@contextlib.asynccontextmanager
async def job() -> AsyncIterator[OfflineRoom]:
    """The minimum of videosdk's WorkerJob direct mode: the current job context and a fresh
    session scope (metrics collector, event bus) around the session, its room offline."""
    loop = asyncio.get_running_loop()
    ctx = JobContext(room_options=RoomOptions(name="offline"), loop=loop)
    context_token = _set_current_job_context(ctx)
    scope_token = _enter_session_scope()
    room = OfflineRoom(loop)
    ctx.room = room
    try:
        yield room
    finally:
        await ctx.shutdown()
        _exit_session_scope(scope_token)
        _reset_current_job_context(context_token)


async def test_a_spoken_turn_is_transcribed_and_answered_aloud(openai_env: None) -> None:
    async with job() as room:
        pipeline = Pipeline(stt=OpenAISTT(), llm=OpenAILLM(), tts=OpenAITTS())
        await room.connect()  # what JobContext.connect does with a room it built
        pipeline._set_loop_and_audio_track(asyncio.get_running_loop(), room.audio_track)
        session = AgentSession(agent=Receptionist(), pipeline=pipeline)
        heard = Heard()
        session.on("agent_state_changed", heard.state("agent"))
        get_current_event_bus().on("USER_TRANSCRIPT_ADDED", heard.user_transcript)
        await session.start()

        await room.speak(synthesize("what is two plus three").tobytes(), SAMPLE_RATE)
        await heard.until(lambda: heard.user_transcripts)
        assert heard.user_transcripts[0] == {"text": "what is 2 plus 3", "type": "final"}

        reply = await asyncio.wait_for(room.stretch_played(0), TIMEOUT_S)
        assert np.abs(reply.pcm).max() > 1000  # speech, not a click
        assert reply.ended - reply.began > 0.5
        # the agent leaves "speaking" only once the room has read its audio out
        await heard.until(lambda: heard.agent[heard.agent.index("speaking") :][-1] in QUIET)
        assert heard.agent.index("thinking") < heard.agent.index("speaking")
        await session.close()
    assert room.audio_track.readyState == "ended"
    current = asyncio.current_task()
    assert [task for task in asyncio.all_tasks() if task is not current] == []


def tone(seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)


async def test_the_room_reads_the_agents_track_and_keeps_each_stretch_it_played() -> None:
    room = OfflineRoom(asyncio.get_running_loop())
    await room.connect()
    rate = room.rate
    pause = np.zeros(int(0.8 * rate), np.int16)  # longer than a pause within speech
    said = np.concatenate([tone(0.3, rate), pause, tone(0.4, rate)])
    await room.audio_track.add_new_bytes(said.tobytes())
    first, second = await asyncio.wait_for(
        asyncio.gather(room.stretch_played(0), room.stretch_played(1)), TIMEOUT_S
    )
    assert first.pcm.size == int(0.3 * rate) and second.pcm.size == int(0.4 * rate)
    assert second.began > first.ended
    assert np.array_equal(room.pcm, np.concatenate([first.pcm, second.pcm]))
    await room.disconnect()
    assert room.audio_track.readyState == "ended"
    current = asyncio.current_task()
    assert [task for task in asyncio.all_tasks() if task is not current] == []


async def test_speaking_into_a_room_with_no_pipeline_or_with_broken_audio_says_how() -> None:
    room = OfflineRoom(asyncio.get_running_loop())
    with pytest.raises(RuntimeError, match="create the AgentSession's Pipeline"):
        await room.speak(synthesize("hello").tobytes(), SAMPLE_RATE)
    room.pipeline = object()
    with pytest.raises(AudioError, match="not whole int16 samples"):
        await room.speak(b"abc", SAMPLE_RATE)
    with pytest.raises(AudioError, match="sample_rate=0 is no sample rate"):
        await room.speak(b"ab", 0)
