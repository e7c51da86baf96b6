"""Waits as a matplotlib figure (``WaterfallView.to_figure()``), drawn from the same layouts as
the widget: per wait a title, a row per phase with its bar (the network's share hatched, the
client's solid), livekit's figure as a line under it, the labels in ms right of the plot and
the note under the row; one wait under another, the legend last."""

from __future__ import annotations

import textwrap
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.transforms import blended_transform_factory

from .._figure_style import static_figure
from ._waterfall_layout import WATERFALL_COLORS

WIDTH_IN, NAMES_IN, TRACK_IN = 11.0, 2.0, 5.6
"""the picture's width; the phase names' column and the bars' (the labels take the rest)"""
LABELS_IN = (0.1, 0.85, 1.75)
"""where the measured, livekit's and the network / client labels start right of the bars"""
HEADINGS = ("measured", "livekit", "network · client")
"""the labels' headings"""
TITLE_IN, ROW_IN, NOTE_IN, AXIS_IN, LEGEND_IN = 0.55, 0.3, 0.16, 0.45, 0.45
"""a wait's title, a row, a line of note under a row, the x axis under the rows, the legend"""
NOTE_CHARS, NOTE_LINES = 120, 3
"""a note's line length and the most lines it takes, under its row"""
SWATCH_IN = 0.2
"""room for the swatch of a handoff's mode before its title"""
BAR_H, LINE_H = 0.5, 0.12
"""a bar's height and livekit's line's, in rows"""


def waterfall_figure(waits: list[dict[str, Any]], empty: str) -> Figure:
    """``waits`` (``wait_layout``s) one under another; ``empty`` said when there are none."""
    with static_figure():
        return _figure(waits, empty)


def _figure(waits: list[dict[str, Any]], empty: str) -> Figure:
    if not waits:
        figure = Figure(figsize=(WIDTH_IN, 0.6))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.text(0.5, 0.5, empty or "no waits", ha="center", va="center", fontsize=9)
        return figure
    placed = [_place(wait["rows"]) for wait in waits]
    heights = [TITLE_IN + units * ROW_IN + AXIS_IN for _, units in placed]
    total = sum(heights) + LEGEND_IN
    figure = Figure(figsize=(WIDTH_IN, total))
    top = total
    for wait, (ys, units), height in zip(waits, placed, heights, strict=True):
        plot = units * ROW_IN
        box = (NAMES_IN / WIDTH_IN, (top - TITLE_IN - plot) / total, TRACK_IN / WIDTH_IN)
        ax = figure.add_axes((*box, plot / total))
        _draw(ax, wait, ys, units)
        title_y, x = (top - TITLE_IN / 2) / total, 0.01
        if wait["mode_color"]:  # a handoff: a swatch of its mode's colour, as on the timeline
            side = SWATCH_IN * 0.6
            corner = (x, title_y - side / 2 / total)
            swatch = Rectangle(corner, side / WIDTH_IN, side / total, color=wait["mode_color"])
            figure.add_artist(swatch)
            x += SWATCH_IN / WIDTH_IN
        figure.text(x, title_y, wait["title"], weight="bold", va="center")
        figure.text(
            0.01, (top - TITLE_IN + 0.06) / total, wait["subtitle"], fontsize=8, va="bottom"
        )
        top -= height
    figure.legend(
        handles=_legend(waits),
        loc="lower left",
        bbox_to_anchor=(NAMES_IN / WIDTH_IN, 0.08 / total),
        ncols=6,
        fontsize=8,
        frameon=False,
        borderaxespad=0.0,
    )
    return figure


def _place(rows: list[dict[str, Any]]) -> tuple[list[float], float]:
    """Each row's centre, in rows from the top (a note's lines add room under its row), and
    the rows' height in all."""
    ys, at = [], 0.0
    for row in rows:
        ys.append(at + 0.5)
        at += 1 + len(_note(row)) * NOTE_IN / ROW_IN
    return ys, at


def _note(row: dict[str, Any]) -> list[str]:
    return textwrap.wrap(row["note"], NOTE_CHARS, max_lines=NOTE_LINES, placeholder=" …")


def _draw(ax: Axes, wait: dict[str, Any], ys: list[float], units: float) -> None:
    axis = wait["axis"]
    ax.set_xlim(axis["min_ms"], axis["max_ms"])
    ax.set_ylim(units, 0)
    ax.set_xticks([t["ms"] for t in axis["ticks"]], [t["label"] for t in axis["ticks"]])
    ax.set_yticks([])
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    left = blended_transform_factory(ax.transAxes, ax.transData)
    for offset, heading in zip(LABELS_IN, HEADINGS, strict=True):
        ax.text(1 + offset / TRACK_IN, 0, heading, transform=left, va="bottom", fontsize=8,
                weight="bold")  # fmt: skip
    for row, y in zip(wait["rows"], ys, strict=True):
        _bar(ax, row, y)
        style = "normal" if row["critical"] else "italic"
        name = row["name"] if row["critical"] else f"{row['name']} (parallel)"
        ax.text(-0.01, y, name, transform=left, ha="right", va="center", fontsize=8, style=style)
        texts = (row["measured"], row["livekit_text"], row["truth_text"])
        for offset, text in zip(LABELS_IN, texts, strict=True):
            x = 1 + offset / TRACK_IN
            ax.text(x, y, text, transform=left, va="center", fontsize=8)
        for line, note in enumerate(_note(row)):
            at = y + 0.5 + (line + 0.5) * NOTE_IN / ROW_IN
            ax.text(0.0, at, note, transform=left, va="center", fontsize=7, style="italic")


def _bar(ax: Axes, row: dict[str, Any], y: float) -> None:
    """The row's parts: solid, hatched where the network's share, a line for livekit."""
    kind = "parallel" if not row["critical"] else row["kind"]
    color = WATERFALL_COLORS.get(kind, WATERFALL_COLORS["critical"])
    for part in row["segments"]:
        extent = [(part["start_ms"], part["end_ms"] - part["start_ms"])]
        band = (y - BAR_H / 2, BAR_H)
        if part["part"] == "truth":
            ax.broken_barh(extent, band, facecolor="none", edgecolor=color, hatch="////", lw=0.8)
        elif kind == "parallel":
            ax.broken_barh(extent, band, facecolor=color, alpha=0.35, edgecolor=color, ls="--")
        else:
            ax.broken_barh(extent, band, color=color)
    if livekit := row["livekit"]:
        extent = [(livekit["start_ms"], livekit["end_ms"] - livekit["start_ms"])]
        at = y + BAR_H / 2 + 0.04 if row["segments"] else y - LINE_H / 2
        ax.broken_barh(extent, (at, LINE_H), color=WATERFALL_COLORS["livekit"])


def _legend(waits: list[dict[str, Any]]) -> list[Patch]:
    """What the waits draw, in the legend's order, as the widget's key names them."""
    drawn = {entry["part"]: entry["label"] for wait in waits for entry in wait["key"]}
    colors = WATERFALL_COLORS
    styles: dict[str, dict[str, Any]] = {
        "wait": {"color": colors["wait"]},
        "critical": {"color": colors["critical"]},
        "parallel": {
            "facecolor": colors["parallel"],
            "alpha": 0.35,
            "edgecolor": colors["parallel"],
            "ls": "--",
        },
        "truth": {"facecolor": "none", "edgecolor": colors["critical"], "hatch": "////"},
        "livekit": {"color": colors["livekit"]},
        "unexplained": {"color": colors["unexplained"]},
    }
    return [Patch(label=drawn[part], **style) for part, style in styles.items() if part in drawn]
