"""The phases of a handoff by name, in the order they can happen, and what each is: the one
vocabulary the splitter, the bench's results, tables and plots share (as ``modes`` is for the
handoff modes). Free of livekit, so a results file reads without it."""

from __future__ import annotations

HANDOFF_PHASES: dict[str, str] = {
    "tool_return": "the old agent's tool returned the new one, until livekit began the handoff",
    "on_exit": "the old agent's on_exit",
    "drain": "the old agent's speech finishing: its tool's output synced to the model",
    "tool_reply": "the old agent's reply to its tool's output (the tool returned a message "
    "with the agent), requested and awaited to its end before the new agent starts",
    "close": "the old agent's activity closed (a fresh handoff closes its realtime session)",
    "connect": "a fresh realtime session's websocket connecting",
    "session_update": "the new agent's session set up: instructions, tools, context synced",
    "on_enter": "the new agent's on_enter, until it asked for its reply",
    "reply_request": "until the reply's request (response.create) left",
    "reply_created": "the request, until response.created came back",
    "first_text": "response.created, until the reply's first text",
    "first_audio": "response.created, until the reply's first audio",
    "playout": "the first text or audio, until livekit began to play it (the agent speaking)",
}
"""name -> what the phase is, in the order phases can happen"""

PHASE_COLORS: dict[str, str] = {
    # the network's exchanges in strong hues, the client's own steps in greys and pastels
    "tool_return": "#9E9E9E",
    "on_exit": "#CC79A7",
    "drain": "#56B4E9",
    "tool_reply": "#882255",
    "close": "#E0E0E0",
    "connect": "#D55E00",
    "session_update": "#0072B2",
    "on_enter": "#009E73",
    "reply_request": "#BDBDBD",
    "reply_created": "#E69F00",
    "first_text": "#F0E442",
    "first_audio": "#8C564B",
    "playout": "#616161",
}
"""one colour per phase, the same in every phase plot and on the timeline"""
