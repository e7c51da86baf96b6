"""The notebook runner: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel."""

from typing import Any

from ._caller import SpokenAudio
from ._core import RunnerState
from ._interface import AgentRunner
from ._playback import Recording
from .agent_process import AgentProcess
from .errors import (
    AudioError,
    CueError,
    EntrypointError,
    HeardNothing,
    RunnerError,
    TurnError,
    TurnStopped,
)
from .notebook_runner import NotebookRunner, run_app


def __getattr__(name: str) -> Any:
    if name == "RemoteAgent":  # made on first use: the package defines no Agent class at import
        from ._remote_connection import remote_agent_class

        return remote_agent_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentProcess",
    "AgentRunner",
    "AudioError",
    "CueError",
    "EntrypointError",
    "HeardNothing",
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
