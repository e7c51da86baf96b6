"""PLACEHOLDER (the vs-room branch replaces it): the offline stand-in of a VideoSDK room."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from videosdk.agents.room.output_stream import CustomAudioStreamTrack
from videosdk.agents.transports.base import BaseTransportHandler


class OfflineRoom(BaseTransportHandler):
    def __init__(self, loop: Any, pipeline: Any) -> None:
        super().__init__(loop, pipeline)
        self._speaker: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        self.audio_track = CustomAudioStreamTrack(self.loop)
        self._speaker = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        while True:
            await self.audio_track.recv()

    async def disconnect(self) -> None:
        await self.cleanup()

    async def leave(self) -> None:
        await self.cleanup()

    async def wait_for_participant(self, participant_id: str | None = None) -> str:
        return participant_id or "caller"

    async def publish_to_pubsub(self, pubsub_config: Any) -> None:
        return None

    async def cleanup(self) -> None:
        if self._speaker is not None:
            self._speaker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._speaker
            self._speaker = None
