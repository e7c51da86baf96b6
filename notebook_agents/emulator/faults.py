"""Fault injection, per connection: what to break so clients' failure paths can be exercised."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ._params import DELAY, ParameterError, parse_count, parse_flag, parse_number


@dataclass(frozen=True)
class Faults:
    """Faults for one connection; the defaults break nothing.

    Set as server defaults (``Emulator(faults=...)``) or per connection in the base_url query
    string (``?drop_after=5&error_on=response.create``).
    """

    drop_after: int | None = None
    """drop the socket abruptly after this many client events (HTTP: streamed chunks)"""
    error_on: str | None = None
    """answer every client event of this type with an ``error`` instead of handling it"""
    ack_delay_ms: float = 0.0
    """hold ``conversation.item.added/deleted`` acks this long (past the client's 5 s timeout)"""
    ack_delay_items: frozenset[str] | None = None
    """hold only the acks of items of these types (``function_call_output``); None: all"""
    fail_responses: bool = False
    """end every response with status ``failed`` (HTTP: a 500 error)"""
    fail_first: int = 0
    """end the first N responses of a realtime connection ``failed``, then answer normally"""
    fail_every: int = 0
    """fail every Nth response (the Nth, the 2Nth, ...) counted across the emulator's
    connections with this fault, however many: a model that fails 1 response in N, whichever
    session asks (0: none)"""
    cancel_responses: bool = False
    """end every response with status ``cancelled`` before any content"""

    def __post_init__(self) -> None:
        if self.drop_after is not None:
            parse_count("drop_after", self.drop_after)
        parse_count("fail_first", self.fail_first)
        parse_count("fail_every", self.fail_every)
        parse_number("ack_delay_ms", self.ack_delay_ms, DELAY)

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: Faults | None = None) -> Faults:
        base = base or cls()
        overrides: dict[str, object] = {}
        if "drop_after" in query:
            overrides["drop_after"] = parse_count("drop_after", query["drop_after"])
        if "error_on" in query:
            if not query["error_on"]:
                raise ParameterError(
                    "error_on= needs an event type (e.g. error_on=response.create)"
                )
            overrides["error_on"] = query["error_on"]
        if "ack_delay_ms" in query:
            overrides["ack_delay_ms"] = parse_number("ack_delay_ms", query["ack_delay_ms"], DELAY)
        if "ack_delay_items" in query:
            types = frozenset(t.strip() for t in query["ack_delay_items"].split(",") if t.strip())
            if not types:
                raise ParameterError(
                    "ack_delay_items= needs item types (e.g. ack_delay_items=function_call_output)"
                )
            overrides["ack_delay_items"] = types
        for count in ("fail_first", "fail_every"):
            if count in query:
                overrides[count] = parse_count(count, query[count])
        for flag in ("fail_responses", "cancel_responses"):
            if flag in query:
                overrides[flag] = parse_flag(flag, query[flag])
        return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]

    def delays_ack_of(self, item_type: str | None) -> bool:
        """Whether an ack for an item of ``item_type`` is held back by ``ack_delay_ms``."""
        if self.ack_delay_ms <= 0:
            return False
        return self.ack_delay_items is None or item_type in self.ack_delay_items
