"""A suite's results as a static table (``SuiteView.to_figure()``): a row per scenario with its
outcome (and under it how its runs did, when repeated), the first failing expectation and
livekit's message for it (or why it did not run), and its time, as the widget shows them."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._figure_style import INK, static_figure
from ..suites.results import Outcome, ScenarioResult, SuiteResult

OUTCOME_COLORS = {
    Outcome.PASSED: "#15803d",
    Outcome.FAILED: "#d32f2f",
    Outcome.ERROR: "#d32f2f",
    Outcome.NOT_RUNNABLE: "#b45309",
}
"""an outcome's badge: white text on each reads at >= 4.5:1, each badge at >= 3:1 on the light
and the dark theme's page"""
COLUMNS = (("scenario", 0.01), ("outcome", 0.25), ("first failing expectation", 0.38))
"""each column's heading and where it starts (a fraction of the width); time is at the right"""
WIDTH_IN, HEAD_IN, ROW_IN = 11.0, 0.75, 0.5
"""the picture's width, the title and headings' height, a scenario's row height (inches)"""
_LABEL_CHARS, _EXPECTATION_CHARS, _MESSAGE_CHARS = 34, 76, 100


def suite_figure(result: SuiteResult) -> Figure:
    """The table as a picture, for executed notebooks and exported reports."""
    with static_figure():
        return _figure(result)


def _figure(result: SuiteResult) -> Figure:
    rows = max(len(result), 1)
    height = HEAD_IN + ROW_IN * rows
    figure = Figure(figsize=(WIDTH_IN, height))
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(height, 0)  # inches from the top
    ax.text(0.01, 0.25, result.summary(), weight="bold", va="center")
    heading = HEAD_IN - 0.2
    for title, x in (*COLUMNS, ("time", 0.99)):
        ha = "right" if title == "time" else "left"
        ax.text(x, heading, title, fontsize=9, weight="bold", ha=ha, va="center")
    ax.axhline(HEAD_IN - 0.02, color=INK, linewidth=0.8)
    for index, scenario in enumerate(result):
        _row(ax, scenario, HEAD_IN + ROW_IN * index)
    return figure


def _row(ax: Axes, scenario: ScenarioResult, top: float) -> None:
    middle, first, second = top + ROW_IN / 2, top + 0.17, top + 0.36
    ax.text(0.01, middle, _short(scenario.label, _LABEL_CHARS), fontsize=9, va="center")
    badge = {"boxstyle": "round,pad=0.3", "edgecolor": "none"}
    if scenario.runs:  # the badge, and under it how its runs did
        ax.text(COLUMNS[1][1], second, scenario.repetition, fontsize=8, va="center")
    ax.text(
        COLUMNS[1][1],
        first if scenario.runs else middle,
        scenario.outcome.value,
        fontsize=9,
        color="white",
        va="center",
        bbox={**badge, "facecolor": OUTCOME_COLORS[scenario.outcome]},
    )
    x = COLUMNS[2][1]
    lines = scenario.reason.splitlines()
    if scenario.expectation:
        said = f"turn {scenario.turn}: {scenario.expectation}"
        code = _short(said, _EXPECTATION_CHARS)
        ax.text(x, first, code, fontsize=9, va="center", family="monospace")
        message = lines[1] if len(lines) > 1 else ""
        ax.text(x, second, _short(message, _MESSAGE_CHARS), fontsize=8, va="center")
    elif lines:
        ax.text(x, middle, _short(lines[0], _MESSAGE_CHARS), fontsize=8, va="center")
    ax.text(0.99, middle, f"{scenario.seconds:.2f} s", fontsize=9, ha="right", va="center")
    ax.axhline(top + ROW_IN, color=INK, linewidth=0.4)


def _short(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters (code has few spaces to cut at)."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
