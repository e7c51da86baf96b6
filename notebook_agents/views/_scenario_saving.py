"""A view's "save as scenario" button, Python side: the browser sends the label, the call the
view shows is written into a scenarios file (``notebook_agents.suites.to_scenario``), and the
file written, or why not, comes back in traits. ChatView saves its runner's call, SuiteView the
run of the scenario selected; the form is ``widgets/scenario_form.js``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import traitlets

from ..errors import NotebookAgentsError
from ..runner import AgentRunner
from ..suites import ScriptedScenario, to_scenario
from ..trace import Trace


class SavesScenarios(traitlets.HasTraits):
    """The traits and the handler of the button; a view says which call it saves."""

    scenario_path = traitlets.Unicode("scenarios.yaml").tag(sync=True)
    """the scenarios file the button writes into (relative to the kernel's working folder)"""
    scenario_saved = traitlets.Unicode("").tag(sync=True)
    """where the last scenario was written: the file's full path"""
    scenario_error = traitlets.Unicode("").tag(sync=True)
    """why the last one was not written, naming the fix"""

    def save_scenario(
        self, label: str, path: str | os.PathLike[str] | None = None
    ) -> ScriptedScenario | None:
        """Write the call the view shows as the scenario ``label`` of ``path`` (else
        ``scenario_path``), as the button does: the scenario, or None with
        ``scenario_error`` saying why not."""
        # cleared first: the front end hears each save, even one into the same file again
        self.scenario_saved = ""
        target = Path(path if path is not None else self.scenario_path).expanduser()
        call = self._call_to_save()
        if isinstance(call, str):
            self.scenario_error = call
            return None
        try:
            scenario = to_scenario(call, label.strip(), target)
        except (NotebookAgentsError, OSError) as e:
            self.scenario_error = str(e)
            return None
        self.scenario_error = ""
        self.scenario_saved = str(target.resolve())
        return scenario

    def _call_to_save(self) -> AgentRunner | Trace | str:
        """The call the button writes, the view's; or why there is none to write now."""
        raise NotImplementedError

    def _on_save_message(self, content: dict[str, Any]) -> bool:
        """Handle the form's message; whether it was one."""
        if content.get("type") != "save_scenario":
            return False
        self.save_scenario(str(content.get("label", "")))
        return True
