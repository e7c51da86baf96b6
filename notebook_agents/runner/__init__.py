"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from ._playback import Recording
from .errors import RunnerError, TurnError
from .notebook_runner import NotebookRunner, RunnerState, run_app

__all__ = ["NotebookRunner", "Recording", "RunnerError", "RunnerState", "TurnError", "run_app"]
