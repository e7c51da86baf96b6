"""What the timeline shows, computed once in the kernel as events arrive: the trace's analysis
(lanes, state spans, handoffs, bring-ups, idle gaps), the marks, their colours and labels, and a
legend of what is on show. The widget and the matplotlib figure both draw from it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..analysis import (
    WAITING_STATES,
    BringUp,
    Gap,
    Handoff,
    Opened,
    Speech,
    TraceAnalysis,
    milliseconds,
)
from ..modes import MODE_COLORS, UNKNOWN_MODE
from ..trace import TraceEvent
from ..trace.marks import TimelineMark
from ._text import cut
from .context_table import item_line
from .errors import ViewArgumentError

SKIPPED_KINDS = ("metrics", "user_state")
"""plentiful and not drawn on the timeline (StateView shows the user's state)"""

STATE_COLORS: dict[str, str] = {
    "initializing": "#64748b",
    "idle": "#78716c",
    "listening": "#0369a1",
    "thinking": "#b45309",
    "speaking": "#15803d",
}
"""the agent states' colours, as StateView's badges: white text reads on each (>= 4.5:1) and
each bar stands out from the page of the light and the dark theme (>= 3:1)"""
OTHER_STATE = "#64748b"
"""a state livekit may add later"""
BRING_UP = "#6366f1"
SPEECH_COLORS = {"user": "#0284c7", "agent": "#16a34a"}
"""the bar under a lane while the caller (``user``) or its agent speaks"""
OTHER_MODE = "#777777"
"""a handoff mode the bench has no colour for"""
RACE_KEYS = {"race": "race", "no_race": "no race"}
"""a race mark's legend key and label: where the race shows, or what shows it did not"""
RACE_COLORS = {"race": "#dc2626", "no_race": "#15803d"}
"""a race mark's chip in the figure (the browser takes the theme's error and success colours)"""


USER_ROW, AGENT_ROW, OTHER_ROW = 0, 1, 2
"""a lane's rows of marks, top down: the caller's messages, the agent's, and the rest (tools,
context, errors). A reply and the next message come milliseconds apart when cells run one
after another: in rows of their own neither hides the other"""


@dataclass(frozen=True)
class MarkStyle:
    """How one kind of mark is drawn, in the browser and the figure alike."""

    label: str
    shape: str
    """circle, square, triangle, diamond or cross"""
    color: str
    hollow: bool
    """outlined in ``color``, filled with the page's colour"""
    css: str
    """the mark's classes in the browser"""
    row: int
    """the row of its lane it sits in: ``USER_ROW``, ``AGENT_ROW`` or ``OTHER_ROW``"""


MARK_STYLES: dict[str, MarkStyle] = {
    "user_message": MarkStyle("user", "circle", "#0284c7", False, "na-mark-user_message", USER_ROW),
    "agent_message": MarkStyle(
        "agent", "circle", "#16a34a", False, "na-mark-agent_message", AGENT_ROW
    ),
    "on_enter": MarkStyle(
        "on_enter", "circle", "#16a34a", True, "na-mark-agent_message na-on-enter", AGENT_ROW
    ),
    "tool_call": MarkStyle("tool call", "square", "#d97706", False, "na-mark-tool_call", OTHER_ROW),
    "tool_output": MarkStyle(
        "tool output", "square", "#b45309", True, "na-mark-tool_output", OTHER_ROW
    ),
    "tool_failed": MarkStyle(
        "tool output (failed)",
        "square",
        "#dc2626",
        True,
        "na-mark-tool_output na-failed",
        OTHER_ROW,
    ),
    "context_changed": MarkStyle(
        "context", "triangle", "#7c3aed", False, "na-mark-context_changed", OTHER_ROW
    ),
    "error": MarkStyle("error", "cross", "#dc2626", False, "na-mark-error", OTHER_ROW),
    "context_diverged": MarkStyle(
        "model apart", "diamond", "#be185d", False, "na-mark-context_diverged", OTHER_ROW
    ),
    "context_converged": MarkStyle(
        "model agrees", "diamond", "#15803d", True, "na-mark-context_converged", OTHER_ROW
    ),
    # when the reply spoken over ended (cut, or played out): what livekit made of it, hovered
    "barge_in": MarkStyle("barge-in", "triangle", "#0891b2", True, "na-mark-barge_in", OTHER_ROW),
}
"""every mark the timeline draws, in the legend's order"""


def mark_style(event: TraceEvent) -> str | None:
    """The ``MARK_STYLES`` key ``event`` is drawn with; None: not a mark."""
    if event.kind == "agent_message" and event.data.get("phase") == "on_enter":
        return "on_enter"
    if event.kind == "tool_output" and event.data.get("is_error"):
        return "tool_failed"
    return event.kind if event.kind in MARK_STYLES else None


def state_color(state: str) -> str:
    return STATE_COLORS.get(state, OTHER_STATE)


def mode_color(mode: str) -> str:
    return MODE_COLORS.get(mode, OTHER_MODE)


def mode_text(mode: str) -> str:
    """A mode as the chips write it: ``"reused · copied"``, ``"mode unknown"``."""
    return "mode unknown" if mode == UNKNOWN_MODE else mode.replace("+", " · ")


@functools.cache
def ink(color: str) -> str:
    """Black or white, whichever reads better on ``color`` (WCAG contrast)."""
    return "#000000" if _luminance(color) > 0.179 else "#ffffff"  # equal contrast at 0.179


def _luminance(color: str) -> float:
    channels = [int(color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@dataclass(frozen=True)
class Extent:
    """What a view of a whole trace fits in its width: ``active`` seconds of activity (the time
    outside its idle gaps) and ``gaps`` idle gaps, each drawn a fixed width. Timelines that
    share a time scale each fit the widest of their extents (``widest``)."""

    active: float = 0.0
    gaps: int = 0


def widest(extents: Iterable[Extent]) -> Extent:
    """The extent that holds each of ``extents``: the most activity and the most gaps."""
    found = list(extents)
    return Extent(
        max((e.active for e in found), default=0.0), max((e.gaps for e in found), default=0)
    )


@dataclass(frozen=True)
class Mark:
    """An event drawn as a mark: when, in which lane, with which ``MARK_STYLES`` style."""

    t: float
    lane: int
    style: str


_ORDER = {
    "mark": list(MARK_STYLES),
    "state": list(STATE_COLORS),
    "speech": list(SPEECH_COLORS),
    "mode": list(MODE_COLORS),
    "band": ["bring_up"],
    "race": list(RACE_KEYS),
}
"""the legend's groups in order, each with its known keys in order (unknown ones go last)"""


class TimelineLayout:
    """What the timeline shows, computed as events arrive: the trace's analysis (lanes, state
    spans, handoffs, bring-ups, idle gaps), the marks, and a legend of what is on show.

    ``add`` returns what the browser needs of each event: the parts of the layout it made;
    ``changed`` then names the attributes it changed of ``lanes``, ``gaps``, ``legend`` and
    ``first_t`` (the widget's traits of the same names).
    """

    def __init__(
        self, events: list[TraceEvent] | None = None, started_at: float | None = None
    ) -> None:
        # the trace's clock: the caller's wait as TraceAnalysis defines it
        self.analysis = TraceAnalysis(started_at=started_at)
        self.marks: list[Mark] = []
        self.changed: list[str] = []
        self._legend: dict[tuple[str, str], dict[str, Any]] = {}
        self._speech_sent: list[Speech] = []
        self._phases: dict[int, dict[str, Any]] = {}
        self.race_marks: list[dict[str, Any]] = []
        """``set_race_marks``: each moment a race verdict rests on, as drawn, in time order"""
        for event in events or []:
            self.add(event)

    @property
    def lanes(self) -> list[str]:
        return list(self.analysis.lanes)

    @property
    def first_t(self) -> float | None:
        return self.analysis.start

    @property
    def last_t(self) -> float | None:
        """The last event's time, of any kind: an event not drawn (the caller going away
        after a long silence) still ends an idle gap and the trace."""
        return self.analysis.end

    @property
    def phases(self) -> list[dict[str, Any]]:
        """Each handoff's phases as drawn (``_timeline_phases.handoff_strip``), in time order:
        the handoffs livekit's spans split."""
        return [self._phases[seq] for seq in sorted(self._phases)]

    def set_phases(self, strips: list[dict[str, Any]]) -> bool:
        """Take each handoff's phases as last split; True if they changed. A handoff's chip
        and its legend entry then name the mode that happened (``Breakdown.mode``)."""
        phases = {strip["seq"]: strip for strip in strips}
        if phases == self._phases:
            return False
        self._phases = phases
        for key in [key for key in self._legend if key[0] == "mode"]:
            del self._legend[key]
        for handoff in self.analysis.handoffs:
            if handoff.source is not None:
                mode = self.mode_of(handoff)
                self._show("mode", mode, functools.partial(_mode_key, mode))
        return True

    def set_race_marks(self, marks: Iterable[TimelineMark]) -> None:
        """Mark the moments a race's verdict rests on (``RaceVerdict.marks``), each in its
        agent's lane with its chip, and name them in the legend."""
        for shown in [shown for shown in self._legend if shown[0] == "race"]:
            del self._legend[shown]
        laid = []
        for mark in sorted(marks, key=lambda m: m.t):
            if mark.agent not in self.analysis.lanes:
                raise ViewArgumentError(
                    f"the race mark {mark.label!r} is for {mark.agent!r}, who has no lane on "
                    f"this timeline (lanes: {', '.join(self.analysis.lanes) or 'none yet'}): "
                    "pass the marks of the run whose trace it shows"
                )
            key = "race" if mark.problem else "no_race"
            self._show("race", key, functools.partial(_race_key, key))
            laid.append(_race_mark(self.analysis.lane(mark.agent), key, mark))
        self.race_marks = laid

    def mode_of(self, handoff: Handoff) -> str:
        """The mode ``handoff`` is drawn with: as its phases found it, else as its event says."""
        strip = self._phases.get(handoff.seq)
        return str(strip["mode"]) if strip is not None else handoff.mode

    @property
    def gaps(self) -> list[dict[str, Any]]:
        """The idle stretches the views shorten, each with its labels (long and short) and
        hover text."""
        return [_gap(gap) for gap in self.analysis.gaps]

    @property
    def extent(self) -> Extent:
        """What a view of the whole trace so far fits: its activity and its idle gaps."""
        analysis = self.analysis
        if analysis.start is None or analysis.end is None:
            return Extent()
        idle = sum(gap.seconds for gap in analysis.gaps)
        return Extent(analysis.end - analysis.start - idle, len(analysis.gaps))

    @property
    def legend(self) -> list[dict[str, Any]]:
        """What is on show, each with how it is drawn: marks, agent states, handoff modes and
        the bring-up band, in that order."""
        groups = list(_ORDER)

        def order(key: tuple[str, str]) -> tuple[int, int, str]:
            known = _ORDER[key[0]]
            return (
                groups.index(key[0]),
                known.index(key[1]) if key[1] in known else len(known),
                key[1],
            )

        return [self._legend[key] for key in sorted(self._legend, key=order)]

    def add(self, event: TraceEvent) -> dict[str, Any] | None:
        """Take the next event; None if the browser gets nothing of it."""
        analysis = self.analysis
        before = (len(analysis.lanes), len(analysis.gaps), len(self._legend), analysis.start)
        counts = (len(analysis.spans), len(analysis.handoffs), len(analysis.bring_ups))
        was_open = analysis.opened
        analysis.add(event)
        record = None if event.kind in SKIPPED_KINDS else self._record(event, counts, was_open)
        if speech := self._speech_changed():  # user_state included: speech ends on it
            record = record or {"seq": event.seq, "t": event.t}
            record["speech"] = speech
        after = (len(analysis.lanes), len(analysis.gaps), len(self._legend), analysis.start)
        names = ("lanes", "gaps", "legend", "first_t")
        self.changed = [name for name, b, a in zip(names, before, after, strict=True) if b != a]
        return record

    def _record(
        self, event: TraceEvent, counts: tuple[int, int, int], was_open: Opened | None
    ) -> dict[str, Any]:
        analysis = self.analysis
        record: dict[str, Any] = {"seq": event.seq, "t": event.t}
        style = mark_style(event)
        if style is not None and event.agent:
            lane = analysis.lane(event.agent)
            self.marks.append(Mark(event.t, lane, style))
            self._show("mark", style, lambda: asdict(MARK_STYLES[style]))
            record["mark"] = [lane, style, describe(event)]
        if len(analysis.spans) > counts[0]:  # an event ends at most one span
            span = analysis.spans[-1]
            record["span"] = [analysis.lane(span.agent), span.start, span.end, *_state(span.state)]
        opened = analysis.opened
        if opened != was_open:
            record["open"] = None
            if opened is not None:
                state = opened.state
                self._show("state", state, lambda: {"label": state, "color": state_color(state)})
                lane, waiting = analysis.lane(opened.agent), state in WAITING_STATES
                record["open"] = [lane, opened.start, *_state(state), waiting]
        if len(analysis.handoffs) > counts[1] and analysis.handoffs[-1].source is not None:
            handoff = analysis.handoffs[-1]
            color = mode_color(handoff.mode)
            self._show("mode", handoff.mode, functools.partial(_mode_key, handoff.mode))
            record["handoff"] = self._handoff(handoff, color, describe(event))
        if len(analysis.bring_ups) > counts[2]:
            self._show("band", "bring_up", lambda: {"label": "bring-up", "color": BRING_UP})
            bring_up = analysis.bring_ups[-1]
            record["bring_up"] = _bring_up(analysis.lane(bring_up.agent), bring_up)
        return record

    def _speech_changed(self) -> list[dict[str, Any]]:
        """Speech that ended or got its words since the last event: only the last few can
        have (each speaker's latest)."""
        said, sent = self.analysis.speech, self._speech_sent
        changed = []
        for i in range(max(len(said) - 3, 0), len(said)):
            if i < len(sent) and sent[i] is said[i]:
                continue
            speech = said[i]
            if i < len(sent):
                sent[i] = speech
            else:
                sent.append(speech)
            self._show("speech", speech.speaker, functools.partial(_speech_key, speech.speaker))
            changed.append(_speech(self.analysis.lane(speech.agent), speech))
        return changed

    def _show(self, group: str, key: str, entry: Callable[[], dict[str, Any]]) -> None:
        """Put ``key`` of ``group`` in the legend, the first time it is drawn."""
        if (group, key) not in self._legend:
            self._legend[group, key] = {"group": group, "key": key, **entry()}

    def _handoff(self, handoff: Handoff, color: str, detail: str) -> dict[str, Any]:
        assert handoff.source is not None
        return {
            "from": self.analysis.lane(handoff.source),
            "to": self.analysis.lane(handoff.target),
            "mode": handoff.mode,
            "label": handoff.label,
            "color": color,
            "ink": ink(color),
            "detail": detail,
        }


@functools.cache
def _state(state: str) -> tuple[str, str, str]:
    color = state_color(state)
    return state, color, ink(color)


def _bring_up(lane: int, bring_up: BringUp) -> dict[str, Any]:
    took = milliseconds(bring_up.seconds)
    how = bring_up.handoff.label
    return {
        "lane": lane,
        "handoff": bring_up.handoff.seq,
        "start": bring_up.start,
        "end": bring_up.end,
        "label": took,
        "color": BRING_UP,
        "name": f"{bring_up.agent} bring-up: {took}",
        "detail": f"bring-up · {bring_up.agent}\nhandoff → first words: {took}"
        + (f"\n{how}" if how else ""),
    }


def _mode_key(mode: str) -> dict[str, Any]:
    return {"label": mode_text(mode), "color": mode_color(mode)}


def _race_key(key: str) -> dict[str, Any]:
    return {"label": RACE_KEYS[key], "color": RACE_COLORS[key]}


def _race_mark(lane: int, key: str, mark: TimelineMark) -> dict[str, Any]:
    """A race mark as drawn: a chip naming it over a line through its lane at its time."""
    lines = [f"{RACE_KEYS[key]} · {mark.label} · {mark.agent} · {mark.t:.3f} s"]
    if mark.detail:
        lines.append(mark.detail)
    return {
        "t": mark.t,
        "lane": lane,
        "key": key,
        "label": mark.label,
        "color": RACE_COLORS[key],
        "ink": ink(RACE_COLORS[key]),
        "name": f"{RACE_KEYS[key]}: {mark.label}",
        "detail": "\n".join(lines),
    }


def _speech_key(speaker: str) -> dict[str, Any]:
    who = "caller" if speaker == "user" else "agent"
    return {"label": f"{who} speaking", "color": SPEECH_COLORS[speaker]}


def _speech(lane: int, speech: Speech) -> dict[str, Any]:
    """A stretch of speech as drawn: under its lane, the words on hover; ``id`` names it
    for the update that brings its words."""
    who = "caller" if speech.speaker == "user" else speech.agent
    lines = [f"{who} speaking · {duration(speech.seconds)}"]
    if speech.text:
        lines.append(f"“{cut(speech.text)}”")
    if speech.first_audio_s is not None:
        lines.append(f"the caller waited {milliseconds(speech.first_audio_s)} for it")
    if speech.interrupted:
        lines.append("interrupted: the words are what was heard")
    return {
        "id": f"{speech.speaker}:{speech.start}",
        "lane": lane,
        "speaker": speech.speaker,
        "start": speech.start,
        "end": speech.end,
        "color": SPEECH_COLORS[speech.speaker],
        "detail": "\n".join(lines),
    }


def _gap(gap: Gap) -> dict[str, Any]:
    return {
        "start": gap.start,
        "end": gap.end,
        "label": f"{duration(gap.seconds)} idle",
        "short": duration(gap.seconds),
        "detail": f"{duration(gap.seconds)} waiting on the caller, no events\n"
        f"{gap.start:.3f} s → {gap.end:.3f} s (drawn shorter)",
    }


def duration(seconds: float) -> str:
    """ "48.1 s", or "2.5 min" from 100 s on."""
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds / 60:.1f} min"


def describe(event: TraceEvent) -> str:
    """An event's hover details: what, who, when, then its data (long texts cut, a handoff's
    context as a count, a parting's lone items as lines; the rest stays in the kernel)."""
    lines = [f"{event.kind.replace('_', ' ')} · {event.agent or '-'} · {event.t:.3f} s"]
    data = event.data
    for key, value in data.items():
        if key in ("context_items", "livekit", "model"):
            continue
        if key in ("added", "removed"):
            value = len(value)
        elif key in ("missing", "extra"):
            value = [cut(item_line(item)) for item in value]
        if value is None or value == "" or value == []:
            continue  # nothing missing, say nothing
        if isinstance(value, list):  # a turn's line conditions are records: one a line
            shown = "\n  ".join(v if isinstance(v, str) else cut(json.dumps(v)) for v in value)
        else:
            shown = cut(str(value))
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)
