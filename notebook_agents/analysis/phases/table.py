"""Breakdowns as rows and as a table (text in a terminal, HTML in a notebook): per wait, the
wait itself beside livekit's figure for it, each phase, and what no phase explains."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..._table import ABSENT, Column, Table, number
from .model import Breakdown

WAIT = "wait"
"""the row of a whole wait"""
UNEXPLAINED = "unexplained"
"""the row of what no critical phase covers"""


@dataclass(frozen=True, slots=True)
class PhaseRow:
    """One row: a phase of a wait (or the wait, or its unexplained rest), in milliseconds."""

    label: str
    """the wait's: ``"turn 2 · spoken"``"""
    phase: str
    start: float
    """trace seconds"""
    ms: float
    livekit_ms: float | None
    truth_ms: float | None
    client_ms: float | None
    critical: bool
    """the caller waited on it (False: it ran beside the phases the caller waited on)"""
    note: str


def phase_rows(breakdowns: Iterable[Breakdown]) -> list[PhaseRow]:
    """Each breakdown as its wait's row, its phases' rows in order, then its unexplained."""
    rows: list[PhaseRow] = []
    for b in breakdowns:
        rows.append(
            PhaseRow(
                b.label,
                WAIT,
                b.start,
                b.wait * 1000,
                _ms(b.livekit),
                None,
                None,
                True,
                reconciled(b),
            )
        )
        rows += [
            PhaseRow(
                b.label,
                p.name,
                p.start,
                p.seconds * 1000,
                _ms(p.livekit),
                _ms(p.truth),
                _ms(p.client),
                p.critical,
                p.note,
            )
            for p in b.phases
        ]
        rows.append(
            PhaseRow(
                b.label, UNEXPLAINED, b.start, b.unexplained * 1000, None, None, None, True, ""
            )
        )
    return rows


def reconciled(b: Breakdown) -> str:
    """What the wait runs from and to, and how livekit's ``lk.e2e_latency`` differs."""
    out = "audio" if any(p.name == "first_audio" for p in b.phases) else "text"
    began = "the end of speech" if b.spoken else "the typed text reaching the session"
    said = f"from {began} to the first {out}"
    e2e = b.livekit
    if e2e is None:
        return f"{said}; livekit measured no e2e_latency for it"
    return (
        f"{said}; livekit's e2e_latency runs from the same end of speech to its own stamp of "
        f"the first frame, {(b.wait - e2e) * 1000:.1f} ms before the trace's speaking event"
    )


def phase_table(
    breakdowns: Iterable[Breakdown], title: str = "where the wait went"
) -> Table[PhaseRow]:
    """``phase_rows`` under ``title``, shown as the project's other tables are."""
    return Table(title, _COLUMNS, tuple(phase_rows(breakdowns)))


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _cell(value: float | None) -> str:
    return number(value, 1)


_COLUMNS: tuple[Column[PhaseRow], ...] = (
    Column("label", "turn", lambda r: r.label, "which wait", words=True),
    Column(
        "phase",
        "phase",
        lambda r: r.phase if r.critical else f"  ({r.phase})",
        "what happened; in brackets: ran beside the phases the caller waited on",
        note="(phase): ran beside the phases the caller waited on, not added up",
        words=True,
    ),
    Column("start", "start s", lambda r: f"{r.start:.3f}", "when it began, trace seconds"),
    Column("ms", "ms", lambda r: _cell(r.ms), "how long it took"),
    Column(
        "livekit_ms",
        "livekit ms",
        lambda r: _cell(r.livekit_ms),
        "livekit's own figure for it",
        optional=True,
    ),
    Column(
        "truth_ms", "truth ms", lambda r: _cell(r.truth_ms), "the network's share", optional=True
    ),
    Column(
        "client_ms",
        "client ms",
        lambda r: _cell(r.client_ms),
        "the phase beyond the network's share: the client's own time",
        optional=True,
    ),
    Column(
        "note",
        "note",
        lambda r: r.note or ABSENT,
        "why, and how to change it",
        words=True,
        wrap=True,
    ),
)
