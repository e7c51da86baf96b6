"""The network's share of each phase of a handoff on the emulator (``LatencyModel``): the
truth ``handoff_phases`` gives each phase, and that the bench adds up along the critical path
into its totals (``bench.truth``, where each leg's formula is explained)."""

from __future__ import annotations

from typing import Protocol

from ..emulator.latency import LatencyModel


class PhaseTruths(Protocol):
    """A provider's truth of each handoff phase, as ``handoff_truths`` gives OpenAI's."""

    def __call__(
        self, session: str, context: str, items: int, net: LatencyModel, *, tool: bool = True
    ) -> dict[str, float]: ...


def handoff_truths(
    session: str, context: str, items: int, net: LatencyModel, *, tool: bool = True
) -> dict[str, float]:
    """The network's share of each phase of an agent handing off to another (seconds), by
    the phases' names in ``handoff_phases``: ``items`` are the new agent's context items a
    fresh session creates; ``tool``: a tool's output handed off (synced before the drain ends).
    """
    realtime = session in ("reused", "fresh")
    truths = dict.fromkeys(
        ("tool_return", "on_exit", "close", "on_enter", "reply_request", "playout"), 0.0
    )
    truths["drain"] = net.item_ack_s() if realtime and tool else 0.0
    if session == "fresh":
        truths["connect"] = net.connect_s()
    if session == "reused":
        # the new context diffed against the session's: deletes, one pipelined round trip
        truths["session_update"] = net.round_trip_s()
    elif session == "fresh" and context == "copied":
        truths["session_update"] = net.item_ack_s(items)  # created after the connect
    else:
        truths["session_update"] = 0.0  # nothing awaited: sent with the reply's request
    if realtime:
        truths["reply_created"] = net.response_created_s()
        truths["first_text"] = truths["first_audio"] = net.first_token_ms / 1000.0
    else:  # a chat model's request on its pooled connection, to its first chunk
        truths["first_text"] = net.http_first_byte_s(new_connection=False)
    return truths


def connect_awaited(session: str, context: str) -> bool:
    """Whether the new agent's session update waits for a fresh session's connect (it has
    items to create there); else the connect runs beside it, until the reply's request."""
    return session == "fresh" and context == "copied"


def network(latency: object) -> LatencyModel | None:
    """``latency`` as the phases take it (None: no truth), or a ``TypeError`` naming the fix."""
    if latency is None or isinstance(latency, LatencyModel):
        return latency
    hint = f"LatencyModel(rtt_ms={latency})" if isinstance(latency, int | float) else "one"
    raise TypeError(
        "latency is the emulator's network the agents' models asked for, a LatencyModel: "
        f"pass {hint} (from notebook_agents import LatencyModel), not {latency!r}"
    )
