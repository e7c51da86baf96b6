"""Ground truth for Gemini Live handoffs: what livekit's google plugin (1.8.9) awaits on the
emulator's network, leg by leg, from t0 = A's tool returning B.

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

Measured with the emulator (``tests/test_gemini_truth.py``): reused at R = 100/200 ms gave
on_enter ~10 ms, the generation at 120/213 ms; fresh gave on_enter 145/274 ms, the
generation 660/1283 ms (6 R and livekit's own ~60 ms).
"""

from __future__ import annotations

from ..analysis.phases.truth import gemini_handoff_truths
from ..emulator.latency import LatencyModel


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
    signature is ``bench.truth.ground_truth``'s; neither the history nor B's ``items`` change
    anything (no acks), nor the model's own reply to the tool's output (``tool_reply``: the
    handoff does not await it)."""
    del history_turns, items, tool_reply
    if level != "agent" or session not in ("reused", "fresh"):
        return None
    leg = gemini_handoff_truths(session, context, 0, latency)
    handoff = leg["close"]
    reply = handoff + leg.get("connect", 0.0) + leg["reply_created"]
    return round(handoff * 1000, 9), round(reply * 1000, 9)
