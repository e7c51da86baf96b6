"""How every figure the package draws is painted: each view's ``to_figure()`` and the
benchmark's plots. A saved picture cannot follow JupyterLab's theme, so it has no background of
its own (the page shows through) and draws its words and axes in one grey that reads on the
light and the dark page alike; the data keep their palette, chosen to stand out from both
pages. Here, not in views/, so the engine (bench/) paints its plots the same way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib

INK = "#797979"
"""text and axes: 4.35:1 on JupyterLab's light page (#ffffff) and its dark one (#111111), the
most one grey gets on both (a text on a box of its own takes the box's ink instead)"""

STATIC: dict[Any, Any] = {
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": INK,
    "axes.titlecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "grid.color": INK,
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "legend.facecolor": "none",
    "legend.edgecolor": INK,
    "legend.labelcolor": INK,
    "boxplot.boxprops.color": INK,
    "boxplot.whiskerprops.color": INK,
    "boxplot.capprops.color": INK,
    "boxplot.flierprops.markeredgecolor": INK,
}
"""matplotlib's settings for a figure that reads on either theme's page"""


@contextmanager
def static_figure() -> Iterator[None]:
    """Figures made inside are painted for a notebook page of either theme (also usable as a
    decorator: ``@static_figure()``)."""
    with matplotlib.rc_context(STATIC):
        yield
