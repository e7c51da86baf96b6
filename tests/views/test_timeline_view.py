"""TimelineView, Python side: the layout computed in the kernel and what of it crosses to the
browser and when, its colours, scrubbing, and the figure drawn from the same layout."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

from notebook_agents.analysis import Span, milliseconds
from notebook_agents.modes import MODE_COLORS
from notebook_agents.races import RaceMark
from notebook_agents.trace import TRACE_FORMAT, Trace, TraceEvent
from notebook_agents.views import TimelineView
from notebook_agents.views._text import MAX_TEXT
from notebook_agents.views._timeline_figure import timeline_figure
from notebook_agents.views._timeline_layout import (
    MARK_STYLES,
    SPEECH_COLORS,
    STATE_COLORS,
    TimelineLayout,
    describe,
    ink,
)
from tests.conftest import MakeModel
from tests.trace.test_trace import TURNS, Alice, Bob, traced


class Browser:
    """Stands in for the front end: keeps what the view sends (the comm is the boundary)."""

    def __init__(self, view: TimelineView) -> None:
        self.messages: list[dict[str, Any]] = []
        view.send = self.messages.append

    def seqs(self) -> list[int]:
        return [e["seq"] for e in self.records()]

    def records(self) -> list[dict[str, Any]]:
        return [e for m in self.messages for e in m["events"]]


async def converse(models: MakeModel, trace: Trace) -> None:
    alice = Alice(lambda alice: Bob(back=alice, chat_ctx=alice.chat_ctx.copy()))
    closed = asyncio.Event()
    trace.subscribe(lambda event: closed.set() if event.kind == "closed" else None)
    async with traced(models(), alice, trace) as (session, _):
        for text in TURNS:
            await session.run(user_input=text)
    await closed.wait()


def message(item_id: str, role: str, text: str) -> dict[str, str]:
    return {"id": item_id, "type": "message", "role": role, "text": text}


HELLO = message("u1", "user", "Hello")
HI = message("a1", "assistant", "Hi")
OUTPUT = {"id": "o1", "type": "function_call_output", "name": "", "call_id": "c1", "text": ""}
AGAIN = message("u2", "user", "Hello again")
ANSWER = message("a2", "assistant", "How can I help you?")


def parted_trace(tmp_path: Path) -> Trace:
    """A saved and loaded trace: Weather's sides part at 1.2 s (his reply ahead of the
    caller's words on the model's side) and agree again at 2 s."""

    def event(seq: int, t: float, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"seq": seq, "t": t, "kind": kind, "agent": "Weather", "data": data}

    parted = {
        "agent": "Weather",
        "message": "Weather's chat context and the model's conversation diverged",
        "missing": [OUTPUT],
        "extra": [],
        "order": True,
        "livekit": [HELLO, HI, AGAIN, ANSWER, OUTPUT],
        "model": [HELLO, HI, ANSWER, AGAIN],
    }
    records = [
        event(0, 0.0, "handoff", {"from": None, "to": "Weather", "context_items": [HELLO, HI]}),
        event(1, 1.0, "user_message", {"text": "Hello again", "item_id": "u2"}),
        event(2, 1.1, "agent_message", {"text": "How can I help you?", "item_id": "a2"}),
        event(3, 1.2, "context_diverged", parted),
        event(4, 2.0, "context_converged", {"agent": "Weather", "items": 4}),
    ]
    return Trace.load(write_trace(tmp_path / "trace.jsonl", records))


def write_trace(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a saved trace: JSON Lines, the format line first."""
    lines = [{"format": TRACE_FORMAT, "started_at": 0.0}, *records]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path


def four_handoffs() -> list[dict[str, Any]]:
    """What a new user met: nothing until 1 s; a turn; 48 s of nobody doing anything; then
    four handoffs within 1.35 s (each new agent speaking on entry), the last one at the
    trace's right edge."""
    events: list[tuple[float, str, str | None, dict[str, Any]]] = [
        (1.0, "handoff", "Concierge", {"from": None, "to": "Concierge", "session": None,
                                       "context": None}),
        (1.05, "agent_state", "Concierge", {"old": "initializing", "new": "listening"}),
        (1.4, "user_message", "Concierge", {"text": "hello", "item_id": "u1"}),
        (1.45, "agent_state", "Concierge", {"old": "listening", "new": "thinking"}),
        (1.6, "agent_state", "Concierge", {"old": "thinking", "new": "speaking"}),
        (1.7, "agent_message", "Concierge", {"text": "Hi, how can I help?", "item_id": "a1",
                                             "source": "generate_reply", "phase": "turn"}),
        (1.9, "agent_state", "Concierge", {"old": "speaking", "new": "listening"}),
        (50.0, "user_message", "Concierge", {"text": "billing please", "item_id": "u2"}),
        (50.05, "agent_state", "Concierge", {"old": "listening", "new": "thinking"}),
        (50.1, "tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c1",
                                          "arguments": "{}"}),
    ]  # fmt: skip
    for i, (t, source, target, session, context) in enumerate(FOUR_HOPS):
        data = {"from": source, "to": target, "session": session, "context": context}
        said = {"text": f"{target} here.", "item_id": f"e{i}", "source": "say", "phase": "on_enter"}
        events += [
            (t, "handoff", target, data),
            (t + 0.08, "agent_state", target, {"old": "thinking", "new": "speaking"}),
            (t + 0.1, "agent_message", target, said),
            (t + 0.2, "agent_state", target, {"old": "speaking", "new": "thinking"}),
        ]
    events.append((51.75, "closed", None, {"reason": "user_initiated"}))
    return [
        {"seq": seq, "t": t, "kind": kind, "agent": agent, "data": data}
        for seq, (t, kind, agent, data) in enumerate(events)
    ]


FOUR_HOPS = [
    (50.15, "Concierge", "Billing", "reused", "copied"),
    (50.55, "Billing", "Support", "fresh", "empty"),
    (50.95, "Support", "Concierge", "reused", "own"),
    (51.5, "Concierge", "Billing", "fresh", "copied"),
]
"""(time, from, to, session, context) of ``four_handoffs``"""


async def watched(models: MakeModel) -> tuple[Trace, TimelineView, Browser]:
    """A view on a live conversation, everything it sent flushed to the browser."""
    trace = Trace()
    view = TimelineView(trace)
    browser = Browser(view)
    await converse(models, trace)
    view._throttle.cancel()
    view._flush()
    return trace, view, browser


async def test_live_events_cross_once_in_batches_without_metrics(models: MakeModel) -> None:
    trace, view, browser = await watched(models)

    expected = [e.seq for e in trace.events if e.kind not in ("metrics", "user_state")]
    assert browser.seqs() == expected  # each drawn event once, in order
    assert len(browser.messages) < len(expected)  # batched, not one message per event
    assert view.event_count == len(expected)
    assert view.live is False  # the session closed: the timeline ends at its last event
    first, back = (r["handoff"] for r in browser.records() if "handoff" in r)
    assert (first["label"], back["label"]) == ("reused · copied", "reused · own")
    assert "context_items" not in first["detail"]  # the kernel keeps the contexts
    view.close()


async def test_the_browser_gets_the_layout_the_kernel_computed(models: MakeModel) -> None:
    """Spans, bring-ups, handoffs, lanes and colours cross as computed: put together, the
    records are the kernel's analysis, so the browser has nothing left to work out."""
    trace, view, browser = await watched(models)
    analysis = view.analysis
    assert view.lanes == analysis.lanes == ["Alice", "Bob"]
    assert view.first_t == trace.events[0].t

    records = browser.records()
    spans = [r["span"] for r in records if "span" in r]
    assert [Span(view.lanes[s[0]], s[1], s[2], s[3]) for s in spans] == analysis.state_spans()
    assert all(s[4] == STATE_COLORS[s[3]] and s[5] == ink(s[4]) for s in spans)
    assert [r["open"] for r in records if "open" in r][-1] is None  # closed: nothing open

    bands = [r["bring_up"] for r in records if "bring_up" in r]
    assert [(view.lanes[b["lane"]], b["start"], b["end"]) for b in bands] == [
        (b.agent, b.start, b.end) for b in analysis.bring_ups
    ]
    assert [b["label"] for b in bands] == [milliseconds(b.seconds) for b in analysis.bring_ups]
    assert bands[0]["name"] == f"Bob bring-up: {bands[0]['label']}"

    handoffs = [r["handoff"] for r in records if "handoff" in r]
    assert [(h["from"], h["to"], h["mode"]) for h in handoffs] == [
        (0, 1, "reused+copied"),
        (1, 0, "reused+own"),
    ]
    assert all(h["color"] == MODE_COLORS[h["mode"]] for h in handoffs)

    marks = [r["mark"] for r in records if "mark" in r]
    assert {m[1] for m in marks} >= {"user_message", "agent_message", "on_enter", "tool_call"}
    assert all(m[1] in view.mark_styles for m in marks)

    # the legend: what is on show, in the colours it is drawn in
    legend = {(e["group"], e["key"]): e for e in view.legend}
    for state in {span.state for span in analysis.state_spans()}:
        assert legend["state", state]["color"] == STATE_COLORS[state]
    assert legend["mode", "reused+copied"]["label"] == "reused · copied"
    assert legend["mode", "reused+own"]["color"] == MODE_COLORS["reused+own"]
    assert {key for group, key in legend if group == "mark"} == {m[1] for m in marks}
    assert ("band", "bring_up") in legend


def contrast(a: str, b: str) -> float:
    lighter, darker = sorted((luminance(a), luminance(b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def luminance(color: str) -> float:
    linear = [
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgba(color)[:3]
    ]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_colours_read_in_the_light_and_the_dark_theme() -> None:
    """A state bar stands out from either theme's page (3:1, WCAG's non-text contrast) and
    the text drawn on a bar or a mode's chip reads on it (4.5:1)."""
    light, dark = "#ffffff", "#111111"  # JupyterLab's --jp-layout-color0 in each theme
    for state, color in STATE_COLORS.items():
        assert contrast(color, light) >= 3 and contrast(color, dark) >= 3, state
        assert contrast(ink(color), color) >= 4.5, state
    for mode, color in MODE_COLORS.items():
        assert contrast(ink(color), color) >= 4.5, mode
    for key, style in MARK_STYLES.items():
        assert contrast(style.color, light) >= 3 and contrast(style.color, dark) >= 3, key


async def test_a_new_rendering_gets_the_history_once(models: MakeModel) -> None:
    trace = Trace()
    await converse(models, trace)
    view = TimelineView(trace)
    browser = Browser(view)
    view._on_browser_message(view, {"type": "history"}, [])
    (history,) = browser.messages
    assert history["reset"] is True
    assert [e["seq"] for e in history["events"]] == [
        e.seq for e in trace.events if e.kind not in ("metrics", "user_state")
    ]


async def test_scrubbing_shows_each_agents_context_at_that_moment(models: MakeModel) -> None:
    trace = Trace()
    await converse(models, trace)
    view = TimelineView(trace)
    to_bob = trace.of_kind("handoff")[1]
    view.scrub_t = to_bob.t
    assert view.scrub_contexts == trace.contexts_at(to_bob.t)
    assert set(view.scrub_contexts) == {"Alice", "Bob"}
    view.scrub_t = None
    assert view.scrub_contexts == {}


def test_scrubbing_shows_the_models_side_where_it_parted_from_livekits(tmp_path: Path) -> None:
    trace = parted_trace(tmp_path)
    view = TimelineView(trace)
    view.scrub_t = 1.5  # apart
    (model,) = view.scrub_models.values()
    assert model["title"] == "Weather · model (at 1.20 s)"
    assert [(item["text"], item.get("mark")) for item in model["items"]] == [
        ("Hello", None),
        ("Hi", None),
        ("How can I help you?", "moved"),  # ahead of the caller's words it answers
        ("Hello again", None),
    ]
    # livekit's side at 1.5 s as the trace rebuilds it; the model lacked nothing of it then
    assert [item["text"] for item in view.scrub_contexts["Weather"]] == [
        "Hello",
        "Hi",
        "Hello again",
        "How can I help you?",
    ]
    view.scrub_t = 2.5  # together again: no model column
    assert view.scrub_models == {} and len(view.scrub_contexts["Weather"]) == 4

    # the mark's hover text: the lone item as a line, order; both sides stay in the kernel
    parted = describe(trace.of_kind("context_diverged")[0])
    assert "missing: output ?: \norder: True" in parted and "Hello again" not in parted
    legend = view.to_figure().axes[0].get_legend()
    assert legend is not None
    labels = [text.get_text() for text in legend.get_texts()]
    assert "model apart" in labels and "model agrees" in labels


def test_long_texts_are_cut_before_they_cross() -> None:
    event = TraceEvent(3, 1.0, "user_message", "Ada", {"text": "x" * 5000, "item_id": "i"})
    (record,) = [TimelineLayout().add(event)]
    assert record is not None
    lines = record["mark"][2].split("\n")
    assert lines[1] == "text: " + "x" * (MAX_TEXT - 1) + "…"
    assert lines[2] == "item_id: i"


def chip_texts(figure: Figure) -> list[Text]:
    """The handoff chips: the texts drawn in a box."""
    (ax,) = figure.axes
    return [t for t in ax.texts if t.get_bbox_patch() is not None]


async def test_figure_of_a_loaded_trace(models: MakeModel, tmp_path: Path) -> None:
    trace = Trace()
    await converse(models, trace)
    loaded = Trace.load(trace.save(tmp_path / "trace.jsonl"))
    view = TimelineView(loaded)
    assert view.live is False
    figure = view.to_figure()
    assert isinstance(figure, Figure)
    (ax,) = figure.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Alice", "Bob"]
    # Alice -> Bob with a copy; back to Alice, to her own context; each one's bring-up
    chips = chip_texts(figure)
    assert [c.get_text() for c in chips] == ["reused · copied", "reused · own"]
    chip_colors = [c.get_bbox_patch().get_facecolor() for c in chips]  # type: ignore[union-attr]
    assert chip_colors == [
        to_rgba(MODE_COLORS["reused+copied"]),
        to_rgba(MODE_COLORS["reused+own"]),
    ]
    took = [milliseconds(b.seconds) for b in view.analysis.bring_ups]
    assert [t.get_text().strip() for t in ax.texts if t.get_text().endswith(" ms")] == took
    # the same legend as the widget's, in its order
    legend_box = ax.get_legend()
    assert legend_box is not None
    assert [t.get_text() for t in legend_box.get_texts()] == [e["label"] for e in view.legend]
    assert isinstance(TimelineView(Trace()).to_figure(), Figure)  # nothing yet: still a picture


def test_figure_keeps_close_labels_apart_and_fits_the_activity(tmp_path: Path) -> None:
    """Four handoffs inside 1.5 s after 48 s of nothing: no chip covers another or leaves the
    figure, the axis starts at the first event, and the idle gap is shortened and labelled."""
    view = TimelineView(Trace.load(write_trace(tmp_path / "four.jsonl", four_handoffs())))
    figure = view.to_figure()
    figure.draw_without_rendering()
    (ax,) = figure.axes
    chips = chip_texts(figure)
    assert [c.get_text() for c in chips] == [
        "reused · copied",
        "fresh · empty",
        "reused · own",
        "fresh · copied",
    ]
    page = figure.bbox
    boxes = [c.get_bbox_patch().get_window_extent() for c in chips]  # type: ignore[union-attr]
    for i, a in enumerate(boxes):
        assert page.x0 <= a.x0 and a.x1 <= page.x1 and page.y0 <= a.y0 and a.y1 <= page.y1
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"chips at {a} and {b} overlap"
    ticks = [float(t.get_text()) for t in ax.get_xticklabels() if t.get_text()]
    assert 0.9 <= ticks[0] <= 1.4, f"the axis starts at {ticks[0]} s"
    (gap,) = [p for p in ax.patches if p.get_hatch()]
    gap_width = gap.get_window_extent().width / ax.get_window_extent().width
    assert gap_width < 0.1, f"the idle gap takes {gap_width:.0%} of the axis"
    assert [t.get_text() for t in ax.xaxis.get_minorticklabels()] == ["48.1 s idle"]


def test_figure_keeps_close_marks_apart_and_marks_a_failed_tool_output() -> None:
    lookup = {"name": "weather", "call_id": "c1", "arguments": "{}"}
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_state", "A", {"old": "initializing", "new": "listening"}),
        # one turn: the user's words, a tool call, its output and the reply within 5 ms
        TraceEvent(2, 1.000, "user_message", "A", {"text": "weather?"}),
        TraceEvent(3, 1.002, "tool_call", "A", lookup),
        TraceEvent(4, 1.003, "tool_output", "A", {**lookup, "output": "sunny", "is_error": False}),
        TraceEvent(5, 1.005, "agent_message", "A", {"text": "sunny"}),
        TraceEvent(6, 2.000, "tool_call", "A", {**lookup, "call_id": "c2"}),
        TraceEvent(7, 2.001, "tool_output", "A", {**lookup, "output": "boom", "is_error": True}),
        TraceEvent(8, 3.0, "closed", None, {}),
    ]
    figure = timeline_figure(TimelineLayout(events))
    figure.draw_without_rendering()  # lay it out: positions on the page are now final
    (ax,) = figure.axes
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    marks = [(c, (x, y)) for c in scatters for x, y in np.asarray(c.get_offsets()).tolist()]
    # every mark is drawn, at its own time, inside its lane
    assert sorted(x for _, (x, _) in marks) == [1.000, 1.002, 1.003, 1.005, 2.000, 2.001]
    assert all(-0.5 < y < 0.5 for _, (_, y) in marks)
    # and none covers another: centres at least a marker's width apart on the page
    width_px = max(math.sqrt(s) for c in scatters for s in c.get_sizes()) * figure.dpi / 72
    on_page = [ax.transData.transform(xy) for _, xy in marks]
    for i, a in enumerate(on_page):
        for b in on_page[i + 1 :]:
            assert math.dist(a, b) >= width_px, f"marks at {a} and {b} overlap"
    # a failed tool output looks unlike a successful one, as in the browser (red outline)
    (ok,) = [c for c, (x, _) in marks if x == 1.003]
    (failed,) = [c for c, (x, _) in marks if x == 2.001]
    assert failed is not ok
    red = to_rgba(MARK_STYLES["tool_failed"].color)
    assert np.allclose(np.asarray(failed.get_edgecolor())[0], red)
    assert not np.allclose(np.asarray(ok.get_edgecolor())[0], red)
    legend = ax.get_legend()
    assert legend is not None
    assert "tool output (failed)" in [t.get_text() for t in legend.get_texts()]


def test_speech_is_drawn_under_its_lane_with_its_words_once_they_come() -> None:
    """The caller's speech ends before its transcript arrives: it crosses again with it."""
    layout = TimelineLayout()
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 1.0, "user_state", "A", {"old": "listening", "new": "speaking"}),
        TraceEvent(2, 2.0, "user_state", "A", {"old": "speaking", "new": "listening"}),
        TraceEvent(3, 2.25, "user_transcript", "A", {"text": "hello there", "final": True}),
    ]
    records = [layout.add(event) for event in events]
    ended, worded = records[2], records[3]
    assert ended is not None and worded is not None
    (bar,) = ended["speech"]
    assert (bar["lane"], bar["speaker"], bar["start"], bar["end"]) == (0, "user", 1.0, 2.0)
    assert bar["color"] == SPEECH_COLORS["user"] and "hello" not in bar["detail"]
    (same,) = worded["speech"]
    assert same["id"] == bar["id"] and "“hello there”" in same["detail"]
    assert {"group": "speech", "key": "user", "label": "caller speaking",
            "color": SPEECH_COLORS["user"]} in layout.legend  # fmt: skip


def test_the_figure_draws_speech_as_the_widget_does() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 1.0, "user_state", "A", {"old": "listening", "new": "speaking"}),
        TraceEvent(2, 2.0, "user_state", "A", {"old": "speaking", "new": "listening"}),
        TraceEvent(3, 2.5, "agent_state", "A", {"old": "thinking", "new": "speaking"}),
        TraceEvent(4, 4.0, "agent_state", "A", {"old": "speaking", "new": "listening"}),
    ]
    ax = timeline_figure(TimelineLayout(events)).axes[0]
    widths = {
        tuple(np.asarray(bars.get_facecolor())[0]): bars.get_paths()[0].get_extents().width
        for bars in ax.collections
        if len(bars.get_facecolor())
    }
    # the caller spoke for 1 s, the agent for 1.5 s (no idle gap squeezes the axis here)
    assert widths[to_rgba(SPEECH_COLORS["user"])] == pytest.approx(1.0)
    assert widths[to_rgba(SPEECH_COLORS["agent"])] == pytest.approx(1.5)


def away_after_the_reply() -> list[dict[str, Any]]:
    """Notebook 01's call as a new user leaves it: a turn, then the caller silent until livekit
    says they are away (its ``user_away_timeout``, 15 s), saved while the call is up."""
    events: list[tuple[float, str, str | None, dict[str, Any]]] = [
        (0.48, "handoff", "Concierge", {"from": None, "to": "Concierge", "session": None,
                                        "context": None}),
        (0.49, "agent_state", "Concierge", {"old": "initializing", "new": "listening"}),
        (0.52, "user_message", "Concierge", {"text": "Hello there!", "item_id": "u1"}),
        (0.56, "agent_state", "Concierge", {"old": "listening", "new": "speaking"}),
        (3.779, "agent_state", "Concierge", {"old": "speaking", "new": "listening"}),
        (3.7795, "agent_message", "Concierge", {"text": "You said: Hello there!",
                                                "item_id": "a1", "phase": "turn"}),
        (18.78, "user_state", "Concierge", {"old": "listening", "new": "away"}),
    ]  # fmt: skip
    return [
        {"seq": seq, "t": t, "kind": kind, "agent": agent, "data": data}
        for seq, (t, kind, agent, data) in enumerate(events)
    ]


def test_the_view_ends_at_the_last_event_drawn_or_not(tmp_path: Path) -> None:
    """The caller going away is not drawn but ends the idle gap: the browser is told the trace
    ends there, not at the last mark, so the gap and its label fit inside the view."""
    trace = Trace.load(write_trace(tmp_path / "away.jsonl", away_after_the_reply()))
    view = TimelineView(trace)
    browser = Browser(view)
    view._on_browser_message(view, {"type": "history"}, [])
    away = trace.events[-1]
    assert away.kind == "user_state"
    assert max(record["t"] for record in browser.records()) < away.t  # not sent as a record
    assert view.last_t == away.t
    assert view.gaps[-1]["end"] == away.t and view.gaps[-1]["label"] == "15.0 s idle"


async def test_a_live_views_end_follows_every_event(models: MakeModel) -> None:
    trace, view, _ = await watched(models)
    assert view.last_t == trace.events[-1].t


def test_the_caller_the_agent_and_the_rest_have_rows_of_their_own() -> None:
    """A reply and the next message land milliseconds apart when cells run back to back: in
    rows of their own neither hides the other; the browser gets each style's row."""
    rows = {key: style.row for key, style in MARK_STYLES.items()}
    assert rows["user_message"] != rows["agent_message"] == rows["on_enter"]
    others = {row for key, row in rows.items() if not key.endswith(("message", "on_enter"))}
    assert others.isdisjoint({rows["user_message"], rows["agent_message"]})
    view = TimelineView(Trace())
    assert {key: style["row"] for key, style in view.mark_styles.items()} == rows


def remote_handoff() -> list[TraceEvent]:
    """An agent in another process hands off: the protocol does not say whether the realtime
    session was reused or the context copied (``session`` and ``context`` None)."""
    unknown = {"session": None, "context": None}
    listening = {"old": "initializing", "new": "listening"}
    return [
        TraceEvent(0, 0.0, "handoff", "greeter_agent", {"from": None, "to": "greeter_agent"}),
        TraceEvent(1, 0.1, "agent_state", "greeter_agent", listening),
        TraceEvent(2, 1.0, "user_message", "greeter_agent", {"text": "transfer to weather"}),
        TraceEvent(
            3, 1.2, "handoff", "weather_agent",
            {"from": "greeter_agent", "to": "weather_agent", **unknown},
        ),
        TraceEvent(4, 1.5, "agent_message", "weather_agent", {"text": "Which city?"}),
        TraceEvent(5, 2.0, "closed", None, {"reason": "user_initiated"}),
    ]  # fmt: skip


def test_a_handoff_of_unknown_mode_says_so_in_the_widget_and_the_figure(tmp_path: Path) -> None:
    """Not an empty grey chip: the chip and the legend say the mode is unknown."""
    records = [e.to_record() for e in remote_handoff()]
    view = TimelineView(Trace.load(write_trace(tmp_path / "remote.jsonl", records)))
    browser = Browser(view)
    view._on_browser_message(view, {"type": "history"}, [])
    (handoff,) = [r["handoff"] for r in browser.records() if "handoff" in r]
    assert (handoff["mode"], handoff["label"]) == ("unknown", "mode unknown")
    modes = [e for e in view.legend if e["group"] == "mode"]
    assert [(e["key"], e["label"]) for e in modes] == [("unknown", "mode unknown")]
    figure = view.to_figure()
    assert [c.get_text() for c in chip_texts(figure)] == ["mode unknown"]
    (ax,) = figure.axes
    legend = ax.get_legend()
    assert legend is not None and "mode unknown" in [t.get_text() for t in legend.get_texts()]
    view.close()


def test_race_marks_are_laid_out_in_their_lanes_for_the_widget_and_the_figure(
    tmp_path: Path,
) -> None:
    """A race's marks (``RaceVerdict.marks``) cross to the browser laid out: lane, time,
    legend key and hover text, in time order; the figure draws each as a chip beside the
    handoffs' without covering one; a mark for an agent with no lane says how to fix it."""
    trace = Trace.load(write_trace(tmp_path / "four.jsonl", four_handoffs()))
    marks = [
        RaceMark(50.6, "Billing", "handoff dropped", "livekit ERROR: expected one Agent"),
        RaceMark(1.7, "Concierge", "run completed", race=False),
    ]
    view = TimelineView(trace, marks=marks)
    assert [(m["t"], view.lanes[m["lane"]], m["key"]) for m in view.race_marks] == [
        (1.7, "Concierge", "no_race"),
        (50.6, "Billing", "race"),
    ]
    assert "expected one Agent" in view.race_marks[1]["detail"]
    legend = [(e["group"], e["key"], e["label"]) for e in view.legend]
    assert legend[-2:] == [("race", "race", "race"), ("race", "no_race", "no race")]
    figure = view.to_figure()
    figure.draw_without_rendering()
    chips = chip_texts(figure)
    assert {"handoff dropped", "run completed"} <= {c.get_text() for c in chips}
    boxes = [c.get_bbox_patch().get_window_extent() for c in chips]  # type: ignore[union-attr]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"chips at {a} and {b} overlap"
    with pytest.raises(ValueError, match="pass the marks of the run whose trace it shows"):
        TimelineView(trace, marks=[RaceMark(1.0, "Survey", "hand-back refused")])


def idle_call(
    pauses: tuple[float, ...] = (3.3, 3.5, 3.2, 3.4, 3.1, 3.6, 3.2),
) -> list[dict[str, Any]]:
    """A call a caller left idle between turns (a saved one as it loads): a turn, then for each
    of ``pauses`` that long waited on the caller (an idle gap each), then a turn; the third
    turn asks for billing, who greets the caller and hands straight back 0.5 s later. With the
    default pauses: 7 idle gaps, the call runs to about 36 s."""
    events: list[tuple[float, str, str | None, dict[str, Any]]] = [
        (0.6, "handoff", "Concierge", {"from": None, "to": "Concierge", "session": None,
                                       "context": None}),
        (0.65, "agent_state", "Concierge", {"old": "initializing", "new": "listening"}),
    ]  # fmt: skip
    t = 0.9
    for turn in range(len(pauses) + 1):
        agent = "Concierge"
        events += [
            (t, "user_message", agent, {"text": f"question {turn}", "item_id": f"u{turn}"}),
            (t + 0.05, "agent_state", agent, {"old": "listening", "new": "thinking"}),
        ]
        if turn == 2:  # to billing and back: two handoffs 0.5 s apart
            call = {"name": "transfer_to_billing", "call_id": "c1", "arguments": "{}"}
            greet = {"text": "Billing here.", "item_id": "b1", "source": "say", "phase": "on_enter"}
            back = {"text": "Concierge again.", "item_id": "c2", "source": "say",
                    "phase": "on_enter"}  # fmt: skip
            events += [
                (t + 0.3, "tool_call", agent, call),
                (t + 0.35, "handoff", "Billing", {"from": agent, "to": "Billing",
                                                  "session": "reused", "context": "copied"}),
                (t + 0.55, "agent_state", "Billing", {"old": "thinking", "new": "speaking"}),
                (t + 0.6, "agent_message", "Billing", greet),
                (t + 0.8, "agent_state", "Billing", {"old": "speaking", "new": "thinking"}),
                (t + 0.85, "handoff", agent, {"from": "Billing", "to": agent,
                                              "session": "reused", "context": "own"}),
                (t + 1.2, "agent_state", agent, {"old": "thinking", "new": "speaking"}),
                (t + 1.25, "agent_message", agent, back),
            ]  # fmt: skip
            t += 0.9
        reply = {"text": f"answer {turn}", "item_id": f"a{turn}", "phase": "turn"}
        events += [
            (t + 0.4, "agent_state", agent, {"old": "thinking", "new": "speaking"}),
            (t + 0.45, "agent_message", agent, reply),
            (t + 1.1 + 0.2 * (turn % 3), "agent_state", agent, {"old": "speaking",
                                                                "new": "listening"}),
        ]  # fmt: skip
        t = events[-1][0] + (pauses[turn] if turn < len(pauses) else 0.0)
    events.append((t + 0.5, "closed", None, {"reason": "user_initiated"}))
    return [
        {"seq": seq, "t": t, "kind": kind, "agent": agent, "data": data}
        for seq, (t, kind, agent, data) in enumerate(events)
    ]


def stretches(gaps: list[dict[str, Any]], start: float, end: float) -> list[tuple[float, float]]:
    """The stretches of ``[start, end]`` between the idle ``gaps``."""
    edges = [start, *(t for gap in gaps for t in (gap["start"], gap["end"])), end]
    return list(zip(edges[::2], edges[1::2], strict=True))


def test_the_figure_names_every_idle_gap_and_has_times_across_the_whole_call(
    tmp_path: Path,
) -> None:
    """A loaded call with 7 idle gaps to 36 s: each gap's label under the axis's times, none
    over another; a labelled time in every stretch between gaps, none over another (before:
    times only where a round 2.5 s fell outside the gaps, the labels inside the lanes)."""
    view = TimelineView(Trace.load(write_trace(tmp_path / "idle.jsonl", idle_call())))
    gaps = view.gaps
    assert len(gaps) == 7 and 35 < view.last_t < 37  # type: ignore[operator]
    figure = view.to_figure()
    figure.draw_without_rendering()
    (ax,) = figure.axes
    page = figure.bbox
    named = [t for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    assert [t.get_text().strip() for t in named] in (
        [gap["label"] for gap in gaps],
        [gap.get("short") for gap in gaps],
    )
    times = [t for t in ax.xaxis.get_majorticklabels() if t.get_text()]
    boxes = [t.get_window_extent() for t in named + times]
    for i, a in enumerate(boxes):
        assert page.x0 <= a.x0 and a.x1 <= page.x1 and page.y0 <= a.y0
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"axis labels at {a} and {b} overlap"
    # each stretch between gaps has a time on the axis, inside it
    values = [float(t.get_text()) for t in times]
    for start, end in stretches(gaps, view.first_t or 0.0, view.last_t or 0.0):
        assert any(start - 0.5 <= v <= end for v in values), (
            f"no time on the axis from {start:.1f} s to {end:.1f} s: {values}"
        )
    assert all(gap["label"] == f"{gap['short']} idle" for gap in gaps)  # for narrow views
    # to billing and back 0.5 s later: two arrows apart
    arrows = [a.arrow_patch for a in ax.texts if isinstance(a, Annotation) and a.arrow_patch]
    first, back = (arrow.get_window_extent() for arrow in arrows)
    assert not first.overlaps(back), f"the handoffs' arrows {first} and {back} overlap"


def activity(view: TimelineView) -> float:
    """The seconds from ``view``'s first event to its last outside its idle gaps."""
    assert view.first_t is not None and view.last_t is not None
    idle = sum(float(gap["end"]) - float(gap["start"]) for gap in view.gaps)
    return float(view.last_t - view.first_t) - idle


def test_timelines_like_one_another_share_one_time_scale(tmp_path: Path) -> None:
    """``like=``: each timeline fits the most activity and the most idle gaps among them, in
    the browser (``fit_extent``) and the figure (the same seconds across); alone, its own."""
    seven = Trace.load(write_trace(tmp_path / "seven.jsonl", idle_call()))
    six = Trace.load(write_trace(tmp_path / "six.jsonl", idle_call((3.4, 5.0, 3.3, 3.6, 4.0, 3.2))))
    alone = TimelineView(six)
    assert alone.fit_extent == {}
    left = TimelineView(seven)
    right = TimelineView(six, like=left)
    most = {"active": max(activity(view) for view in (left, right)), "gaps": 7}
    assert left.fit_extent == right.fit_extent == pytest.approx(most)
    spans = [
        ax.get_xlim()[1] - ax.get_xlim()[0] for ax in (v.to_figure().axes[0] for v in (left, right))
    ]
    assert spans[0] == pytest.approx(spans[1])
    third = TimelineView(seven, like=right)  # joins both
    assert third.fit_extent == left.fit_extent
    third.close()
    right.close()
    assert left.fit_extent == {}  # alone again
    with pytest.raises(TypeError, match=r"like= takes the TimelineView .*not Trace"):
        TimelineView(six, like=seven)  # type: ignore[arg-type]


async def test_a_live_timeline_widens_the_scale_it_shares(
    models: MakeModel, tmp_path: Path
) -> None:
    """A live call's timeline sharing a scale with an empty replay: the replay is told the
    live one's extent as the call grows."""
    empty = TimelineView(Trace.load(write_trace(tmp_path / "empty.jsonl", [])))
    trace = Trace()
    live = TimelineView(trace, like=empty)
    await converse(models, trace)
    live._throttle.cancel()
    live._flush()
    assert live.fit_extent == empty.fit_extent
    assert empty.fit_extent == {"active": pytest.approx(activity(live)), "gaps": len(live.gaps)}
    assert activity(live) > 0


def test_a_turn_through_a_line_and_a_barge_in_are_drawn_and_described() -> None:
    """A spoken turn's line conditions (records, not texts) once crashed the hover details of
    every view of the trace; a barge-in is a mark of its own, placed when the reply it spoke
    over ended, saying what livekit made of it."""
    line = [{"noise": {"snr_db": 20, "kind": "babble", "seed": 0}}, {"telephone": {}}]
    barge_in = {"at": 0.5, "began": 2.4, "position": 0.5, "interrupted": True, "resumed": False,
                "stopped": 2.95, "stop_s": 0.55, "played_s": 0.6, "heard": "You are",
                "text": "You are the Storyteller.", "item_id": "item_1"}  # fmt: skip
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 1.0, "user_message", "A", {"text": "hello there", "conditions": line}),
        TraceEvent(2, 3.0, "barge_in", "A", barge_in),
    ]
    layout = TimelineLayout()
    heard, over = [layout.add(event) for event in events][1:]
    assert heard is not None and over is not None
    assert '{"noise": {"snr_db": 20, "kind": "babble", "seed": 0}}' in heard["mark"][2]
    assert '{"telephone": {}}' in heard["mark"][2]
    lane, style, detail = over["mark"]
    assert (over["t"], lane, style) == (3.0, 0, "barge_in")
    assert "interrupted: True" in detail and "stop_s: 0.55" in detail
    assert "barge-in" in [key["label"] for key in layout.legend]
    timeline_figure(layout).draw_without_rendering()  # the figure draws it too
