"""Exercise checks for teaching notebooks: a short hint where the answer falls short."""

from __future__ import annotations

from .errors import NotebookAgentsError


class NotYet(NotebookAgentsError, AssertionError):
    """An exercise not answered yet. IPython shows the hint alone, not a traceback (a learner
    needs what is missing, not our stack); Run All still stops at it."""

    def _render_traceback_(self) -> list[str]:
        return [f"Not yet: {self}"]


def check(passed: bool, hint: str) -> None:
    """Raise ``NotYet(hint)`` unless ``passed``."""
    if not passed:
        raise NotYet(hint)
