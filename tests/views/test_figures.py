"""Every view's ``to_figure()`` and every benchmark plot as a notebook shows it (the PNG
IPython's inline backend makes): laid out without a warning at any size, and readable in
JupyterLab's light and dark theme."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.pylabtools import print_figure
from matplotlib.axes import Axes
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.image import imread
from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox, BboxBase

from notebook_agents import NotebookRunner, Trace
from notebook_agents.bench import BenchmarkConfig
from notebook_agents.emulator import Emulator
from notebook_agents.suites import Outcome, ScenarioResult, SuiteResult
from notebook_agents.trace import EventKind, TraceEvent
from notebook_agents.views import AgentGraphView, BenchmarkView, ChatView, StateView, SuiteView
from notebook_agents.views._timeline_figure import timeline_figure
from notebook_agents.views._timeline_layout import TimelineLayout
from tests.bench.test_bench_plots import PLOTS, emulator_result, result, trial
from tests.handoff_agents import Support
from tests.views.test_benchmark_view import synthetic
from tests.views.test_chat_view import finished, said, two_agent_server
from tests.views.test_timeline_view import contrast, four_handoffs, write_trace

PAGES = {"light": "#ffffff", "dark": "#111111"}
"""JupyterLab's page (--jp-layout-color0) in each theme: what a transparent figure shows"""
TEXT_CONTRAST = 4.0
"""the least contrast of a text on either page: one grey cannot reach WCAG's 4.5 on both (the
best is 4.35), so a text on the page gets 4.0, one on its own box 4.5"""
LINE_CONTRAST = 3.0
"""WCAG's non-text contrast, for the axes, ticks and arrows drawn on the page"""
LANE_INCHES = 0.5
"""the least height of a timeline lane: half an inch, whatever the legend holds"""


def shown(figure: Figure) -> np.ndarray:
    """``figure`` as IPython's inline backend sends it to the notebook (RGBA pixels); any
    warning while it is laid out fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = print_figure(figure, "png")
    assert png is not None, "IPython shows nothing for a figure without axes"
    return np.asarray(imread(io.BytesIO(png), format="png"))


def assert_readable_in_both_themes(figure: Figure) -> None:
    """No background of its own (a white block on the dark page), every text readable where it
    is drawn, the axes' lines visible on both pages."""
    pixels = shown(figure)
    clear = float(np.mean(pixels[..., 3] == 0))
    assert clear > 0.5, f"only {clear:.0%} of the picture lets the page through"
    unreadable = []
    for text in figure.findobj(Text):
        if not (text.get_visible() and text.get_text().strip()) or text.figure is None:
            continue
        color = to_hex(text.get_color())
        backing = box_under(text)
        if backing is not None:
            if contrast(color, backing) < 4.5:
                unreadable.append(f"{text.get_text()!r}: {color} on its box {backing}")
            continue
        for theme, page in PAGES.items():
            if contrast(color, page) < TEXT_CONTRAST:
                unreadable.append(f"{text.get_text()!r}: {color} on the {theme} page")
    assert unreadable == []
    for ax in figure.axes:
        lines = [spine.get_edgecolor() for spine in ax.spines.values() if spine.get_visible()]
        lines += [t.get_color() for t in ax.xaxis.get_ticklines() + ax.yaxis.get_ticklines()]
        lines += [
            a.arrow_patch.get_edgecolor()
            for a in ax.texts
            if isinstance(a, Annotation) and a.arrow_patch is not None
        ]
        for color in map(to_hex, lines):
            for page in PAGES.values():
                assert contrast(color, page) >= LINE_CONTRAST, f"a line in {color} on {page}"


def box_under(text: Text) -> str | None:
    """The opaque colour ``text`` is drawn on: its own box, or the topmost opaque patch of its
    axes that holds it whole; None when it is drawn on the page."""
    own = text.get_bbox_patch()
    if own is not None:
        return to_hex(own.get_facecolor())
    ax = text.axes
    if ax is None:
        return None
    where = text.get_window_extent()
    under = [
        patch
        for patch in ax.patches
        if isinstance(patch, FancyBboxPatch | Rectangle)  # boxes, not an arrow's extent
        and to_rgba(patch.get_facecolor())[3] > 0.5
        and contains(patch.get_window_extent(), where)
    ]
    # the topmost: the highest zorder, drawn last among equals
    top = max(reversed(under), key=Patch.get_zorder, default=None)
    return None if top is None else to_hex(top.get_facecolor())


def contains(outer: BboxBase, inner: BboxBase) -> bool:
    inside_x = outer.x0 <= inner.x0 and inner.x1 <= outer.x1
    return bool(inside_x and outer.y0 <= inner.y0 and inner.y1 <= outer.y1)


# -- the timeline ---------------------------------------------------------------------------


def busy_trace(turns: int) -> list[TraceEvent]:
    """Two agents handing the caller back and forth ``turns`` times, with every kind of mark,
    every handoff mode and every agent state: the legend's every entry (notebook 03's call and
    its failures drew 15 and collapsed the axes)."""
    modes = [("reused", "copied"), ("reused", "own"), ("reused", "empty"), ("fresh", "copied"),
             ("fresh", "own"), ("fresh", "empty"), ("none", "copied")]  # fmt: skip
    lanes = ("Greeter", "Weather")
    events: list[TraceEvent] = []
    t = 0.0

    def add(kind: EventKind, agent: str | None, data: dict[str, Any]) -> None:
        nonlocal t
        events.append(TraceEvent(len(events), t, kind, agent, data))
        t += 0.05

    add("handoff", "Greeter", {"from": None, "to": "Greeter"})
    add("agent_state", "Greeter", {"old": "initializing", "new": "listening"})
    for turn in range(turns):
        here, there = lanes[turn % 2], lanes[(turn + 1) % 2]
        call = {"name": "transfer", "call_id": f"c{turn}", "arguments": "{}"}
        session, context = modes[turn % len(modes)]
        add("user_message", here, {"text": f"turn {turn}", "item_id": f"u{turn}"})
        add("agent_state", here, {"old": "listening", "new": "thinking"})
        add("tool_call", here, call)
        add("tool_output", here, {**call, "output": "ok", "is_error": turn % 3 == 0})
        add("handoff", there, {"from": here, "to": there, "session": session, "context": context})
        add("agent_state", there, {"old": "thinking", "new": "speaking"})
        add("agent_message", there, {"text": "hi", "item_id": f"e{turn}", "phase": "on_enter"})
        add("agent_state", there, {"old": "speaking", "new": "listening"})
        add("context_changed", there, {"items": []})
        add("error", there, {"source": "llm", "message": "boom"})
        parted = {"agent": there, "message": "apart", "missing": [], "extra": [], "order": True,
                  "livekit": [], "model": []}  # fmt: skip
        add("context_diverged", there, parted)
        add("context_converged", there, {"agent": there, "items": 1})
        add("agent_message", there, {"text": "answer", "item_id": f"a{turn}", "phase": "turn"})
        t += 0.5
    add("closed", None, {})
    return events


def assert_lanes_readable_beside_their_legend(figure: Figure, lanes: int) -> None:
    shown(figure)  # laid out as the notebook shows it, without a warning
    figure.draw_without_rendering()  # positions on the page, uncropped
    (ax,) = figure.axes
    height = ax.bbox.height / figure.dpi
    assert height >= LANE_INCHES * lanes, f"{lanes} lanes in {height:.2f} in"
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent()
    assert contains(figure.bbox, box), "the legend leaves the picture"
    taken = [ax.bbox, ax.title.get_window_extent(), *axis_decorations(ax)]
    assert not any(box.overlaps(other) for other in taken), "the legend covers the plot"


def axis_decorations(ax: Axes) -> list[Bbox]:
    """Where the axes' tick labels and axis labels are drawn."""
    texts = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label]
    return [t.get_window_extent() for t in texts if t.get_text()]


@pytest.mark.parametrize("turns", [1, 8, 60], ids=["short", "notebook-03", "long"])
def test_the_timeline_figure_keeps_its_lanes_beside_a_full_legend(turns: int) -> None:
    layout = TimelineLayout(busy_trace(turns))
    if turns > 1:
        assert len(layout.legend) >= 15
    figure = timeline_figure(layout)
    assert_lanes_readable_beside_their_legend(figure, lanes=len(layout.analysis.lanes))
    assert_readable_in_both_themes(figure)


def test_the_timeline_figure_of_one_event_and_of_none() -> None:
    one = [TraceEvent(0, 0.0, "handoff", "A", {"from": None, "to": "A"})]
    assert_lanes_readable_beside_their_legend(timeline_figure(TimelineLayout(one)), lanes=1)
    assert_readable_in_both_themes(timeline_figure(TimelineLayout(one)))
    assert_readable_in_both_themes(timeline_figure(TimelineLayout()))


def test_the_timeline_figure_of_a_saved_trace_with_four_quick_handoffs(tmp_path: Path) -> None:
    trace = Trace.load(write_trace(tmp_path / "four.jsonl", four_handoffs()))
    figure = timeline_figure(TimelineLayout(trace.events))
    assert_lanes_readable_beside_their_legend(figure, lanes=3)
    assert_readable_in_both_themes(figure)


def one_quick_handoff(back: bool) -> list[TraceEvent]:
    """A caller handed from Greeter to Weather, whose first words come 30 ms later; ``back``:
    then handed back up to Greeter, as quickly (its arrow points up, the first one down)."""
    hops = [("Greeter", "Weather", 1.0)] + ([("Weather", "Greeter", 1.5)] if back else [])
    events = [TraceEvent(0, 0.0, "handoff", "Greeter", {"from": None, "to": "Greeter"})]
    for source, target, t in hops:
        mode = {"from": source, "to": target, "session": "reused", "context": "copied"}
        said = {"text": "hi", "item_id": f"{target}-{t}", "phase": "on_enter"}
        events += [
            TraceEvent(len(events), t, "handoff", target, mode),
            TraceEvent(len(events) + 1, t + 0.03, "agent_message", target, said),
        ]
    return events


@pytest.mark.parametrize("back", [False, True], ids=["down", "down-and-up"])
def test_a_bring_up_label_keeps_clear_of_its_handoff_arrow(back: bool) -> None:
    """notebook 03's "30 ms" was cut by the arrow it starts at."""
    layout = TimelineLayout(one_quick_handoff(back))
    figure = timeline_figure(layout)
    shown(figure)
    figure.draw_without_rendering()
    (ax,) = figure.axes
    labels = [t for t in ax.texts if t.get_text().strip().endswith(" ms")]
    assert [t.get_text().strip() for t in labels] == ["30 ms"] * len(layout.analysis.handoffs[1:])
    arrows = [
        a.arrow_patch.get_window_extent()
        for a in ax.texts
        if isinstance(a, Annotation) and a.arrow_patch is not None
    ]
    assert len(arrows) == len(labels)
    for label in labels:
        for arrow in arrows:
            assert not label.get_window_extent().overlaps(arrow), f"{label.get_text()!r}"


# -- the other views ------------------------------------------------------------------------


def test_the_state_figure_reads_in_both_themes(tmp_path: Path) -> None:
    assert_readable_in_both_themes(StateView(Trace()).to_figure())
    loaded = Trace.load(write_trace(tmp_path / "four.jsonl", four_handoffs()))
    figure = StateView(loaded).to_figure()
    assert "session closed" in [t.get_text() for t in figure.axes[0].texts]
    assert_readable_in_both_themes(figure)


def test_the_graph_figure_reads_in_both_themes() -> None:
    assert_readable_in_both_themes(AgentGraphView([]).to_figure())
    view = AgentGraphView([Support])
    view.current = "Billing"
    assert_readable_in_both_themes(view.to_figure())


def test_the_benchmark_figure_reads_in_both_themes() -> None:
    assert_readable_in_both_themes(BenchmarkView(BenchmarkConfig()).to_figure())
    figure = BenchmarkView(synthetic([0.0, 20.0, 100.0], trials=3)).to_figure()
    assert len(figure.axes) == 3
    assert_readable_in_both_themes(figure)


async def test_the_chat_figure_reads_in_both_themes(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(two_agent_server(emulator)).start()
    runners.append(runner)
    view = ChatView(runner)
    assert_readable_in_both_themes(view.to_figure())  # no messages yet
    await runner.ready()
    turn = view.say("please transfer to bob")
    assert turn is not None
    await finished(view, turn, said(view, "Bob here."))
    figure = view.to_figure()
    lines = [t.get_text() for t in figure.axes[0].texts]
    assert any("Alice → Bob" in line for line in lines) and any("you:" in ln for ln in lines)
    assert_readable_in_both_themes(figure)


def suite_result() -> SuiteResult:
    """A scenario of each outcome, as run_suite words them; the failure with livekit's whole
    message (a line, then its context), a label and an expectation longer than their columns."""
    failed = ScenarioResult(
        "greeter looks up the weather for a caller who wants to know about the rain in Paris",
        Outcome.FAILED,
        expectation='contains_function_call(name="lookup_weather", arguments={"location": '
        '"Paris", "units": "celsius"})',
        turn=1,
        seconds=4.25,
    )
    failed.reason = (
        f"turn 1 (spoken: paris.wav): {failed.expectation}\n"
        "No FunctionCallEvent satisfying criteria found in range slice(None, None, None)\n"
        "Context around failure:\n>>> [0] ChatMessageEvent(item={'role': 'assistant'})"
    )
    return SuiteResult(
        "Greeter and weather",
        [
            ScenarioResult("hands off to weather", Outcome.PASSED, seconds=3.5),
            failed,
            ScenarioResult(
                "the agent crashes",
                Outcome.ERROR,
                "turn 0 (hello): the turn went wrong: boom (no reply)",
                turn=0,
                seconds=1.0,
            ),
            ScenarioResult(
                "caller asks about the weather",
                Outcome.NOT_RUNNABLE,
                "a simulated user plays it (`instructions`, an LLM in LiveKit Cloud's "
                "simulator): script its `turns:` to run it here",
            ),
        ],
    )


def test_the_suite_figure_shows_each_outcome_its_first_failure_and_time() -> None:
    figure = SuiteView(suite_result()).to_figure()
    assert_readable_in_both_themes(figure)
    texts = [t for t in figure.axes[0].texts if t.get_text().strip()]
    words = [t.get_text() for t in texts]
    assert words[:5] == [
        "Greeter and weather: 1 passed, 1 failed, 1 error, 1 not runnable",
        *("scenario", "outcome", "first failing expectation", "time"),
    ]
    outcomes = [w for w in words if w in {o.value for o in Outcome}]
    assert outcomes == ["passed", "failed", "error", "not runnable"]
    # the failing expectation as written and livekit's message; why the others did not pass
    assert 'turn 1: contains_function_call(name="lookup_weather", arguments={"location"…' in words
    assert (
        "No FunctionCallEvent satisfying criteria found in range slice(None, None, None)" in words
    )
    assert "turn 0 (hello): the turn went wrong: boom (no reply)" in words
    assert [w for w in words if w.endswith(" s")] == ["3.50 s", "4.25 s", "1.00 s", "0.00 s"]
    # every text whole in the picture, none over another (long ones cut to their column)
    figure.draw_without_rendering()
    boxes = [t.get_window_extent() for t in texts]
    assert all(contains(figure.bbox, box) for box in boxes)
    for index, box in enumerate(boxes):
        over = [words[j] for j in range(index + 1, len(boxes)) if box.overlaps(boxes[j])]
        assert over == [], f"{words[index]!r} is drawn over {over}"


def test_the_figure_of_an_empty_suite_reads_in_both_themes() -> None:
    figure = SuiteView(SuiteResult("nothing yet")).to_figure()
    assert_readable_in_both_themes(figure)
    assert "nothing yet: no scenarios" in [t.get_text() for t in figure.axes[0].texts]


# -- the benchmark's plots ------------------------------------------------------------------


@pytest.mark.parametrize("name", PLOTS)
def test_each_bench_plot_reads_in_both_themes(name: str) -> None:
    """Notebook 02 shows ``plot_cost_vs_rtt``: it was a white block in the dark theme."""
    plot = PLOTS[name]
    assert_readable_in_both_themes(plot(emulator_result(histories=(0, 10)), "reply_ms"))
    failed = [trial(rtt, 10, 0, "fresh", "empty", ok=False, error="timeout") for rtt in (0, 20)]
    nothing = result(failed, target="emulator")  # "no successful trials"
    assert_readable_in_both_themes(plot(nothing, "reply_ms"))
