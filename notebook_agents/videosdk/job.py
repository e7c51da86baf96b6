"""The job context a VideoSDK entrypoint gets offline: its room is ``OfflineRoom``.

VideoSDK's ``JobContext.connect`` joins a VideoSDK room (or serves a websocket or WebRTC
transport on every interface); offline there is no room to join, so ``connect`` makes the room's
stand-in instead and wires its agent audio track into the pipeline as VideoSDK's own rooms
are wired. Everything else is VideoSDK's: ``run_until_shutdown``, shutdown callbacks, the
session's registration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from videosdk.agents import AgentSession, JobContext, RoomOptions

from ._videosdk_internals import wire_audio_track
from .room import OfflineRoom

_OFFLINE_ROOM_ID = "notebook-agents-offline"


class OfflineJobContext(JobContext):
    """A ``JobContext`` whose room is the notebook's (``OfflineRoom``); ``on_session`` is
    called with each ``AgentSession`` made in the job, as it is made."""

    def __init__(self, *, on_session: Callable[[AgentSession], None], loop: Any) -> None:
        options = RoomOptions(room_id=_OFFLINE_ROOM_ID, name="notebook", playground=False)
        super().__init__(room_options=options, loop=loop)
        self._on_session = on_session
        self.offline_room: OfflineRoom | None = None
        """the room ``connect`` made (VideoSDK forgets its ``room`` at shutdown)"""

    async def connect(self) -> None:
        """Make the room and give the pipeline its audio track; no network."""
        if self.room is not None:  # type: ignore[has-type]  # VideoSDK's, set in __init__
            return
        room = OfflineRoom(self._loop, self._pipeline)
        self.room = self.offline_room = room
        await room.connect()
        if self._pipeline is not None:
            wire_audio_track(self, self._pipeline, room.audio_track)

    def add_shutdown_callback(self, callback: Callable[[], Any]) -> None:
        # every AgentSession made in a job registers its close here, in its __init__: the
        # earliest moment the runner can attach a trace, before the entrypoint starts it
        super().add_shutdown_callback(callback)
        session = getattr(callback, "__self__", None)
        if isinstance(session, AgentSession):
            self._on_session(session)


class QuietOfflineAnalytics(logging.Filter):
    """Drops VideoSDK's complaint that it cannot send a turn's analytics: offline there is no
    VideoSDK session to report to (its analytics client posts only with a session id)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "No session ID" not in record.getMessage()
