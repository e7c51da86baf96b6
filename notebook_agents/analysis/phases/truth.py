"""The network's share of each phase of a handoff on the emulator (``LatencyModel``): the
truth ``handoff_phases`` gives each phase, and that the bench adds up along the critical path
into its totals (``bench.truth``, where each leg's formula is explained), per provider: what
livekit's plugin awaits differs between OpenAI's Realtime API and Gemini Live."""

from __future__ import annotations

from typing import Protocol

from ...emulator.latency import LatencyModel
from ...trace import Trace


class PhaseTruths(Protocol):
    """A provider's truth of each handoff phase, as ``handoff_truths`` gives OpenAI's."""

    def __call__(
        self,
        session: str,
        context: str,
        items: int,
        net: LatencyModel,
        *,
        tool: bool = True,
        tool_reply: int | None = None,
    ) -> dict[str, float]: ...


def handoff_truths(
    session: str,
    context: str,
    items: int,
    net: LatencyModel,
    *,
    tool: bool = True,
    tool_reply: int | None = None,
) -> dict[str, float]:
    """The network's share of each phase of an agent handing off to another (seconds), by
    the phases' names in ``handoff_phases``: ``items`` are the new agent's context items a
    fresh session creates; ``tool``: a tool's output handed off (synced before the drain ends);
    ``tool_reply``: the deltas of the old agent's reply to that output, when the output asked
    for one (a tool returning ``(agent, "message")``), else None.

    livekit 1.8.9 (``AgentActivity._realtime_generation_task_impl``): an output with
    ``reply_required`` on a model that makes no reply of its own
    (``capabilities.auto_tool_reply_generation`` False, OpenAI's) is answered by the old agent
    before its drain ends: ``response.create`` on its session, awaited to ``response.done``.
    """
    realtime = session in ("reused", "fresh")
    truths = dict.fromkeys(
        ("tool_return", "on_exit", "close", "on_enter", "reply_request", "playout"), 0.0
    )
    truths["drain"] = net.item_ack_s() if realtime and tool else 0.0
    answered = realtime and tool and tool_reply is not None
    truths["tool_reply"] = net.response_s(tool_reply or 0) if answered else 0.0
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


def gemini_handoff_truths(
    session: str,
    context: str,
    items: int,
    net: LatencyModel,
    *,
    tool: bool = True,
    tool_reply: int | None = None,
) -> dict[str, float]:
    """``handoff_truths`` for Gemini Live (``bench.gemini_truth`` explains each leg). The Live
    API acknowledges no item, so neither the context (``context``, ``items``) nor a tool's
    output (``tool``) is awaited; a fresh session waits for the old one's close, then connects
    and sets up (``setup`` -> ``setupComplete``, one more round trip). The model answers a tool
    output by itself (``auto_tool_reply_generation``): the drain does not wait for that reply
    (``tool_reply``), only ``session.run``'s result does, up to 5 s (the tool_reply_race)."""
    del context, items, tool, tool_reply  # none of them changes what the handoff awaits
    truths = dict.fromkeys(
        ("tool_return", "on_exit", "on_enter", "reply_request", "playout", "drain", "tool_reply"),
        0.0,
    )
    truths["session_update"] = 0.0
    truths["close"] = net.round_trip_s() if session == "fresh" else 0.0
    if session == "fresh":
        truths["connect"] = net.connect_s() + net.round_trip_s()
    # no response.created on Gemini: the generation begins with its first content
    truths["reply_created"] = net.first_token_s()
    truths["first_text"] = truths["first_audio"] = 0.0
    return truths


GEMINI_PROVIDERS = frozenset({"Gemini", "Vertex AI"})
"""what livekit's google RealtimeModel names its provider (``RealtimeModel.provider``)"""


def truths_of(trace: Trace) -> PhaseTruths:
    """The truths for the provider ``trace``'s realtime model ran on, as livekit's usage
    reports name it: Gemini Live's, else OpenAI's Realtime API's (the emulator's other)."""
    providers = {
        usage["provider"]
        for event in trace.of_kind("metrics")
        for usage in event.data.get("usage", ())
    }
    return gemini_handoff_truths if providers & GEMINI_PROVIDERS else handoff_truths


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
