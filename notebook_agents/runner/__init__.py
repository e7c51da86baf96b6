"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from ._playback import Recording
from .errors import AudioError, RunnerError, TurnError, TurnStopped
from .notebook_runner import NotebookRunner, RunnerState, run_app

__all__ = [
    "AudioError",
    "NotebookRunner",
    "Recording",
    "RunnerError",
    "RunnerState",
    "TurnError",
    "TurnStopped",
    "run_app",
]
