"""SuiteView: a scenario suite's results as a table (outcome, how its runs did when it was
repeated, first failing expectation, time) and, under it, the timeline of the scenario clicked
(of its first run that did not pass, when repeated)."""

from __future__ import annotations

import os
from typing import Any

import anywidget
import ipywidgets
import traitlets
from matplotlib.figure import Figure

from ..suites import ScriptedScenario
from ..suites.results import SuiteResult
from ..trace import Trace
from ._assets import asset, joined_modules
from ._scenario_saving import SavesScenarios
from ._suite_figure import suite_figure
from .timeline_view import TimelineView


class SuiteTable(anywidget.AnyWidget, SavesScenarios):
    """The table alone: a row per scenario; ``selected`` is the label clicked. "Save as
    scenario" writes the selected scenario's run, as it went, as a new scenario."""

    _esm = joined_modules("scenario_form.js", "suite_view.js")
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
        self.result = result
        self.on_msg(lambda _, content, __: self._on_save_message(content))

    def _call_to_save(self) -> Trace | str:
        labels = [scenario.label for scenario in self.result]
        trace = self.result[self.selected].trace if self.selected in labels else None
        return trace or "select a scenario that ran: its run is what is saved"


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

    def save_scenario(
        self, label: str, path: str | os.PathLike[str] | None = None
    ) -> ScriptedScenario | None:
        """Write the selected scenario's run as the new scenario ``label`` of ``path`` (else
        ``table.scenario_path``), as the table's button does: ``SuiteTable.save_scenario``."""
        return self.table.save_scenario(label, path)

    def to_figure(self) -> Figure:
        """The table as a static picture (outcome, first failing expectation, time), for
        executed notebooks and exported reports."""
        return suite_figure(self.result)

    def _show(self, change: dict[str, Any]) -> None:
        trace = self.result[change["new"]].trace
        self.details.children = [TimelineView(trace)] if trace is not None else []
