"""The benchmark's scenario: agent A talks with the user for a while, then is asked to hand
off; its tool returns B and B's ``on_enter`` replies. Its words (the question, the request to
transfer, the pair's instructions), the history A is given.

The levels that run it: ``session_trial`` (upstream's bare realtime session) and
``agents_trial`` (a real ``AgentSession``: your agents or the bench's own pair).
"""

from __future__ import annotations

from livekit.agents import llm

QUESTION = "What is 2 + 2?"
HANDOFF_REQUEST = "Please transfer to the specialist."
A_INSTRUCTIONS = "You are the receptionist. You route callers."
B_INSTRUCTIONS = "You are the specialist. Answer in one sentence."


def history(turns: int) -> llm.ChatContext:
    """``turns`` user/assistant exchanges, as if A had talked with the user that long."""
    ctx = llm.ChatContext()
    for i in range(turns):
        ctx.add_message(role="user", content=f"Tell me fact number {i + 1}.")
        ctx.add_message(role="assistant", content=f"Fact {i + 1}: {i * 7} is interesting.")
    return ctx
