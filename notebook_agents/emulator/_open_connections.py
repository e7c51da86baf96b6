"""The websockets (OpenAI realtime, Gemini Live, LiveKit Inference) a server holds open: what
its agents would lose if it stopped, and what a replaced server waits for before it stops."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from aiohttp import web

C = TypeVar("C")


class Served(Protocol):
    """A websocket being served: the server closes it first when it stops."""

    async def shut_down(self) -> None: ...


class Runs(Served, Protocol):
    """A websocket's session, run until the client or the server ends it."""

    async def run(self) -> None: ...


class OpenConnections(Generic[C]):
    """The connections being served now; used on the server's loop only."""

    def __init__(self) -> None:
        self._open: set[C] = set()
        self._when_none: Callable[[], None] | None = None

    def add(self, connection: C) -> None:
        self._open.add(connection)

    def discard(self, connection: C) -> None:
        self._open.discard(connection)
        self._check()

    def when_none(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once none is open: now if none is, else when the last one closes."""
        self._when_none = callback
        self._check()

    def _check(self) -> None:
        callback = self._when_none
        if callback is not None and not self._open:
            self._when_none = None
            callback()

    def __len__(self) -> int:
        return len(self._open)

    def __iter__(self) -> Iterator[C]:
        return iter(list(self._open))  # a copy: closing one removes it


async def serve(connections: OpenConnections[Served], connection: Runs) -> None:
    """Run ``connection`` until it ends, held among the open ones meanwhile (the server closes
    it first if it stops)."""
    connections.add(connection)
    try:
        await connection.run()
    finally:
        connections.discard(connection)


OPEN_CONNECTIONS_KEY = web.AppKey("open_connections", OpenConnections[Served])
"""every websocket being served (every protocol's): what agents would lose"""


async def close_open_connections(app: web.Application) -> None:
    """On shutdown, say goodbye to connected clients instead of waiting for them to leave."""
    connections = app[OPEN_CONNECTIONS_KEY]
    for connection in list(connections):
        await connection.shut_down()
