"""Ground truth: what a handoff must cost on the emulator's network, per mode, from t0.

Each formula is the critical path of the exchanges livekit-agents 1.8 awaits, leg by leg
(R = RTT, c = connect round trips, i = server time per created item, cr = ``created_ms``).
The benchmark's excess over these is the client's own cost.

Agent level (A's tool returns B; B's ``on_enter`` calls ``generate_reply``):

- every mode first syncs the tool's output to A's session: ``function_call_output`` create,
  awaited by the handoff (R + i);
- reuse: B's ``_update_session`` diffs B's context against the session's: copied lacks the
  pending call and output, empty lacks everything; either way deletes, one pipelined round
  trip (deletes cost no server time) -> on_enter; then ``response.create`` (R + cr);
- fresh + copied: B's new session connects (c R), then creates B's 2H + 1 items, acked in one
  pipelined round trip (R + n i) -> on_enter; then R + cr;
- fresh + empty: nothing to sync, so on_enter follows the tool sync at once; the reply waits
  for the connect (c R), the session update and the response (R + cr).

Session level (upstream's test: ``_update_session`` then the question and a reply) and the
cascaded baseline (Chat Completions on the LLM's pooled connection) are simpler; see below.
"""

from __future__ import annotations

from ..emulator import LatencyModel


def ground_truth(
    level: str, session: str, context: str, history_turns: int, latency: LatencyModel
) -> tuple[float, float] | None:
    """``(handoff_ms, reply_ms)`` the emulator must impose, or None if no formula applies."""
    r, c, i, cr = latency.rtt_ms, latency.connect_rtts, latency.item_ms, latency.created_ms
    if level == "agent":
        sync = r + i
        if session == "reuse":
            handoff = sync + r
            return handoff, handoff + r + cr
        if session == "fresh" and context == "copied":
            handoff = sync + c * r + r + (2 * history_turns + 1) * i
            return handoff, handoff + r + cr
        if session == "fresh":
            return sync, sync + c * r + r + cr
    if level == "session":
        question = r + i  # the question's create, acked
        if session == "reuse":
            handoff = 0.0 if context == "copied" else r
            return handoff, handoff + question + r + cr
        if context == "copied":
            handoff = c * r + r + 2 * history_turns * i
            return handoff, handoff + question + r + cr
        return 0.0, c * r + question + r + cr
    if level == "cascaded":
        return 0.0, r + cr + latency.first_token_ms
    return None
