"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from ._caller import SpokenAudio
from ._core import RunnerState
from ._interface import AgentRunner
from ._playback import Recording
from .agent_process import AgentProcess, RemoteAgent
from .errors import AudioError, RunnerError, TurnError, TurnStopped
from .notebook_runner import NotebookRunner, run_app

__all__ = [
    "AgentProcess",
    "AgentRunner",
    "AudioError",
    "NotebookRunner",
    "Recording",
    "RemoteAgent",
    "RunnerError",
    "RunnerState",
    "SpokenAudio",
    "TurnError",
    "TurnStopped",
    "run_app",
]
