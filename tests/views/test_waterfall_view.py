"""WaterfallView, Python side: a wait's layout from its ``Breakdown`` (rows, parts, livekit's
figures, the unexplained rest, labels in ms), the widget's state from a live or loaded trace
(the waits listed, the one shown, picking another, the empty state), its refresh as the trace
grows (events, and spans that end after them), and the figure drawn from the same layouts."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import traitlets
from matplotlib.figure import Figure
from matplotlib.text import Text

from notebook_agents import NotebookRunner
from notebook_agents.analysis import Breakdown, Phase, breakdowns, handoff_phases
from notebook_agents.emulator import Emulator
from notebook_agents.trace import Trace, TraceSpan
from notebook_agents.views import TimelineView, WaterfallView
from notebook_agents.views import waterfall_view as module
from notebook_agents.views._waterfall_figure import waterfall_figure
from notebook_agents.views._waterfall_layout import (
    KEY,
    UNEXPLAINED_SHOWN_S,
    WATERFALL_COLORS,
    choice,
    wait_layout,
)
from tests.conftest import started
from tests.trace.test_trace_spans import handoff_server
from tests.views.test_figures import assert_readable_in_both_themes

T0 = 10.0
SPOKEN = Breakdown(
    kind="turn",
    label="turn 1 · spoken",
    agent="Ada",
    start=T0,
    end=T0 + 1.945,
    phases=(
        Phase(
            "end_of_turn",
            T0,
            T0 + 1.5,
            livekit=1.5,
            livekit_name="lk.end_of_turn_delay",
            note="livekit's endpointing delay: set min_endpointing_delay to change it",
        ),
        Phase(
            "final_transcript",
            T0 - 0.1,
            T0 + 0.97,
            critical=False,
            livekit=0.97,
            livekit_name="lk.transcription_delay",
        ),
        Phase(
            "llm_first_token", T0 + 1.5, T0 + 1.75, livekit=0.24, livekit_name="ttft", truth=0.04
        ),
        Phase("tts_first_byte", T0 + 1.75, T0 + 1.9, truth=0.03),
        Phase("first_audio", T0 + 1.9, T0 + 1.93),
    ),
    speech_id="speech_1",
    spoken=True,
    attributes={
        "lk.e2e_latency": 2.52,
        "lk.end_of_turn_delay": 1.5,
        "lk.transcription_delay": 0.97,
        "lk.speech.queue_wait": 0.002,
        "ttft": 0.3,
    },
)
"""a spoken turn: 1945 ms, its critical phases 1930 ms of it (15 ms unexplained, after the
last), the transcript in parallel from 100 ms before the wait; livekit's totals for it, two of
them the figures of its phases, one (``ttft``) not its phase's"""
HANDOFF = Breakdown(
    kind="handoff",
    label="Greeter → Weather · reused+copied",
    agent="Weather",
    start=20.0,
    end=20.3,
    phases=(
        Phase("drain", 20.0, 20.1),
        Phase("session_update", 20.1, 20.2, truth=0.06),
        Phase("first_text", 20.2, 20.3),
    ),
    mode="reused+copied",
)
"""a handoff its phases explain whole"""
OVERLAPPING = Breakdown(
    kind="turn",
    label="turn 3 · typed",
    agent="Ada",
    start=30.0,
    end=30.1,
    phases=(Phase("llm_first_token", 30.0, 30.08), Phase("first_text", 30.05, 30.1)),
)
"""critical phases 30 ms longer than the wait"""


def rows(breakdown: Breakdown) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in wait_layout(breakdown, 0)["rows"]}


def test_a_wait_is_laid_out_row_by_row_in_ms_from_its_start() -> None:
    layout = wait_layout(SPOKEN, 4)
    assert (layout["id"], layout["kind"], layout["title"]) == (4, "turn", "turn 1 · spoken · Ada")
    assert layout["subtitle"] == "the caller waited 1945 ms · from 10.00 s · speech_1"
    names = [row["name"] for row in layout["rows"]]
    # the wait, livekit's totals no phase shows, the phases in the order they began, the
    # unexplained rest
    assert names == [
        "wait",
        "livekit lk.speech.queue_wait",
        "livekit ttft",
        "final_transcript",
        "end_of_turn",
        "llm_first_token",
        "tts_first_byte",
        "first_audio",
        "unexplained",
    ]
    by_name = {row["name"]: row for row in layout["rows"]}
    wait = by_name["wait"]
    assert (wait["start_ms"], wait["end_ms"], wait["measured"]) == (0.0, 1945.0, "1945 ms")
    # livekit's e2e_latency is the wait's own figure, marked on its row as a phase's is
    assert wait["livekit"] == {"start_ms": 0.0, "end_ms": 2520.0}
    assert wait["livekit_text"] == "livekit 2520 ms"
    assert "livekit's figure: 2520 ms (lk.e2e_latency)" in wait["title"]
    total = by_name["livekit lk.speech.queue_wait"]
    assert total["livekit"] == {"start_ms": 0.0, "end_ms": 2.0} and total["segments"] == []
    assert total["livekit_text"] == "livekit 2.0 ms"
    assert total["title"].startswith("livekit lk.speech.queue_wait · ")  # the name whole
    # the axis holds every bar and line: from the transcript's start to livekit's 2520 ms
    axis = layout["axis"]
    assert axis["min_ms"] == -100.0 and axis["max_ms"] >= 2520.0
    assert axis["ticks"][0]["ms"] >= -100.0 and axis["ticks"][0]["label"].endswith(" ms")
    assert not any(tick["label"].endswith("ms") for tick in axis["ticks"][1:])


def test_a_phase_row_has_its_parts_livekits_figure_and_note() -> None:
    by_name = rows(SPOKEN)
    eot = by_name["end_of_turn"]
    assert eot["critical"] and (eot["start_ms"], eot["end_ms"]) == (0.0, 1500.0)
    assert eot["segments"] == [{"start_ms": 0.0, "end_ms": 1500.0, "part": "whole"}]
    assert eot["livekit"] == {"start_ms": 0.0, "end_ms": 1500.0}
    assert (eot["measured"], eot["livekit_text"], eot["truth_text"]) == (
        "1500 ms",
        "livekit 1500 ms",
        "",
    )
    assert eot["note"] == "livekit's endpointing delay: set min_endpointing_delay to change it"
    assert "livekit's figure: 1500 ms (lk.end_of_turn_delay)" in eot["title"]
    assert eot["note"] in eot["title"]
    # against the emulator: the network's share first, the client's after it
    llm = by_name["llm_first_token"]
    assert llm["segments"] == [
        {"start_ms": 1500.0, "end_ms": 1540.0, "part": "truth"},
        {"start_ms": 1540.0, "end_ms": 1750.0, "part": "client"},
    ]
    assert llm["truth_text"] == "net 40 ms · client 210 ms"
    assert llm["livekit"] == {"start_ms": 1500.0, "end_ms": 1740.0}
    # beside the critical path, before the wait began
    transcript = by_name["final_transcript"]
    assert not transcript["critical"] and transcript["start_ms"] == -100.0
    assert transcript["title"].startswith("final_transcript · in parallel, not added up\n−100 ms")


def test_the_unexplained_rest_is_drawn_where_no_critical_phase_is() -> None:
    rest = rows(SPOKEN)["unexplained"]
    assert rest["segments"] == [{"start_ms": 1930.0, "end_ms": 1945.0, "part": "gap"}]
    assert rest["measured"] == "15 ms"
    assert rest["title"].startswith("15 ms of the 1945 ms wait is in no critical phase")
    # a wait its phases explain whole has no such row
    assert "unexplained" not in rows(HANDOFF)
    # more phase than wait: said, not drawn
    over = rows(OVERLAPPING)["unexplained"]
    assert over["segments"] == [] and over["measured"] == "−30 ms"
    assert "add up to 30 ms more than the 100 ms wait" in over["title"]
    assert UNEXPLAINED_SHOWN_S <= 0.001


def test_a_handoff_is_titled_with_its_mode_in_the_timelines_colour() -> None:
    layout = wait_layout(HANDOFF, 0)
    assert layout["title"] == "Greeter → Weather · reused+copied"  # the agent is in the label
    assert layout["subtitle"].startswith("the handoff took 300 ms")
    assert layout["mode_color"] == "#0072B2"
    assert wait_layout(SPOKEN, 0)["mode_color"] is None
    # the legend names what the wait draws: here no parallel phase, no livekit figure
    assert [entry["part"] for entry in layout["key"]] == ["wait", "critical", "truth"]
    assert [entry["part"] for entry in wait_layout(SPOKEN, 0)["key"]] == list(KEY)
    assert choice(HANDOFF, 2) == {"id": 2, "text": "Greeter → Weather · reused+copied · 300 ms"}


Splitter = Callable[[Trace], list[Breakdown]]


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> Callable[[Splitter], None]:
    """Stand in for the splitters (phases.turns, phases.handoffs): the view reads what this
    gives it."""

    def use(splitter: Splitter) -> None:
        monkeypatch.setattr(module, "breakdowns", lambda trace, latency: splitter(trace))

    return use


def saved_and_loaded(tmp_path: Path) -> Trace:
    trace = Trace()
    trace._record("agent_state", {"old": "initializing", "new": "listening"}, agent="Ada")
    trace.save(tmp_path / "trace.jsonl")
    return Trace.load(tmp_path / "trace.jsonl")


def test_a_loaded_traces_waits_in_time_order_the_newest_shown(
    split: Callable[[Splitter], None], tmp_path: Path
) -> None:
    split(lambda _: [SPOKEN, HANDOFF, OVERLAPPING])
    view = WaterfallView(saved_and_loaded(tmp_path))
    assert not view.live and view.empty == ""
    assert [wait["id"] for wait in view.waits] == [0, 1, 2]
    assert view.waits[0] == choice(SPOKEN, 0)
    assert view.selected is None and view.shown == wait_layout(OVERLAPPING, 2)
    assert view.colors == WATERFALL_COLORS
    view.selected = 0  # as the browser's picker sets it
    assert view.shown == wait_layout(SPOKEN, 0)
    with pytest.raises(traitlets.TraitError, match=r"no wait 3: the view has 3 \(ids 0 to 2"):
        view.selected = 3
    assert view.shown == wait_layout(SPOKEN, 0)
    view.selected = None
    assert view.shown["id"] == 2


def test_a_wait_picked_as_the_view_is_made_is_shown(
    split: Callable[[Splitter], None], tmp_path: Path
) -> None:
    """``WaterfallView(trace, selected=0)``, as a notebook cell picks the wait it is about
    (an AttributeError before: the pick was checked before the view had split the trace)."""
    split(lambda _: [SPOKEN, HANDOFF, OVERLAPPING])
    view = WaterfallView(saved_and_loaded(tmp_path), selected=0)
    assert view.selected == 0 and view.shown == wait_layout(SPOKEN, 0)
    with pytest.raises(traitlets.TraitError, match=r"no wait 3: the view has 3 \(ids 0 to 2"):
        WaterfallView(saved_and_loaded(tmp_path), selected=3)


def test_a_wait_picked_and_split_no_more_gives_way_to_the_newest(
    split: Callable[[Splitter], None], tmp_path: Path
) -> None:
    split(lambda _: [SPOKEN, HANDOFF, OVERLAPPING])
    view = WaterfallView(saved_and_loaded(tmp_path))
    view.set_trait("selected", 2)  # as the browser's picker sets it
    split(lambda _: [SPOKEN, HANDOFF])  # a splitter that now finds one wait fewer
    view._flush()
    assert view.selected is None and view.shown == wait_layout(HANDOFF, 1)


def test_a_view_without_waits_says_so(tmp_path: Path) -> None:
    live = WaterfallView(Trace())
    assert (live.waits, live.shown, live.live) == ([], {}, True)
    assert live.empty.startswith("No turn or handoff yet")
    loaded = WaterfallView(saved_and_loaded(tmp_path))
    assert loaded.empty == "No turn or handoff in this trace to split into phases."
    figure = loaded.to_figure()
    assert loaded.empty in [t.get_text() for t in figure.findobj(Text)]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_view_takes_a_runner_or_a_trace_and_says_so_otherwise() -> None:
    with pytest.raises(TypeError, match=r"a runner \(NotebookRunner, AgentProcess\) or a Trace"):
        WaterfallView("trace.jsonl")  # type: ignore[arg-type]
    gc.collect()  # the refused view, closed as it goes, has nothing to undo (no error)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_views_and_phases_take_the_network_as_a_latency_model_and_say_so_otherwise() -> None:
    """An RTT given as a number was an AttributeError ('int' object has no attribute
    'item_ack_s'), from the views only once they split the trace."""
    fix = r"pass LatencyModel\(rtt_ms=20\) \(from notebook_agents import LatencyModel\)"
    for make in (WaterfallView, TimelineView, handoff_phases):
        with pytest.raises(TypeError, match=fix):
            make(Trace(), 20)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"TimelineView takes a Trace \(runner.trace"):
        TimelineView("trace.jsonl")  # type: ignore[arg-type]
    gc.collect()


def turns(trace: Trace) -> list[Breakdown]:
    """A splitter for the tests: a wait from each ``thinking`` to the ``speaking`` after it."""
    found: list[Breakdown] = []
    began: float | None = None
    for event in trace.events:
        if event.kind != "agent_state":
            continue
        if event.data["new"] == "thinking":
            began = event.t
        elif event.data["new"] == "speaking" and began is not None:
            phase = Phase("think", began, event.t)
            found.append(
                Breakdown("turn", f"turn {len(found) + 1}", "Ada", began, event.t, (phase,))
            )
    return found


def changes(view: WaterfallView, name: str) -> asyncio.Event:
    changed = asyncio.Event()
    view.observe(lambda _: changed.set(), names=name)
    return changed


async def test_a_live_view_lists_the_newest_first_and_follows_it(
    split: Callable[[Splitter], None],
) -> None:
    split(turns)
    trace = Trace()
    view = WaterfallView(trace)
    for turn in range(3):
        listed = changes(view, "waits")
        trace._record("agent_state", {"old": "listening", "new": "thinking"}, agent="Ada")
        trace._record("agent_state", {"old": "thinking", "new": "speaking"}, agent="Ada")
        await asyncio.wait_for(listed.wait(), 5)
        assert [wait["id"] for wait in view.waits] == list(reversed(range(turn + 1)))
        assert view.shown["label"] == f"turn {turn + 1}"  # the newest, while none is picked
    view.selected = 1
    closed = changes(view, "live")
    trace.record_closed("user_initiated")
    await asyncio.wait_for(closed.wait(), 5)
    # once closed: in time order, and still the one picked
    assert [wait["id"] for wait in view.waits] == [0, 1, 2]
    assert view.shown["label"] == "turn 2"
    view.close()


def span(name: str, start: float, end: float) -> TraceSpan:
    """A span as livekit's ``agent_turn`` leaves it: no parent, no attributes."""
    span_id = f"{int(start * 1000):016x}"
    return TraceSpan(
        name,
        "0" * 32,
        span_id,
        None,
        start,
        end,
        "livekit-agents",
        "internal",
        "unset",
        None,
        {},
        [],
    )


async def test_a_live_view_sees_spans_that_end_after_the_last_event(
    split: Callable[[Splitter], None],
) -> None:
    """A turn's span closes after its events, and no event follows it: the view looks again."""
    split(lambda trace: [Breakdown("turn", s.name, "Ada", s.start, s.end) for s in trace.spans])
    trace = Trace()
    view = WaterfallView(trace)
    assert view.waits == []
    listed = changes(view, "waits")
    trace._add_span(span("agent_turn", 1.0, 1.4))
    await asyncio.wait_for(listed.wait(), 5)
    assert view.shown["label"] == "agent_turn" and view.shown["subtitle"].startswith(
        "the caller waited 400 ms"
    )
    view.close()
    assert view._spans is not None and view._spans._poll is None  # closed: it looks no more


async def test_a_runners_view_shows_what_the_trace_splits_into(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """A real runner's turns and handoff: the view shows the waits ``breakdowns`` finds in its
    trace, each handoff phase with its truth from the network it was given; after the call, as
    a replay."""
    runner = await started(runners, NotebookRunner(handoff_server(emulator)))
    network = emulator.settings.latency
    view = WaterfallView(runner, network)
    assert view.trace is runner.trace and view.live
    await runner.send_text("what is 2 plus 3")
    await runner.send_text("transfer to billing")
    closed = changes(view, "live")
    runner.stop()
    await asyncio.wait_for(closed.wait(), 10)
    view._flush()  # the spans the stop ended, without waiting for the view's next look
    found = breakdowns(runner.trace, network)
    assert view.breakdowns == found
    assert [b.kind for b in found].count("handoff") == 1
    (handoff,) = [b for b in found if b.kind == "handoff"]
    assert all(phase.truth is not None for phase in handoff.phases)
    assert view.waits == [choice(b, i) for i, b in enumerate(found)]
    assert view.shown == wait_layout(found[-1], len(found) - 1) and view.empty == ""
    view.close()


def texts(figure: Figure) -> list[str]:
    return [t.get_text() for t in figure.findobj(Text)]


def test_the_figure_draws_the_wait_shown_one_picked_or_all(
    split: Callable[[Splitter], None], tmp_path: Path
) -> None:
    split(lambda _: [SPOKEN, HANDOFF])
    view = WaterfallView(saved_and_loaded(tmp_path))
    shown = texts(view.to_figure())
    assert "Greeter → Weather · reused+copied" in shown and "turn 1 · spoken · Ada" not in shown
    spoken = texts(view.to_figure(0))
    expected = ["turn 1 · spoken · Ada", "1945 ms", "livekit 2520 ms", "unexplained", "15 ms"]
    expected += ["final_transcript (parallel)", "net 40 ms · client 210 ms"]
    assert set(expected) <= set(spoken)
    assert any(t.startswith("livekit's endpointing delay") for t in spoken)
    both = view.to_figure("all")
    assert len(both.axes) == 2
    assert {"turn 1 · spoken · Ada", "Greeter → Weather · reused+copied"} <= set(texts(both))
    with pytest.raises(ValueError, match=r"no wait 2: the view has 2 .* or pass wait='all'"):
        view.to_figure(2)


@pytest.mark.parametrize(
    "waits", [[SPOKEN], [HANDOFF, OVERLAPPING], []], ids=["spoken", "handoff-and-typed", "none"]
)
def test_the_waterfall_figure_reads_in_both_themes(waits: list[Breakdown]) -> None:
    layouts = [wait_layout(wait, i) for i, wait in enumerate(waits)]
    assert_readable_in_both_themes(waterfall_figure(layouts, "No turn or handoff yet"))
