"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from .errors import RunnerError, TurnError
from .notebook_runner import NotebookRunner, RunnerState, run_app

__all__ = ["NotebookRunner", "RunnerError", "RunnerState", "TurnError", "run_app"]
