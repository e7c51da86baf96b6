"""SuiteView: a scenario suite's results as a table (outcome, how its runs did when it was
repeated, first failing expectation, time) and, under it, the timeline of the scenario clicked
(of its first run that did not pass, when repeated)."""

from __future__ import annotations

from typing import Any

import anywidget
import ipywidgets
import traitlets
from matplotlib.figure import Figure

from ..suites.results import SuiteResult
from ._assets import asset
from ._suite_figure import suite_figure
from .timeline_view import TimelineView


class SuiteTable(anywidget.AnyWidget):
    """The table alone: a row per scenario; ``selected`` is the label clicked."""

    _esm = asset("suite_view.js")
    _css = asset("views.css")

    summary = traitlets.Unicode("").tag(sync=True)
    """the suite's name and how many scenarios came out each way (``SuiteResult.summary``)"""
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    """``ScenarioResult.row()`` of each scenario, in order"""
    repeated = traitlets.Bool(False).tag(sync=True)
    """a scenario ran more than once: a column says how each one's runs did"""
    selected = traitlets.Unicode("").tag(sync=True)

    def __init__(self, result: SuiteResult, **kwargs: Any) -> None:
        rows = [scenario.row() for scenario in result]
        super().__init__(summary=result.summary(), rows=rows, repeated=result.repeated, **kwargs)


class SuiteView(ipywidgets.VBox):  # type: ignore[misc]
    """``SuiteTable`` and the selected scenario's ``TimelineView`` under it (its trace is
    ``result["label"].trace``)."""

    def __init__(self, result: SuiteResult) -> None:
        self.result = result
        self.table = SuiteTable(result)
        self.details = ipywidgets.VBox()
        super().__init__([self.table, self.details])
        self.table.observe(self._show, names="selected")

    def select(self, label: str) -> None:
        """Show ``label``'s timeline, as a click on its row does."""
        self.table.selected = label

    def to_figure(self) -> Figure:
        """The table as a static picture (outcome, first failing expectation, time), for
        executed notebooks and exported reports."""
        return suite_figure(self.result)

    def _show(self, change: dict[str, Any]) -> None:
        trace = self.result[change["new"]].trace
        self.details.children = [TimelineView(trace)] if trace is not None else []
