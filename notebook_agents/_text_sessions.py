"""Turn handling for a session driven by code, not by audio (the bench's trials, the races)."""

from __future__ import annotations

from typing import Any

from livekit.agents import llm


def text_turn_handling(model: Any) -> dict[str, Any]:
    """``AgentSession`` keywords for a session whose turns the code drives (no audio in):
    manual turn detection, except on a model whose server detects turns and cannot hand that
    over (Gemini Live's): livekit ignores "manual" there with a warning at every agent's start
    (agent_activity.py ``_resolve_rt_turn_detection_enabled``), and left unset warns that its
    default turn detector has no VAD; "realtime_llm" says what runs, and warns of nothing."""
    mode = "manual"
    if isinstance(model, llm.RealtimeModel):
        caps = model.capabilities
        if caps.turn_detection and not caps.can_disable_turn_detection:
            mode = "realtime_llm"
    return {"turn_handling": {"turn_detection": mode}}
