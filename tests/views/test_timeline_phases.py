"""TimelineView shows each handoff's phases (``handoff_phases``): laid out in the kernel at the
handoff, picked up live once livekit's spans of it ended, from a loaded trace too, in the
widget's traits and the matplotlib figure; a trace without spans shows what it did before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from notebook_agents import NotebookRunner
from notebook_agents.analysis import Breakdown, handoff_phases, milliseconds
from notebook_agents.analysis.phases.names import PHASE_COLORS
from notebook_agents.emulator import Emulator
from notebook_agents.trace import Trace
from notebook_agents.views import TimelineView
from notebook_agents.views._timeline_figure import STRIP_H, STRIP_Y
from tests.analysis.test_phases_handoffs import LATENCY, handed_off, handing_server
from tests.views.test_timeline_view import Browser, chip_texts, remote_handoff, write_trace


def the_handoff(trace: Trace) -> Breakdown:
    (breakdown,) = handoff_phases(trace, LATENCY)
    return breakdown


def chips(view: TimelineView) -> list[dict[str, Any]]:
    """The handoff records the browser got, from the history a new rendering asks for."""
    browser = Browser(view)
    view._on_browser_message(view, {"type": "history"}, [])
    return [{"seq": r["seq"], **r["handoff"]} for r in browser.records() if "handoff" in r]


def changed(view: TimelineView, name: str) -> asyncio.Event:
    event = asyncio.Event()
    view.observe(lambda _: event.set(), names=name)
    return event


def assert_strip_of(view: TimelineView, breakdown: Breakdown) -> dict[str, Any]:
    """The view's one strip is ``breakdown`` at its handoff: in the new agent's lane, from the
    wait's start to its end, a segment per critical phase in order in the bench's colours."""
    (strip,) = view.phases
    (chip,) = chips(view)
    assert strip["seq"] == chip["seq"] and view.lanes[strip["lane"]] == breakdown.agent
    assert (strip["start"], strip["end"]) == (breakdown.start, breakdown.end)
    critical = [p for p in breakdown.phases if p.critical]
    assert [(s["name"], s["start"], s["end"], s["color"]) for s in strip["segments"]] == [
        (p.name, p.start, p.end, PHASE_COLORS[p.name]) for p in critical
    ]
    assert strip["mode"] == breakdown.mode
    return strip


@pytest.mark.parametrize(("session", "context"), [("reused", "copied"), ("fresh", "empty")])
async def test_a_real_handoffs_phases_are_laid_out_at_it(
    emulator: Emulator, runners: list[NotebookRunner], session: str, context: str
) -> None:
    trace = await handed_off(runners, emulator, session, context)
    breakdown = the_handoff(trace)
    view = TimelineView(trace, LATENCY)
    strip = assert_strip_of(view, breakdown)
    assert strip["label"] == f"{session} · {context}"  # as the chip writes it
    # the hover text: every phase with its ms, its truth and the client's rest; those beside
    # the critical path said to be
    lines = strip["detail"].split("\n")
    assert lines[0] == f"phases · Concierge → Billing · {session}+{context}"
    for p in breakdown.phases:
        assert p.truth is not None and p.client is not None
        expected = f"{p.name}: {milliseconds(p.seconds)} · net {milliseconds(p.truth)} · client "
        (line,) = [line for line in lines if line.startswith(f"{p.name}: ")]
        assert line.startswith(expected) and line.endswith("(in parallel, not added up)") == (
            not p.critical
        )
    # without the network, no truth: the phases and their ms all the same
    bare = TimelineView(trace)
    assert [s["name"] for s in bare.phases[0]["segments"]] == [s["name"] for s in strip["segments"]]
    assert " · net " not in bare.phases[0]["detail"]
    view.close()
    bare.close()


async def test_a_live_view_picks_a_handoffs_phases_up_once_its_spans_ended(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    """livekit's spans end after the events they cover and no event follows them: the view
    looks again. The call's events first, then its spans as they ended, nothing else."""
    call = await handed_off(runners, emulator, "reused", "copied")
    records = [json.loads(line) for line in call.save(tmp_path / "call.jsonl").open()]
    # the call as it was before it closed: its events recorded, no span yet, live
    events = [r for r in records[1:] if "span" not in r and r["kind"] != "closed"]
    trace = Trace()
    trace._log.load(write_trace(tmp_path / "events.jsonl", events))
    view = TimelineView(trace, LATENCY)
    assert view.live and chips(view) and view.phases == []
    (update,) = [s for s in call.spans if s.name == "update_agent"]
    before = [s for s in call.spans if s.end < update.end]
    for span in before:
        trace._add_span(span)
    view._flush()
    assert view.phases == []  # the handoff's own span has not ended: nothing to split yet
    picked_up = changed(view, "phases")
    for span in call.spans:
        if span.end >= update.end:
            trace._add_span(span)
    await asyncio.wait_for(picked_up.wait(), 5)
    assert_strip_of(view, the_handoff(trace))
    assert view.phases[0]["detail"] == TimelineView(call, LATENCY).phases[0]["detail"]
    view.close()


async def test_a_runners_live_timeline_shows_the_handoffs_phases_during_the_call(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(handing_server(emulator, "fresh", "copied"))
    runners.append(runner)
    runner.start()
    await runner.ready()
    view = TimelineView(runner.trace, LATENCY)
    picked_up = changed(view, "phases")
    await runner.send_text("transfer to billing")
    await asyncio.wait_for(picked_up.wait(), 10)
    assert view.live  # the call goes on
    (strip,) = view.phases
    assert strip["mode"] == "fresh+copied" and strip["label"] == "fresh · copied"
    assert "connect" in [s["name"] for s in strip["segments"]]
    view.close()
    assert view._spans is not None and view._spans._poll is None  # closed: it looks no more


async def test_a_loaded_trace_shows_them_and_the_chip_names_the_mode_that_happened(
    emulator: Emulator, runners: list[NotebookRunner], tmp_path: Path
) -> None:
    call = await handed_off(runners, emulator, "fresh", "empty")
    saved = call.save(tmp_path / "call.jsonl")
    view = TimelineView(Trace.load(saved), LATENCY)
    assert not view.live
    assert_strip_of(view, the_handoff(call))
    # a trace whose handoff event read the session as reused, while a fresh one connected
    # during it: the strip, the legend and the figure's chip say what happened
    lines = [json.loads(line) for line in saved.open()]
    for line in lines:
        if line.get("kind") == "handoff" and line["data"]["from"]:
            line["data"]["session"] = "reused"
    misread = tmp_path / "misread.jsonl"
    misread.write_text("\n".join(json.dumps(line) for line in lines))
    view = TimelineView(Trace.load(misread), LATENCY)
    (chip,) = chips(view)
    assert chip["label"] == "reused · empty"  # the event's reading, as it crossed
    (strip,) = view.phases
    assert (strip["mode"], strip["label"]) == ("fresh+empty", "fresh · empty")  # drawn instead
    modes = [(e["key"], e["label"]) for e in view.legend if e["group"] == "mode"]
    assert modes == [("fresh+empty", "fresh · empty")]
    figure = view.to_figure()
    assert [c.get_text() for c in chip_texts(figure)] == ["fresh · empty"]
    assert_figure_strip(figure, strip)


Box = tuple[float, float, float, float]


def boxes(figure: Figure) -> list[tuple[PolyCollection, list[Box]]]:
    """Each bar collection of the figure with its bars' (left, right, top, bottom), in data."""
    (ax,) = figure.axes
    found = []
    for collection in ax.collections:
        if isinstance(collection, PolyCollection):
            corners = [np.asarray(path.vertices) for path in collection.get_paths()]
            found.append(
                (
                    collection,
                    [(c[:, 0].min(), c[:, 0].max(), c[:, 1].min(), c[:, 1].max()) for c in corners],
                )
            )
    return found


def assert_figure_strip(figure: Figure, strip: dict[str, Any]) -> None:
    """The figure draws the strip as the widget does: its segments in their colours, in
    order, at the top of the new agent's lane; each phase in the legend."""
    top = strip["lane"] + STRIP_Y
    (segments, bars) = next(
        (c, bars)
        for c, bars in boxes(figure)
        if len(bars) == len(strip["segments"]) and all(abs(b[2] - top) < 1e-9 for b in bars)
    )
    faces = np.asarray(segments.get_facecolor())
    assert [tuple(face) for face in faces] == [to_rgba(s["color"]) for s in strip["segments"]]
    assert [b[0] for b in bars] == sorted(b[0] for b in bars)
    assert all(abs(b[3] - top - STRIP_H) < 1e-9 for b in bars)
    (ax,) = figure.axes
    legend = ax.get_legend()
    assert legend is not None
    keys = {t.get_text() for t in legend.get_texts()}
    assert {f"phase: {s['name']}" for s in strip["segments"]} <= keys


def test_a_trace_without_spans_draws_as_before(tmp_path: Path) -> None:
    """An agent in another process (no spans cross), an old trace: no strip, the event's chip."""
    records = [e.to_record() for e in remote_handoff()]
    view = TimelineView(Trace.load(write_trace(tmp_path / "remote.jsonl", records)), LATENCY)
    assert view.phases == []
    assert [c["label"] for c in chips(view)] == ["mode unknown"]
    tops = {lane + STRIP_Y for lane in range(len(view.lanes))}
    bars = [bar for _, drawn in boxes(view.to_figure()) for bar in drawn]
    assert bars and not any(abs(bar[2] - top) < 1e-9 for bar in bars for top in tops)
    view.close()
