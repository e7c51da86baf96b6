"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from ._core import RunnerState
from ._interface import AgentRunner
from ._playback import Recording
from .agent_process import AgentProcess, RemoteAgent
from .errors import AudioError, EntrypointError, RunnerError, TurnError, TurnStopped
from .notebook_runner import NotebookRunner, run_app

__all__ = [
    "AgentProcess",
    "AgentRunner",
    "AudioError",
    "EntrypointError",
    "NotebookRunner",
    "Recording",
    "RemoteAgent",
    "RunnerError",
    "RunnerState",
    "TurnError",
    "TurnStopped",
    "run_app",
]
