"""notebook-agents: build, measure and teach LiveKit voice agents inside Jupyter.

The top level holds one name per task; the rest lives in the subpackages: the trace's wire
schema in ``notebook_agents.trace.schema``, the race lab in ``notebook_agents.races``, the
benchmark's configuration and results in ``notebook_agents.bench``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._deprecated import warn_renamed
from .errors import NotebookAgentsError

if TYPE_CHECKING:  # the names of __all__ are re-exported for type checkers
    from .analysis import TraceAnalysis
    from .bench.run import run_benchmark
    from .emulator import (
        Emulator,
        Faults,
        LatencyModel,
        ReplyContext,
        ReplyRules,
        TextReply,
        ToolCallReply,
        ToolCallsReply,
        VerdictReply,
    )
    from .runner import AgentProcess, NotebookRunner, RunnerError, TurnError, run_app
    from .suites import load_suite, run_suite
    from .trace import Trace, TraceEvent
    from .videosdk import VideoSDKRunner as VideoSDKRunner
    from .views import (
        AgentGraphView,
        BenchmarkView,
        ChatView,
        ContextTable,
        StateView,
        SuiteView,
        TimelineView,
        VoiceView,
        WaterfallView,
    )

_HOMES = {
    "notebook_agents.analysis": ("TraceAnalysis",),
    "notebook_agents.bench.run": ("run_benchmark",),
    "notebook_agents.emulator": (
        "Emulator",
        "Faults",
        "LatencyModel",
        "ReplyContext",
        "ReplyRules",
        "TextReply",
        "ToolCallReply",
        "ToolCallsReply",
        "VerdictReply",
    ),
    "notebook_agents.runner": (
        "AgentProcess",
        "NotebookRunner",
        "RunnerError",
        "TurnError",
        "run_app",
    ),
    "notebook_agents.suites": ("load_suite", "run_suite"),
    "notebook_agents.trace": ("Trace", "TraceEvent"),
    # VideoSDK's agents are an extra: a kernel without it imports the package
    "notebook_agents.videosdk": ("VideoSDKRunner",),
    "notebook_agents.views": (
        "AgentGraphView",
        "BenchmarkView",
        "ChatView",
        "ContextTable",
        "StateView",
        "SuiteView",
        "TimelineView",
        "VoiceView",
        "WaterfallView",
    ),
}
_ON_FIRST_USE = {name: module for module, names in _HOMES.items() for name in names}
"""each name of the face and the module it comes from, imported when the name is first used:
``import notebook_agents`` (and so any of its modules: the emulator's CLI, an agent's process)
costs no livekit.agents, no widget code, no VideoSDK until something needs them"""

_MOVED_OFF: dict[str, tuple[str, str]] = {
    name: (module, name)
    for module, names in {
        "notebook_agents.trace.schema": (
            "EVENT_DATA",
            "AgentMessageData",
            "AgentStateData",
            "ChatItemData",
            "ClosedData",
            "ContextChangedData",
            "ContextConvergedData",
            "ContextDivergedData",
            "ErrorData",
            "EventKind",
            "HandoffData",
            "MetricsData",
            "ModelUsageData",
            "ToolCallData",
            "ToolOutputData",
            "TraceSpan",
            "UserMessageData",
            "UserStateData",
            "UserTranscriptData",
            "check_event_data",
        ),
        "notebook_agents.races": (
            "RACES",
            "LoggedProblem",
            "RaceCase",
            "RaceMark",
            "RaceProvider",
            "RaceRun",
            "RaceVerdict",
            "WireEvent",
            "run_race",
        ),
        "notebook_agents.runner": (
            "AgentRunner",
            "AudioError",
            "Recording",
            "RemoteAgent",
            "RunnerState",
            "TurnStopped",
        ),
        "notebook_agents.suites": (
            "Outcome",
            "ScenarioResult",
            "ScenarioSuite",
            "ScriptedScenario",
            "SuiteFileError",
            "SuiteResult",
        ),
        "notebook_agents.analysis": (
            "Breakdown",
            "Phase",
            "Speech",
            "bring_ups",
            "handoff_phases",
            "turn_phases",
        ),
        "notebook_agents.agent_graph": ("HandoffGraph", "handoff_targets"),
        "notebook_agents.devices": ("DeviceError", "LocalDevices"),
        "notebook_agents.emulator": ("GeminiEndpoint",),
    }.items()
    for name in names
} | {
    "ModelTruth": ("notebook_agents.trace", "ModelServer"),
    "UserAgents": ("notebook_agents.bench", "YourAgents"),
    "UserServer": ("notebook_agents.bench", "YourServer"),
}
"""names the top level held until 0.1.0, kept one more release: each with where it lives and
its name there (three were renamed)"""


def __getattr__(name: str) -> Any:
    if name in _ON_FIRST_USE:
        value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
        globals()[name] = value  # the next use is a plain lookup
        return value
    if name in _MOVED_OFF:
        module, new_name = _MOVED_OFF[name]
        warn_renamed(f"`from notebook_agents import {name}`", f"`from {module} import {new_name}`")
        return getattr(importlib.import_module(module), new_name)
    # as Python answers an unknown name: hasattr() and `from ... import` rely on it
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})


# VideoSDKRunner is left out: `from notebook_agents import *` must work without its extra
__all__ = [
    "AgentGraphView",
    "AgentProcess",
    "BenchmarkView",
    "ChatView",
    "ContextTable",
    "Emulator",
    "Faults",
    "LatencyModel",
    "NotebookAgentsError",
    "NotebookRunner",
    "ReplyContext",
    "ReplyRules",
    "RunnerError",
    "StateView",
    "SuiteView",
    "TextReply",
    "TimelineView",
    "ToolCallReply",
    "ToolCallsReply",
    "Trace",
    "TraceAnalysis",
    "TraceEvent",
    "TurnError",
    "VerdictReply",
    "VoiceView",
    "WaterfallView",
    "load_suite",
    "run_app",
    "run_benchmark",
    "run_suite",
]
__version__ = "0.1.0"
