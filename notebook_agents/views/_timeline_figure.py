"""The timeline as a matplotlib figure, drawn from the same ``TimelineLayout`` as the widget:
lanes, state bars, marks, handoff arrows with their mode chips (in rows above the lanes, so
none covers another), bring-up bands, each handoff's phases as a strip, idle gaps shortened and
marked (each named under the axis's times, which have one at least in every stretch between
gaps), and the layout's legend.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from matplotlib import rcParams
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from .._figure_style import INK, static_figure
from ..analysis import milliseconds
from ._timeline_layout import (
    BRING_UP,
    MARK_STYLES,
    SPEECH_COLORS,
    Extent,
    TimelineLayout,
    ink,
    mode_color,
    mode_text,
    state_color,
    widest,
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
LABEL_GAP_PX = 6.0
"""the least room between two tick labels, or two gaps' labels, in a row"""
GAP_LABEL_PT = 7.0
"""an idle gap's label's size, under the axis's times"""
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
    active time wide, the rest as it is; ``right`` is where the view ends: past the trace's end
    where it fits the wider ``shared`` extent of timelines sharing its scale."""

    def __init__(self, layout: TimelineLayout, shared: Extent | None) -> None:
        analysis = layout.analysis
        self.gaps = analysis.gaps
        self.start = analysis.start or 0.0
        self.end = analysis.end or 0.0
        fits = widest([layout.extent, shared]) if shared is not None else layout.extent
        self.shown = max(fits.active * GAP_SHARE, 1e-3)
        self.right = self(self.start) + fits.active + fits.gaps * self.shown

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


def timeline_figure(layout: TimelineLayout, shared: Extent | None = None) -> Figure:
    """``layout`` as a static picture, for a notebook page of either theme; ``shared``: the
    extent of the timelines it shares a time scale with (``TimelineView(like=)``)."""
    with static_figure():
        return _timeline_figure(layout, shared)


def _timeline_figure(layout: TimelineLayout, shared: Extent | None) -> Figure:
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
    x = _Axis(layout, shared)
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
        _draw_gap(ax, x, gap)
    _draw_phases(ax, layout, x)
    drawn = _draw_marks(ax, layout, x)
    chips = _draw_handoffs(ax, layout, x) + _draw_race_marks(ax, layout, x)
    pad = (x.right - x(x.start)) * 0.02 or 0.05
    ax.set_xlim(x(x.start) - pad, x.right + pad)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xlabel("trace time (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("agent timeline", fontsize=10)
    axis = _AxisLabels(ax, x, layout.gaps)
    _lay_out(figure, ax, _legend(layout) + _phase_keys(layout), chips, len(lanes), axis)
    _stack_close_marks(ax, drawn)
    return figure


def _lay_out(
    figure: Figure,
    ax: Axes,
    handles: list[Line2D | Patch],
    chips: Chips,
    lanes: int,
    axis: _AxisLabels,
) -> None:
    """Size the figure around its parts, measured: the lane names left of the plot, the title
    above it, the x axis (its times, the gaps' labels under them) and then the legend (in as
    many columns as fit) under it; the plot ``LANE_IN`` a lane and a row for each row of
    chips."""
    dpi = figure.dpi
    pad = PAD_IN * dpi
    width = WIDTH_IN * dpi
    left = pad + ax.yaxis.get_tightbbox().width  # type: ignore[union-attr]
    plot_width = width - left - RIGHT_IN * dpi
    legend = _fitted_legend(ax, handles, room=width - left - pad)
    # the chips' rows and the axis's labels depend on where the plot's x axis falls on the
    # page, not on its height
    ax.set_position((left / width, 0.0, plot_width / width, 1.0))
    axis.place()
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


def _draw_gap(ax: Axes, x: _Axis, gap: dict[str, Any]) -> None:
    """A hatched band where time was shortened (its label goes under the axis's times)."""
    ax.axvspan(x(gap["start"]), x(gap["end"]), color="#94a3b8", alpha=0.25, hatch="//", lw=0)


def stretch_ticks(start: float, end: float, step: float) -> list[float]:
    """The ticks of the stretch ``[start, end]`` between gaps: the multiples of ``step`` in it
    or, where it is too short to hold one, of the coarsest finer round step (1, 2 or 5 times a
    power of ten) that has one, so each stretch gets its time (as the widget does)."""
    finer = [m * 10.0**e for e in range(math.floor(math.log10(step)), -4, -1) for m in (5, 2, 1)]
    for every in [step, *(s for s in finer if s < step * (1 - 1e-9))]:
        first, last = math.ceil(start / every - 1e-9), math.floor(end / every + 1e-9)
        if first <= last:
            return [k * every for k in range(first, last + 1)]
    return []


def decimals(t: float) -> int:
    """The decimals that write the round time ``t`` exactly: 0 for 25.0, 1 for 12.5."""
    return next((d for d in range(4) if abs(round(t, d) - t) < 1e-9), 4)


class _AxisLabels:
    """The x axis's labels: ticks at round trace times in each stretch between gaps, one at
    least in each (``stretch_ticks``), and under them each idle gap's label, centred under it,
    in the first of two rows where it covers no other (the short labels when the long ones
    would need more rows). Placed once the plot's width on the page is final (``place``): a
    tick label that would cover one placed before is left out, each stretch's first placed
    first."""

    def __init__(self, ax: Axes, x: _Axis, gaps: list[dict[str, Any]]) -> None:
        self.ax = ax
        self.gaps = gaps
        left, right = ax.get_xlim()
        values = MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(0, right - left)
        step = float(values[1] - values[0])
        self.ticks: list[tuple[float, str, bool]] = []
        """each tick's position, label and whether it is its stretch's first"""
        for start, end in x.segments():
            for k, t in enumerate(stretch_ticks(start, end, step)):
                self.ticks.append((x(t), f"{t:.{decimals(t)}f}", k == 0))
        self.centres = [(x(gap["start"]) + x(gap["end"])) / 2 for gap in gaps]

    def place(self) -> None:
        """Label the ticks and the gaps as they fall on the page now."""
        ax = self.ax
        size = FontProperties(size=rcParams["xtick.labelsize"]).get_size_in_points()
        taken: list[tuple[float, float]] = []
        shown = {}
        for i in sorted(range(len(self.ticks)), key=lambda i: not self.ticks[i][2]):
            position, label, _ = self.ticks[i]
            x0, x1 = self._extent(position, label, size)
            if all(x1 + LABEL_GAP_PX <= a or x0 >= b + LABEL_GAP_PX for a, b in taken):
                taken.append((x0, x1))
                shown[i] = label
        positions = [t for t, _, _ in self.ticks]
        ax.set_xticks(positions, [shown.get(i, "") for i in range(len(self.ticks))])
        below: dict[int, int] = {}
        for key in ("label", "short"):
            texts = [gap[key] for gap in self.gaps]
            extents = [
                self._extent(c, t, GAP_LABEL_PT) for c, t in zip(self.centres, texts, strict=True)
            ]
            order = sorted(range(len(extents)), key=lambda i: extents[i][0])
            chosen = rows((extents[i][0], extents[i][1] + LABEL_GAP_PX) for i in order)
            below = dict(zip(order, chosen, strict=True))
            if max(chosen, default=0) < 2:
                break
        # a row lower is a line lower; the first clear of the times (a line and a half of
        # them under their own pad)
        stacked = ["\n" * below[i] + text for i, text in enumerate(texts)]
        ax.set_xticks(self.centres, stacked, minor=True)
        pad = rcParams["xtick.major.pad"] + 1.5 * size
        ax.tick_params(axis="x", which="minor", length=0, pad=pad, labelsize=GAP_LABEL_PT)

    def _extent(self, position: float, text: str, size: float) -> tuple[float, float]:
        """Where ``text`` centred at ``position`` falls on the page, left to right (pixels)."""
        centre = self.ax.transData.transform((position, 0.0))[0]
        probe = self.ax.figure.text(0, 0, text, fontsize=size)
        width = probe.get_window_extent().width
        probe.remove()
        return centre - width / 2, centre + width / 2


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
