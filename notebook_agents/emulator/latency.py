"""Injected network latency: the model, precise sleeps, ordered delayed pipes and ground truth.

A connection's latency comes from the server defaults overridden by the base_url query
string (``?rtt_ms=20&connect_rtts=3``), so one emulator serves many network conditions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._params import DELAY, ROUND_TRIPS, Bound, parse_number

T = TypeVar("T")

# asyncio timers overshoot by ~1 ms; the last stretch of a sleep is spun instead.
_SPIN_S = 0.002


async def sleep_until(deadline: float) -> None:
    """Sleep until ``time.perf_counter()`` reaches ``deadline``, to within tens of microseconds."""
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return
        await asyncio.sleep(remaining - _SPIN_S if remaining > _SPIN_S else 0)


async def precise_sleep(seconds: float) -> None:
    """``asyncio.sleep`` without the timer overshoot."""
    if seconds > 0:
        await sleep_until(time.perf_counter() + seconds)


def _parameter(doc: str, *, default: float = 0.0, bound: Bound = DELAY) -> Any:
    """A latency field: ``doc`` is also its command-line help (``notebook-agents emulator``)."""
    return field(default=default, metadata={"bound": bound, "doc": doc})


@dataclass(frozen=True)
class LatencyModel:
    """What one connection's exchanges cost, in milliseconds.

    ``rtt_ms`` delays each direction by half a round trip (order kept, frames in flight
    overlap); ``connect_rtts`` is TCP + TLS + websocket upgrade. The rest is server time.
    """

    rtt_ms: float = _parameter("the network round trip, half each way")
    connect_rtts: float = _parameter(
        "what connecting costs: TCP + TLS + upgrade", default=3.0, bound=ROUND_TRIPS
    )
    item_ms: float = _parameter("processing time of each conversation item before its ack")
    created_ms: float = _parameter("from a response request to response.created leaving")
    first_token_ms: float = _parameter(
        "from response.created to the first content delta (text or audio) or tool call"
    )
    token_ms: float = _parameter(
        "between consecutive content deltas (a spoken reply's words go with their audio)"
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            parse_number(f.name, getattr(self, f.name), f.metadata["bound"])

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: LatencyModel | None = None) -> LatencyModel:
        """``base`` (the server defaults) overridden by the query-string fields it names."""
        base = base or cls()
        overrides = {
            f.name: parse_number(f.name, query[f.name], f.metadata["bound"])
            for f in dataclasses.fields(cls)
            if f.name in query
        }
        return dataclasses.replace(base, **overrides)

    def as_query(self) -> dict[str, float]:
        """Only the fields that differ from the defaults, for building a base_url."""
        default = LatencyModel()
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    @property
    def one_way_s(self) -> float:
        return self.rtt_ms / 2000.0

    # Ground truth: what an exchange must cost the client, measured from the moment it
    # sends (or starts connecting) to the moment it receives, on an idle connection.

    def connect_s(self) -> float:
        """Websocket connect: ``connect_rtts`` round trips."""
        return self.connect_rtts * self.rtt_ms / 1000.0

    def round_trip_s(self) -> float:
        """An exchange that costs the server no time (deletes, a session update)."""
        return self.rtt_ms / 1000.0

    def item_ack_s(self, items: int = 1) -> float:
        """``conversation.item.create`` x ``items`` sent at once -> the last ``item.added``."""
        return (self.rtt_ms + items * self.item_ms) / 1000.0

    def response_created_s(self) -> float:
        """``response.create`` -> ``response.created``."""
        return (self.rtt_ms + self.created_ms) / 1000.0

    def first_token_s(self) -> float:
        """``response.create`` -> the first content delta."""
        return self.response_created_s() + self.first_token_ms / 1000.0

    def response_s(self, tokens: int) -> float:
        """``response.create`` -> ``response.done`` for a reply of ``tokens`` deltas, written
        or spoken (the service sends audio faster than it plays)."""
        return self.first_token_s() + max(tokens - 1, 0) * self.token_ms / 1000.0

    def http_first_byte_s(self, *, new_connection: bool) -> float:
        """Chat Completions request -> the first streamed chunk."""
        connect = self.connect_s() if new_connection else 0.0
        return connect + (self.rtt_ms + self.created_ms + self.first_token_ms) / 1000.0


class DelayedPipe(Generic[T]):
    """Deliver items ``delay_s`` after they were put, in order; pipelined items overlap."""

    def __init__(self, delay_s: float, deliver: Callable[[T], Awaitable[None]]) -> None:
        self._delay_s = delay_s
        self._deliver = deliver
        self._queue: asyncio.Queue[tuple[float, T]] = asyncio.Queue()

    def put(self, item: T) -> None:
        self._queue.put_nowait((time.perf_counter() + self._delay_s, item))

    async def run(self) -> None:
        """Deliver forever; cancel to stop."""
        while True:
            due, item = await self._queue.get()
            await sleep_until(due)
            await self._deliver(item)


def query_value(value: Any) -> str:
    """A value as a query string carries it; integral floats as ints (``20.0`` -> ``"20"``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def query_to_str(query: Mapping[str, Any]) -> str:
    """``{"rtt_ms": 20.0}`` -> ``"rtt_ms=20"``."""
    return "&".join(f"{key}={query_value(value)}" for key, value in query.items())
