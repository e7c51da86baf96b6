"""A benchmark trial's terms: what it is asked (``TrialSpec``), what it measured (``Timings``)
and what its handoff did (``Ran``), or why it could not be measured (``TrialFailed``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis import Breakdown
from ..emulator import LatencyModel
from ..errors import NotebookAgentsError
from ..modes import ContextMode, SessionMode
from .providers import Endpoint
from .results import Level, Modality, PhaseTiming
from .your_agents import AgentsUnderTest


@dataclass
class TrialSpec:
    level: Level
    session: SessionMode
    context: ContextMode
    history_turns: int
    endpoint: Endpoint
    """where the models connect (the emulator with the trial's network, or a foreign URL)"""
    model: str | None = None
    """the realtime model's name; None: the provider's default"""
    chat_model: str = "gpt-4o-mini"
    traced: bool = False
    modality: Modality = "text"
    phases: bool = False
    """split the handoff into its phases: a Trace attached, livekit's spans captured"""
    latency: LatencyModel | None = None
    """the emulator's network at ``endpoint``: the phases' truths (None: a foreign target)"""
    provider: str = "openai"
    agents: AgentsUnderTest | None = None
    """your agents instead of the bench's own pair (agent level)"""


@dataclass
class Ran:
    """What a trial's handoff did as the trace reads it, where that can differ from what was
    asked: the session and context mode, the items B started with, and why not as asked."""

    session: SessionMode
    context: ContextMode
    items: int
    """the conversation items B's context carried (``handoff_truths``' ``items``)"""
    reason: str | None = None
    tool_reply: int | None = None
    """the deltas of A's reply to its tool's output, which the handoff waited for (a tool
    returning ``(B, "message")`` on OpenAI); None: no such reply (``handoff_truths``')"""


@dataclass
class Timings:
    """Milliseconds from t0; None where the trial has no such moment."""

    handoff_ms: float | None = None
    update_ms: float | None = None
    reply_ms: float | None = None
    first_text_ms: float | None = None
    first_audio_ms: float | None = None
    phases: dict[str, PhaseTiming] = field(default_factory=dict)
    ran: Ran | None = None
    """what the handoff did, as the trace reads it; None: as asked (the session level)"""


class TrialFailed(NotebookAgentsError, RuntimeError):
    """The trial could not be measured; the message is recorded as its reason."""


def phase_timings(breakdown: Breakdown) -> dict[str, PhaseTiming]:
    """A handoff's phases as a trial keeps them, in milliseconds."""

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else seconds * 1000.0

    return {
        phase.name: PhaseTiming(
            ms=phase.seconds * 1000.0,
            truth_ms=ms(phase.truth),
            livekit_ms=ms(phase.livekit),
            critical=phase.critical,
        )
        for phase in breakdown.phases
    }
