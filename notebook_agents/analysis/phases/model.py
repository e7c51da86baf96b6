"""Where a wait goes: one turn's or one handoff's wait split into phases on the trace's clock,
each beside livekit's own figure for it and, against the emulator, the network's share of it.

Engine side: the phase splitters fill these in from a trace's events and livekit's spans; the
waterfall view, ``TraceAnalysis``'s table and the bench read them and compute nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

WaitKind = Literal["turn", "handoff"]

E2E_LATENCY = "lk.e2e_latency"
"""livekit's own figure for a turn's whole wait, among its ``attributes``"""


@dataclass(frozen=True, slots=True)
class Phase:
    """One step of a wait, from ``start`` to ``end`` (trace seconds).

    Phases on the critical path (``critical``) follow one another and are what the wait is
    made of; the others ran beside them (a transcript finishing while the end of turn is
    still being decided) and are shown, not added up.
    """

    name: str
    """what happened in it, as the views label it (``end_of_turn``, ``llm_first_token``...)"""
    start: float
    end: float
    critical: bool = True
    livekit: float | None = None
    """livekit's own figure for this phase in seconds, where livekit measures one"""
    livekit_name: str | None = None
    """where livekit's figure comes from (``lk.end_of_turn_delay``, ``ttft``...)"""
    truth: float | None = None
    """the network's share in seconds, from the emulator's ``LatencyModel`` (None: no truth)"""
    note: str = ""
    """why it took this long when a default dominates, and how to change it"""

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def client(self) -> float | None:
        """The phase beyond the network's share: the client's own time (None without truth)."""
        return None if self.truth is None else self.seconds - self.truth


@dataclass(frozen=True, slots=True)
class Breakdown:
    """One wait (a turn's or a handoff's) from ``start`` to ``end`` and the phases it took."""

    kind: WaitKind
    label: str
    """how the views title it: ``"turn 2 · spoken"``, ``"Greeter → Weather · reused+copied"``"""
    agent: str
    """the agent that answered (a handoff's new agent)"""
    start: float
    """when the wait began: the caller's speech ended (spoken: livekit's
    ``stopped_speaking_at``, where ``lk.e2e_latency`` starts; a realtime model's server
    ``speech_stopped``), the text reached the session (typed: its message's ``created_at``),
    the handoff began. Defined once, in ``analysis`` (``speech_ended_at``, ``text_sent_at``),
    which ``TraceAnalysis.speech`` uses too"""
    end: float
    """when it ended: the first audio out of the speaker, or the first text without audio
    (the agent's state turning ``speaking``: livekit sets it on the first frame or text)"""
    phases: tuple[Phase, ...] = ()
    speech_id: str | None = None
    """livekit's ``lk.speech_id`` of the reply, joining spans, metrics and events"""
    mode: str | None = None
    """a handoff's mode as it happened (``reused+copied``...); None for a turn"""
    spoken: bool = False
    attributes: dict[str, float] = field(default_factory=dict)
    """livekit's own totals for the wait (``e2e_latency``...), for comparison"""

    @property
    def wait(self) -> float:
        return self.end - self.start

    @property
    def livekit(self) -> float | None:
        """livekit's own figure for the whole wait (its ``lk.e2e_latency``), where it has one."""
        return self.attributes.get(E2E_LATENCY)

    @property
    def unexplained(self) -> float:
        """The wait not covered by critical phases: shown as its own row, never hidden."""
        return self.wait - sum(p.seconds for p in self.phases if p.critical)
