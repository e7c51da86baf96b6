"""Network truth: what the emulator's network (``LatencyModel``) must cost a handoff, per
provider: each phase's share (``handoff_truths``, ``gemini_handoff_truths``: the truth
``handoff_phases`` gives each phase of a traced handoff) and the totals the benchmark holds its
handoffs against, from t0 = A's tool returning B (``GROUND_TRUTHS``, by the provider's name;
the phases added along the critical path). The benchmark's excess over it is the client's own
cost. What livekit's plugin awaits differs between OpenAI's Realtime API and Gemini Live.

## OpenAI Realtime

Each formula is the critical path of the exchanges livekit-agents 1.8 awaits, leg by leg
(R = RTT, c = connect round trips, i = server time per created item, cr = ``created_ms``).

Agent level (A's tool returns B; B's ``on_enter`` calls ``generate_reply``):

- every mode first syncs the tool's output to A's session: ``function_call_output`` create,
  awaited by the handoff (R + i);
- a tool output asking for a reply (``return B, "Transferring you."``): A answers it before
  its drain ends, ``response.create`` to ``response.done`` (R + cr + ft + (n - 1) t for its n
  deltas), then B starts;
- reused: B's ``_update_session`` diffs B's context against the session's: copied lacks the
  pending call and output, empty lacks everything; either way deletes, one pipelined round
  trip (deletes cost no server time) -> on_enter; then ``response.create`` (R + cr);
- fresh + copied: B's new session connects (c R), then creates B's 2H + 1 items, acked in one
  pipelined round trip (R + n i) -> on_enter; then R + cr;
- fresh + empty: nothing to sync, so on_enter follows the tool sync at once; the reply waits
  for the connect (c R), the session update and the response (R + cr).

Each leg is a phase of the handoff (``handoff_truths``, which ``handoff_phases``
gives each phase of a traced handoff as its truth); the agent level's totals are those phases
added along the critical path. Session level (upstream's test: ``_update_session`` then the
question and a reply) and the cascaded baseline (Chat Completions on the LLM's pooled
connection) are simpler; see below.

## Gemini Live

What livekit's google plugin (1.8.9) awaits on the emulator's network, leg by leg.

Unlike OpenAI's Realtime API, the Live API acknowledges no conversation item: the plugin's
``update_instructions``, ``update_chat_ctx`` and ``update_tools`` only queue messages
(realtime_api.py), so nothing of a session update is awaited. What is:

- reused (B has A's tool objects, so livekit keeps the session): on_enter at once; B's
  ``generate_reply`` sends its turn and the generation starts with the first content,
  R + ``created_ms`` + ``first_token_ms`` later. The session keeps its system instruction (A's):
  the plugin sends B's as a model turn on the Gemini API, and the server keeps the history, so
  there is no "empty" context on reuse;
- fresh: A's session is closed first, awaited through the websocket's closing handshake (R),
  then on_enter; B's session connects (``connect_rtts`` R) and sets up (``setup`` ->
  ``setupComplete``, R) before its queued turns leave, then R + ``created_ms`` +
  ``first_token_ms`` to the first content. A copied context is sent unacknowledged after the
  setup, so copied and empty cost the same.

Measured with the emulator (``tests/analysis/test_gemini_truth.py``): reused at R = 100/200 ms gave
on_enter ~10 ms, the generation at 120/213 ms; fresh gave on_enter 145/274 ms, the
generation 660/1283 ms (6 R and livekit's own ~60 ms).
"""

from __future__ import annotations

from typing import Protocol

from ..emulator.latency import LatencyModel
from ..errors import NotebookAgentsError
from ..trace import Trace


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


class LatencyArgumentError(NotebookAgentsError, TypeError):
    """A ``latency=`` that is not a ``LatencyModel`` (the phases, the timeline and waterfall
    views take the emulator's network as one): the message shows the one to pass."""


def network(latency: object) -> LatencyModel | None:
    """``latency`` as the phases take it (None: no truth), or a ``LatencyArgumentError`` (a
    ``TypeError``) naming the fix."""
    if latency is None or isinstance(latency, LatencyModel):
        return latency
    hint = f"LatencyModel(rtt_ms={latency})" if isinstance(latency, int | float) else "one"
    raise LatencyArgumentError(
        "latency is the emulator's network the agents' models asked for, a LatencyModel: "
        f"pass {hint} (from notebook_agents import LatencyModel), not {latency!r}"
    )


class GroundTruth(Protocol):
    """A provider's ``ground_truth``: ``(handoff_ms, reply_ms)`` of a handoff, or None."""

    def __call__(
        self,
        level: str,
        session: str,
        context: str,
        history_turns: int,
        latency: LatencyModel,
        *,
        items: int | None = None,
        tool_reply: int | None = None,
    ) -> tuple[float, float] | None: ...


def openai_ground_truth(
    level: str,
    session: str,
    context: str,
    history_turns: int,
    latency: LatencyModel,
    *,
    items: int | None = None,
    tool_reply: int | None = None,
) -> tuple[float, float] | None:
    """``(handoff_ms, reply_ms)`` the emulator must impose on OpenAI's Realtime API, or None
    if no formula applies. ``items``: the conversation items B's context carried, as a trace
    counts them (your agents); None: the bench's pair, A's history and the request to
    transfer (2H + 1). ``tool_reply``: the deltas of A's reply to its handing-off tool's
    output, when the output asked for one (None: it did not)."""
    seconds = _openai_ground_truth_s(
        level, session, context, history_turns, latency, items, tool_reply
    )
    if seconds is None:
        return None
    # rounded: float seconds turned back into ms must compare equal to the formula in RTTs
    return round(seconds[0] * 1000, 9), round(seconds[1] * 1000, 9)


def _openai_ground_truth_s(
    level: str,
    session: str,
    context: str,
    turns: int,
    net: LatencyModel,
    items: int | None,
    tool_reply: int | None,
) -> tuple[float, float] | None:
    """The legs above, each one of the emulator's own exchange costs (``LatencyModel``)."""
    if level == "agent" and session in ("reused", "fresh"):
        # A's context (H turns and the request to transfer), copied without the pending call
        n = 2 * turns + 1 if items is None else items
        leg = handoff_truths(session, context, n, net, tool_reply=tool_reply)
        connect = leg.get("connect", 0.0)
        drained = leg["drain"] + leg["tool_reply"]
        updated = drained + (connect if connect_awaited(session, context) else 0.0)
        handoff = updated + leg["session_update"]
        # the reply is requested once on_enter asked and the session is connected
        return handoff, max(handoff, drained + connect) + leg["reply_created"]
    if level == "session":
        question = net.item_ack_s()
        if session == "reused":
            handoff = 0.0 if context == "copied" else net.round_trip_s()
            return handoff, handoff + question + net.response_created_s()
        if context == "copied":
            handoff = net.connect_s() + net.item_ack_s(2 * turns)
            return handoff, handoff + question + net.response_created_s()
        return 0.0, net.connect_s() + question + net.response_created_s()
    if level == "cascaded":
        return 0.0, net.http_first_byte_s(new_connection=False)
    return None


def gemini_ground_truth(
    level: str,
    session: str,
    context: str,
    history_turns: int,
    latency: LatencyModel,
    *,
    items: int | None = None,
    tool_reply: int | None = None,
) -> tuple[float, float] | None:
    """``(handoff_ms, reply_ms)`` the emulator must impose on a Gemini handoff at the agent
    level (t0 -> B's on_enter, t0 -> B's generation), or None if no formula applies. The
    signature is ``openai_ground_truth``'s; neither the history nor B's ``items`` change
    anything (no acks), nor the model's own reply to the tool's output (``tool_reply``: the
    handoff does not await it)."""
    del history_turns, items, tool_reply
    if level != "agent" or session not in ("reused", "fresh"):
        return None
    leg = gemini_handoff_truths(session, context, 0, latency)
    handoff = leg["close"]
    reply = handoff + leg.get("connect", 0.0) + leg["reply_created"]
    return round(handoff * 1000, 9), round(reply * 1000, 9)


GROUND_TRUTHS: dict[str, GroundTruth] = {
    "openai": openai_ground_truth,
    "gemini": gemini_ground_truth,
}
"""each provider's ``ground_truth``, by the name ``--provider`` takes"""
