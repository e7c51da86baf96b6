"""What a realtime session's own protocol says of the model's side: which server session it
is, and which of its settings the model refused.

The OpenAI plugin emits each client event it sends (``openai_client_event_queued``) and each
server event it receives (``openai_server_event_received``). Three kinds matter here:
``session.created`` names the server's session (where a ``ModelServer`` finds its
conversation); a ``session.update`` is answered by ``session.updated`` or by an ``error``
carrying its ``event_id``, in the order sent. livekit only logs a refused update and goes on as
if it applied: the session then runs without what it set (the agent's instructions, its tools,
...) until an update setting the same is accepted; ``lacking`` says what it runs without.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .tap import Handler


class RealtimeProtocol:
    """One realtime session's server session id and refused settings; fed on its thread."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        """the server's id of the session (``session.created``), once it said it"""
        self.lacking: dict[str, None] = {}
        """the settings the session runs without: a refused update set them, none since"""
        self.refused: dict[str, tuple[str, ...]] = {}
        """each refused update's ``event_id`` -> the settings it set"""
        self._sent: deque[tuple[str | None, tuple[str, ...]]] = deque()
        """updates sent and not answered yet: their ``event_id`` and the settings they set"""

    def handlers(self) -> dict[str, Handler]:
        """The realtime session's events to listen to, and their handlers."""
        return {
            "openai_client_event_queued": self._sending,
            "openai_server_event_received": self._received,
        }

    def _sending(self, event: dict[str, Any]) -> None:
        if event.get("type") == "session.update":
            settings = tuple(name for name in event.get("session") or {} if name != "type")
            self._sent.append((event.get("event_id"), settings))

    def _received(self, event: dict[str, Any]) -> None:
        kind = event.get("type")  # every server event passes here: one lookup for most
        if kind == "session.updated":
            if self._sent:  # answers come in the order the updates were sent
                _, settings = self._sent.popleft()
                for name in settings:
                    self.lacking.pop(name, None)
        elif kind == "error":
            self._refuse((event.get("error") or {}).get("event_id"))
        elif kind == "session.created":  # again after a reconnection: a new server session
            # (the plugin sends it every setting again; their answers settle ``lacking``)
            self.session_id = (event.get("session") or {}).get("id")

    def _refuse(self, event_id: str | None) -> None:
        for sent in self._sent:
            if event_id is not None and sent[0] == event_id:
                self._sent.remove(sent)
                self.lacking.update(dict.fromkeys(sent[1]))
                self.refused[event_id] = sent[1]
                return
