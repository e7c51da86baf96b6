"""TimelineView, Python side: what crosses to the browser and when, scrubbing, the figure."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from notebook_agents.trace import TRACE_FORMAT, Trace, TraceEvent
from notebook_agents.views import TimelineView
from notebook_agents.views._text import MAX_TEXT
from notebook_agents.views.timeline_view import (
    bring_ups,
    browser_record,
    milliseconds,
    state_spans,
    timeline_figure,
)

from .conftest import MakeModel
from .test_trace import TURNS, Alice, Bob, traced


class Browser:
    """Stands in for the front end: keeps what the view sends (the comm is the boundary)."""

    def __init__(self, view: TimelineView) -> None:
        self.messages: list[dict[str, Any]] = []
        view.send = self.messages.append

    def seqs(self) -> list[int]:
        return [e["seq"] for m in self.messages for e in m["events"]]


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
    path = tmp_path / "trace.jsonl"
    path.write_text(
        "\n".join(json.dumps(r) for r in [{"format": TRACE_FORMAT, "started_at": 0.0}, *records])
    )
    return Trace.load(path)


async def test_live_events_cross_once_in_batches_without_metrics(models: MakeModel) -> None:
    trace = Trace()
    view = TimelineView(trace)
    browser = Browser(view)
    await converse(models, trace)
    view._throttle.cancel()
    view._flush()

    expected = [e.seq for e in trace.events if e.kind not in ("metrics", "user_state")]
    assert browser.seqs() == expected  # each drawn event once, in order
    assert len(browser.messages) < len(expected)  # batched, not one message per event
    assert view.event_count == len(expected)
    assert view.live is False  # the session closed: the timeline ends at its last event
    handoff = next(
        e
        for m in browser.messages
        for e in m["events"]
        if e["kind"] == "handoff" and e["data"]["from"]
    )
    assert handoff["data"]["session"] == "reused" and handoff["data"]["context"] == "copied"
    assert "context_items" not in handoff["data"]  # the kernel keeps the contexts
    view.close()


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

    parted = browser_record(trace.of_kind("context_diverged")[0])["data"]
    assert "livekit" not in parted and "model" not in parted  # both stay in the kernel
    assert parted["missing"] == ["output ?: "] and parted["order"] is True
    legend = view.to_figure().axes[0].get_legend()
    assert legend is not None
    labels = [text.get_text() for text in legend.get_texts()]
    assert "context diverged" in labels and "context converged" in labels


def test_long_texts_are_cut_before_they_cross() -> None:
    event = TraceEvent(3, 1.0, "user_message", "Ada", {"text": "x" * 5000, "item_id": "i"})
    record = browser_record(event)
    assert len(record["data"]["text"]) == MAX_TEXT
    assert record["data"]["item_id"] == "i"


def test_state_spans_follow_the_session_state_across_a_handoff() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_state", "A", {"old": "initializing", "new": "listening"}),
        TraceEvent(2, 0.5, "agent_state", "A", {"old": "listening", "new": "thinking"}),
        TraceEvent(3, 0.6, "handoff", "B", {"from": "A", "to": "B"}),
        TraceEvent(4, 0.9, "agent_state", "B", {"old": "thinking", "new": "speaking"}),
        TraceEvent(5, 1.2, "closed", None, {}),
    ]
    assert state_spans(events) == [
        ("A", 0.0, 0.1, "initializing"),
        ("A", 0.1, 0.5, "listening"),
        ("A", 0.5, 0.6, "thinking"),
        ("B", 0.6, 0.9, "thinking"),  # B starts in the state the session was in
        ("B", 0.9, 1.2, "speaking"),
    ]


def test_a_bring_up_runs_from_the_handoff_to_the_new_agents_first_words() -> None:
    events = [
        TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"}),
        TraceEvent(1, 0.1, "agent_message", "A", {"text": "hi"}),  # the first agent: no bring-up
        TraceEvent(2, 0.5, "handoff", "B", {"from": "A", "to": "B"}),
        TraceEvent(3, 0.55, "agent_message", "A", {"text": "goodbye"}),  # A's on_exit: not B's
        TraceEvent(4, 0.8, "agent_message", "B", {"text": "B here"}),
        TraceEvent(5, 0.9, "agent_message", "B", {"text": "again"}),  # only the first words
        TraceEvent(6, 1.0, "handoff", "A", {"from": "B", "to": "A"}),
        TraceEvent(7, 1.1, "agent_state", "A", {"old": "listening", "new": "thinking"}),
        TraceEvent(8, 1.3, "agent_state", "A", {"old": "thinking", "new": "speaking"}),
        TraceEvent(9, 2.0, "agent_message", "A", {"text": "A again"}),  # said once spoken
        TraceEvent(10, 2.2, "handoff", "B", {"from": "A", "to": "B"}),
        TraceEvent(11, 2.5, "closed", None, {}),  # B never spoke: none
    ]
    assert bring_ups(events) == [("B", 0.5, 0.8), ("A", 1.0, 1.3)]
    assert (milliseconds(0.3), milliseconds(0.0042)) == ("300 ms", "4.2 ms")


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
    labels = [t.get_text().strip() for t in ax.texts if t.get_text()]
    # Alice -> Bob with a copy; back to Alice, to her own context; each one's bring-up
    arrivals = bring_ups(loaded.events)
    assert [agent for agent, _, _ in arrivals] == ["Bob", "Alice"]
    took = [milliseconds(end - start) for _, start, end in arrivals]
    assert labels == [*took, "reused · copied", "reused · own"]
    legend_box = ax.get_legend()
    assert legend_box is not None
    legend = [t.get_text() for t in legend_box.get_texts()]
    assert "user message" in legend and "tool call" in legend
    assert isinstance(TimelineView(Trace()).to_figure(), Figure)  # nothing yet: still a picture


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
    figure = timeline_figure(events)
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
    red = to_rgba("#dc2626")
    assert np.allclose(np.asarray(failed.get_edgecolor())[0], red)
    assert not np.allclose(np.asarray(ok.get_edgecolor())[0], red)
    assert failed.get_label() == "tool output (failed)"
