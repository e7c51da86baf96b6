"""A moment of a trace that something's verdict rests on, for the timeline to mark: the views
draw it without knowing what made it (the race lab's verdicts make them today)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimelineMark:
    """A moment of a trace marked on the timeline (``TimelineView(trace, marks=...)``)."""

    t: float
    agent: str
    """the lane it is drawn in"""
    label: str
    """a few words on its chip: ``"hand-back refused"``"""
    detail: str = ""
    """its hover text: the evidence of that moment"""
    problem: bool = True
    """True: where the problem shows; False: what shows it did not happen"""
