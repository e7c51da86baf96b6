"""The offline VideoSDK room: it reads the agent's real audio track in real time and keeps
what it played; the caller's speech goes in checked. A spoken turn through a whole session:
``test_videosdk_sessions.py``."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from notebook_agents.runner.errors import AudioError
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.videosdk.room import OfflineRoom

TIMEOUT_S = 60.0
"""for what takes seconds unloaded: a turn heard, answered and played"""


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
    assert len(repr(room.played)) < 200  # when each began and ended, not its samples
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
