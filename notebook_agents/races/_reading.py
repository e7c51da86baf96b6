"""What the detectors read of a race run: handoffs, tool calls, replies and livekit's problems."""

from __future__ import annotations

from ..trace import TraceEvent
from .case import LoggedProblem, RaceMark, RaceRun


def handoffs_to(run: RaceRun, agent: str, after: float = 0.0) -> list[TraceEvent]:
    return [e for e in run.trace.of_kind("handoff") if e.data["to"] == agent and e.t >= after]


def tool_outputs(run: RaceRun, name: str) -> list[TraceEvent]:
    return [e for e in run.trace.of_kind("tool_output") if e.data.get("name") == name]


def problems_saying(run: RaceRun, *phrases: str) -> list[LoggedProblem]:
    return [p for p in run.problems if any(phrase in p.message for phrase in phrases)]


def described(event: TraceEvent) -> str:
    """An event as evidence: its time, kind, agent and the data that tells it apart."""
    keys = ("name", "output", "text", "from", "to", "session", "message")
    shown = ", ".join(f"{k}={event.data[k]!r}" for k in keys if k in event.data)
    return f"t={event.t:.3f}s #{event.seq} {event.kind} [{event.agent}] {shown}"


def said(problem: LoggedProblem) -> str:
    return f"t={problem.t:.3f}s livekit {problem.level}: {problem.message}"


def mark(event: TraceEvent, label: str, detail: str = "", race: bool = True) -> RaceMark:
    """A race mark at ``event``, in its agent's lane; its hover text the event as evidence."""
    return RaceMark(event.t, event.agent or "", label, detail or described(event), race)


def mark_said(problem: LoggedProblem, agent: str, label: str) -> RaceMark:
    """A race mark where livekit logged ``problem``, in ``agent``'s lane (a log names none)."""
    return RaceMark(problem.t, agent, label, said(problem))


def in_time_order(problems: list[LoggedProblem], events: list[TraceEvent]) -> tuple[str, ...]:
    """livekit's problems and the trace's events as evidence, the earliest first."""
    lines = [(p.t, said(p)) for p in problems] + [(e.t, described(e)) for e in events]
    return tuple(line for _, line in sorted(lines, key=lambda pair: pair[0]))
