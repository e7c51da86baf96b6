"""The timeline as a matplotlib figure, drawn from the same ``TimelineLayout`` as the widget:
lanes, state bars, marks, handoff arrows with their mode chips (in rows above the lanes, so
none covers another), bring-up bands, each handoff's phases as a strip, idle gaps shortened and
marked, and the layout's legend.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from .._figure_style import INK, static_figure
from ..analysis import TraceAnalysis, milliseconds
from ._timeline_layout import (
    BRING_UP,
    MARK_STYLES,
    SPEECH_COLORS,
    TimelineLayout,
    ink,
    mode_color,
    mode_text,
    state_color,
)

MARKERS = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D", "cross": "X"}
"""matplotlib's marker for each shape of ``MARK_STYLES``"""
MARK_PT = 6.0
"""a mark's width in points (scatter sizes are its square)"""
MARK_GAP_PT = 9.0
"""centres of marks closer in time than this are stacked this far apart: a width and a hair"""
MARK_Y = 0.2
"""where a lane's marks sit, below its centre; close ones stack upwards from here"""
BRING_UP_LABEL_PT = 4.0
"""a bring-up's label starts this far right of where it starts, its handoff's arrow: clear of
the arrow's head (2 pt each side of it) whichever way the arrow points"""
GAP_SHARE = 0.06
"""an idle gap's width on the axis, as a share of the time something happened"""
LABEL_ROW = 0.34
"""height of a row of handoff chips above the lanes, in lanes"""
CHIP_GAP_PX = 4.0
"""the least room between two chips in a row"""
WIDTH_IN = 9.0
"""the figure's width; its height follows from the lanes, the chip rows and the legend"""
LANE_IN = 0.7
"""a lane's height: its state bar, speech bar and marks, whatever else the figure holds"""
PAD_IN = 0.1
"""the margin around the figure's parts, and between the x axis and the legend"""
RIGHT_IN = 0.3
"""room right of the plot for the last tick label's overhang"""
STRIP_Y, STRIP_H = -0.47, 0.08
"""a handoff's phases: a strip at the top of the new agent's lane, above its state bar (a
lane runs from -0.5 to 0.5 about its centre, the state bar from -0.35)"""


class _Axis:
    """Trace time to a position on the x axis: each idle gap drawn ``GAP_SHARE`` of the
    active time wide, the rest as it is."""

    def __init__(self, analysis: TraceAnalysis) -> None:
        self.gaps = analysis.gaps
        self.start = analysis.start or 0.0
        self.end = analysis.end or 0.0
        active = self.end - self.start - sum(gap.seconds for gap in self.gaps)
        self.shown = max(active * GAP_SHARE, 1e-3)

    def __call__(self, t: float) -> float:
        shift = 0.0
        for gap in self.gaps:
            if t <= gap.start:
                break
            if t < gap.end:
                return gap.start - shift + self.shown * (t - gap.start) / gap.seconds
            shift += gap.seconds - self.shown
        return t - shift

    def segments(self) -> list[tuple[float, float]]:
        """The stretches between the gaps, in trace time."""
        edges = [self.start, *(t for gap in self.gaps for t in (gap.start, gap.end)), self.end]
        return list(zip(edges[::2], edges[1::2], strict=True))


def timeline_figure(layout: TimelineLayout) -> Figure:
    """``layout`` as a static picture, for a notebook page of either theme."""
    with static_figure():
        return _timeline_figure(layout)


def _timeline_figure(layout: TimelineLayout) -> Figure:
    analysis = layout.analysis
    lanes = analysis.lanes
    # laid out by hand below, not by a layout engine: constrained layout squeezed the lanes
    # to nothing under a long legend; here each lane gets its height and the figure grows
    figure = Figure(figsize=(WIDTH_IN, 1.0))
    ax = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    if not lanes:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no events yet", ha="center", va="center", transform=ax.transAxes)
        return figure
    x = _Axis(analysis)
    for bring_up in analysis.bring_ups:
        lane, start = analysis.lane(bring_up.agent), x(bring_up.start)
        ax.broken_barh(
            [(start, x(bring_up.end) - start)], (lane - 0.45, 0.9), color=BRING_UP, alpha=0.15
        )
        ax.annotate(
            milliseconds(bring_up.seconds),
            (start, lane + 0.05),
            xytext=(BRING_UP_LABEL_PT, 0),
            textcoords="offset points",
            fontsize=7,
            color=BRING_UP,
        )
    for span in analysis.state_spans():
        start = x(span.start)
        lane = analysis.lane(span.agent)
        ax.broken_barh(
            [(start, x(span.end) - start)], (lane - 0.35, 0.3), color=state_color(span.state)
        )
    for speech in analysis.speech:  # a thin bar under the states, as the widget draws it
        start = x(speech.start)
        lane = analysis.lane(speech.agent)
        color = SPEECH_COLORS[speech.speaker]
        ax.broken_barh([(start, x(speech.end) - start)], (lane - 0.02, 0.07), color=color)
    for gap in layout.gaps:
        _draw_gap(ax, x, gap, len(lanes))
    _draw_phases(ax, layout, x)
    drawn = _draw_marks(ax, layout, x)
    chips = _draw_handoffs(ax, layout, x) + _draw_race_marks(ax, layout, x)
    pad = (x(x.end) - x(x.start)) * 0.02 or 0.05
    ax.set_xlim(x(x.start) - pad, x(x.end) + pad)
    _ticks(ax, x)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xlabel("trace time (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("agent timeline", fontsize=10)
    _lay_out(figure, ax, _legend(layout) + _phase_keys(layout), chips, len(lanes))
    _stack_close_marks(ax, drawn)
    return figure


def _lay_out(
    figure: Figure, ax: Axes, handles: list[Line2D | Patch], chips: Chips, lanes: int
) -> None:
    """Size the figure around its parts, measured: the lane names left of the plot, the title
    above it, the x axis and then the legend (in as many columns as fit) under it; the plot
    ``LANE_IN`` a lane and a row for each row of chips."""
    dpi = figure.dpi
    pad = PAD_IN * dpi
    width = WIDTH_IN * dpi
    left = pad + ax.yaxis.get_tightbbox().width  # type: ignore[union-attr]
    plot_width = width - left - RIGHT_IN * dpi
    legend = _fitted_legend(ax, handles, room=width - left - pad)
    # the chips' rows depend on where the plot's x axis falls on the page, not on its height
    ax.set_position((left / width, 0.0, plot_width / width, 1.0))
    rows = _place_chips(ax, chips)
    ax.set_ylim(lanes - 0.4, -0.6 - LABEL_ROW * rows)
    plot_height = (lanes + 0.2 + LABEL_ROW * rows) * LANE_IN * dpi
    above = ax.title.get_window_extent().y1 - ax.bbox.y1
    below = ax.bbox.y0 - ax.xaxis.get_tightbbox().y0  # type: ignore[union-attr]
    legend_height = legend.get_window_extent().height
    height = pad + above + plot_height + below + pad + legend_height + pad
    figure.set_size_inches(WIDTH_IN, height / dpi)
    bottom = pad + legend_height + pad + below
    ax.set_position((left / width, bottom / height, plot_width / width, plot_height / height))
    legend.set_bbox_to_anchor((left / width, pad / height), transform=figure.transFigure)


def _fitted_legend(ax: Axes, handles: list[Line2D | Patch], room: float) -> Legend:
    """The legend in as many columns as fit ``room`` pixels, its rows evenly filled."""

    def legend(columns: int) -> Legend:
        return ax.legend(
            handles=handles,
            loc="lower left",
            ncols=columns,
            fontsize=8,
            frameon=False,
            borderaxespad=0.0,  # placed by _lay_out, which leaves the room around it
        )

    column = legend(1).get_window_extent().width
    columns = max(1, min(len(handles), int(room // column)))
    columns = math.ceil(len(handles) / math.ceil(len(handles) / columns))  # the rows even
    fitted = legend(columns)
    while columns > 1 and fitted.get_window_extent().width > room:
        columns -= 1
        fitted = legend(columns)
    return fitted


def _draw_gap(ax: Axes, x: _Axis, gap: dict[str, Any], lanes: int) -> None:
    """A hatched band where time was shortened, labelled with how long nothing happened."""
    start, end = x(gap["start"]), x(gap["end"])
    ax.axvspan(start, end, color="#94a3b8", alpha=0.25, hatch="//", lw=0)
    ax.text(
        (start + end) / 2,
        lanes - 0.45,
        gap["label"],
        fontsize=7,
        ha="center",
        va="bottom",
        color=INK,
    )


def _ticks(ax: Axes, x: _Axis) -> None:
    """Ticks at round trace times inside each stretch between gaps, none inside a gap."""
    left, right = ax.get_xlim()
    values = MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(0, right - left)
    step = float(values[1] - values[0])
    digits = max(0, -math.floor(math.log10(step)))
    positions, labels = [], []
    for start, end in x.segments():
        for k in range(math.ceil(start / step - 1e-9), math.floor(end / step + 1e-9) + 1):
            positions.append(x(k * step))
            labels.append(f"{k * step:.{digits}f}")
    ax.set_xticks(positions, labels)


Scatters = list[tuple[PathCollection, list[tuple[float, int]]]]
"""each scatter of marks with its marks' (position, lane), in drawing order"""


def _draw_marks(ax: Axes, layout: TimelineLayout, x: _Axis) -> Scatters:
    """A scatter per style of mark, every mark at its time; returns each scatter with its
    marks' (position, lane)."""
    drawn: Scatters = []
    for key, style in MARK_STYLES.items():
        marks = [(x(mark.t), mark.lane) for mark in layout.marks if mark.style == key]
        if not marks:
            continue
        scatter = ax.scatter(
            [position for position, _ in marks],
            [lane + MARK_Y for _, lane in marks],
            marker=MARKERS[style.shape],
            s=MARK_PT**2,
            facecolors="none" if style.hollow else style.color,  # the page shows through
            edgecolors=style.color,
            linewidths=1.5,
            zorder=3,
        )
        drawn.append((scatter, marks))
    return drawn


def _stack_close_marks(ax: Axes, drawn: Scatters) -> None:
    """Stack a lane's marks that are closer in time than a mark's width upwards, so a user
    message is not hidden under the reply drawn milliseconds later."""
    origin, unit = ax.transData.transform([(0.0, 0.0), (1.0, 1.0)])
    gap_px = MARK_GAP_PT * ax.figure.dpi / 72
    min_dx = gap_px / abs(unit[0] - origin[0])  # axis units a mark covers on the page
    step = gap_px / abs(unit[1] - origin[1])  # lane units between stacked marks
    slots = 1 + int((MARK_Y + 0.4) / step)  # as many as fit above, inside the lane
    by_lane: dict[int, list[tuple[float, int, int]]] = {}
    for group, (_, marks) in enumerate(drawn):
        for index, (position, lane) in enumerate(marks):
            by_lane.setdefault(lane, []).append((position, group, index))
    heights = [[lane + MARK_Y for _, lane in marks] for _, marks in drawn]
    for lane, close in by_lane.items():
        close.sort()
        chosen = rows(((p, p + min_dx) for p, _, _ in close), limit=slots)
        for (_, group, index), slot in zip(close, chosen, strict=True):
            heights[group][index] = lane + MARK_Y - slot * step
    for (scatter, marks), ys in zip(drawn, heights, strict=True):
        scatter.set_offsets([(p, y) for (p, _), y in zip(marks, ys, strict=True)])


def rows(extents: Iterable[tuple[float, float]], limit: int | None = None) -> list[int]:
    """For ``(start, end)`` extents sorted by start, the row of each: the lowest whose last
    extent ended by its start. Past ``limit`` rows, the one freed longest ago is shared."""
    ends: list[float] = []
    chosen: list[int] = []
    for start, end in extents:
        free = next((k for k, before in enumerate(ends) if start >= before), None)
        if free is None and (limit is None or len(ends) < limit):
            free = len(ends)
            ends.append(end)
        elif free is None:
            free = min(range(len(ends)), key=ends.__getitem__)
        ends[free] = end
        chosen.append(free)
    return chosen


Chips = list[tuple[Text, Line2D, float]]
"""each handoff's (or race mark's) chip, the line leading from it to its arrow (or lane),
and the arrow's top (or the lane's)"""


def _draw_phases(ax: Axes, layout: TimelineLayout, x: _Axis) -> None:
    """Each handoff's phases as the widget draws them: a segment per critical phase (and
    the unexplained rest) in its colour, in a thin outlined strip."""
    for strip in layout.phases:
        top = strip["lane"] + STRIP_Y
        ax.broken_barh(
            [(x(s["start"]), x(s["end"]) - x(s["start"])) for s in strip["segments"]],
            (top, STRIP_H),
            facecolors=[s["color"] for s in strip["segments"]],
            zorder=2,
        )
        start = x(strip["start"])
        ax.broken_barh(
            [(start, x(strip["end"]) - start)],
            (top, STRIP_H),
            facecolors="none",
            edgecolors=INK,
            linewidth=0.5,
            zorder=2,
        )


def _phase_keys(layout: TimelineLayout) -> list[Line2D | Patch]:
    """The phases the strips show, each in its colour: a picture has no hover text."""
    colors = {s["name"]: s["color"] for strip in layout.phases for s in strip["segments"]}
    return [Patch(color=color, label=f"phase: {name}") for name, color in colors.items()]


def _draw_handoffs(ax: Axes, layout: TimelineLayout, x: _Axis) -> Chips:
    """An arrow from the old agent's lane to the new one's, and a chip in the mode's colour
    naming the mode (as it happened, where its phases say), in the first row above the lanes
    (placed once laid out)."""
    analysis = layout.analysis
    chips: Chips = []
    for handoff in analysis.handoffs:
        if handoff.source is None:
            continue
        source, target = analysis.lane(handoff.source), analysis.lane(handoff.target)
        at = x(handoff.t)
        ax.annotate(
            "",
            xy=(at, target),
            xytext=(at, source),
            arrowprops={"arrowstyle": "->", "color": INK, "lw": 1.2},
        )
        mode = layout.mode_of(handoff)
        color = mode_color(mode)
        top = min(source, target)
        chip = ax.text(
            at,
            -0.6 - LABEL_ROW / 2,
            mode_text(mode),
            fontsize=7,
            va="center",
            color=ink(color),
            bbox={"boxstyle": "round,pad=0.25", "facecolor": color, "edgecolor": "none"},
            zorder=4,
        )
        (leader,) = ax.plot([at, at], [-0.6, top], ls=":", lw=0.8, color="#64748b")
        chips.append((chip, leader, top))
    return chips


def _draw_race_marks(ax: Axes, layout: TimelineLayout, x: _Axis) -> Chips:
    """Each race mark as the widget draws it: a dashed line through its lane at its time, and
    a chip naming it in the rows of the handoffs' chips (placed with them)."""
    chips: Chips = []
    for mark in layout.race_marks:
        at, lane, color = x(mark["t"]), mark["lane"], mark["color"]
        ax.plot([at, at], [lane - 0.45, lane + 0.45], ls="--", lw=1.5, color=color, zorder=3)
        chip = ax.text(
            at,
            -0.6 - LABEL_ROW / 2,
            mark["label"],
            fontsize=7,
            va="center",
            color=mark["ink"],
            bbox={"boxstyle": "round,pad=0.25", "facecolor": color, "edgecolor": "none"},
            zorder=4,
        )
        (leader,) = ax.plot([at, at], [-0.6, lane - 0.45], ls=":", lw=0.8, color=color)
        chips.append((chip, leader, lane - 0.45))
    return chips


def _place_chips(ax: Axes, chips: Chips) -> int:
    """Put each chip in the lowest row where it covers no other (a chip at the right edge
    ends at its arrow instead of starting there); returns the rows used."""
    right = ax.get_window_extent().x1
    extents = []
    for chip, _, _ in chips:
        box = chip.get_window_extent()
        if box.x1 > right:
            chip.set_horizontalalignment("right")
            box = box.translated(-box.width, 0)
        extents.append((box.x0, box.x1 + CHIP_GAP_PX))
    order = sorted(range(len(chips)), key=lambda i: extents[i][0])
    chosen = rows(extents[i] for i in order)
    for i, row in zip(order, chosen, strict=True):
        chip, leader, top = chips[i]
        y = -0.6 - LABEL_ROW * (row + 0.5)
        chip.set_y(y)
        leader.set_ydata([y, top])
    return max(chosen, default=-1) + 1


def _legend(layout: TimelineLayout) -> list[Line2D | Patch]:
    """The layout's legend as matplotlib handles, in its order."""
    handles: list[Line2D | Patch] = []
    for entry in layout.legend:
        if entry["group"] == "mark":
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker=MARKERS[entry["shape"]],
                    markersize=MARK_PT,
                    markerfacecolor="none" if entry["hollow"] else entry["color"],
                    markeredgecolor=entry["color"],
                    markeredgewidth=1.5,
                    label=entry["label"],
                )
            )
        else:
            alpha = 0.3 if entry["group"] == "band" else 1.0
            handles.append(Patch(color=entry["color"], alpha=alpha, label=entry["label"]))
    return handles
