"""notebook-agents: build, measure and teach LiveKit voice agents inside Jupyter."""

from typing import TYPE_CHECKING, Any

from . import _result_views  # noqa: F401  (registers the view each result shows as)
from .agent_graph import HandoffGraph, handoff_targets
from .analysis import (
    Breakdown,
    Phase,
    Speech,
    TraceAnalysis,
    bring_ups,
    handoff_phases,
    turn_phases,
)
from .bench import UserAgents, UserServer
from .devices import DeviceError, LocalDevices
from .emulator import (
    Emulator,
    Faults,
    GeminiEndpoint,
    LatencyModel,
    ReplyContext,
    ReplyRules,
    TextReply,
    ToolCallReply,
    ToolCallsReply,
    VerdictReply,
)
from .races import (
    RACES,
    LoggedProblem,
    RaceCase,
    RaceMark,
    RaceProvider,
    RaceRun,
    RaceVerdict,
    WireEvent,
    run_race,
)
from .runner import (
    AgentProcess,
    AgentRunner,
    AudioError,
    NotebookRunner,
    Recording,
    RemoteAgent,
    RunnerError,
    RunnerState,
    TurnError,
    TurnStopped,
    run_app,
)
from .suites import (
    Outcome,
    ScenarioResult,
    ScenarioSuite,
    ScriptedScenario,
    SuiteFileError,
    SuiteResult,
    load_suite,
    run_suite,
)
from .trace import (
    EVENT_DATA,
    AgentMessageData,
    AgentStateData,
    ChatItemData,
    ClosedData,
    ContextChangedData,
    ContextConvergedData,
    ContextDivergedData,
    ErrorData,
    EventKind,
    HandoffData,
    MetricsData,
    ModelTruth,
    ModelUsageData,
    ToolCallData,
    ToolOutputData,
    Trace,
    TraceEvent,
    TraceSpan,
    UserMessageData,
    UserStateData,
    UserTranscriptData,
    check_event_data,
)

if TYPE_CHECKING:
    from .videosdk import VideoSDKRunner


def __getattr__(name: str) -> Any:
    # VideoSDK's agents are an extra: imported on first use, so a kernel without it loads
    if name == "VideoSDKRunner":
        from .videosdk import VideoSDKRunner

        return VideoSDKRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EVENT_DATA",
    "RACES",
    "AgentMessageData",
    "AgentProcess",
    "AgentRunner",
    "AgentStateData",
    "AudioError",
    "Breakdown",
    "ChatItemData",
    "ClosedData",
    "ContextChangedData",
    "ContextConvergedData",
    "ContextDivergedData",
    "DeviceError",
    "Emulator",
    "ErrorData",
    "EventKind",
    "Faults",
    "GeminiEndpoint",
    "HandoffData",
    "HandoffGraph",
    "LatencyModel",
    "LocalDevices",
    "LoggedProblem",
    "MetricsData",
    "ModelTruth",
    "ModelUsageData",
    "NotebookRunner",
    "Outcome",
    "Phase",
    "RaceCase",
    "RaceMark",
    "RaceProvider",
    "RaceRun",
    "RaceVerdict",
    "Recording",
    "RemoteAgent",
    "ReplyContext",
    "ReplyRules",
    "RunnerError",
    "RunnerState",
    "ScenarioResult",
    "ScenarioSuite",
    "ScriptedScenario",
    "Speech",
    "SuiteFileError",
    "SuiteResult",
    "TextReply",
    "ToolCallData",
    "ToolCallReply",
    "ToolCallsReply",
    "ToolOutputData",
    "Trace",
    "TraceAnalysis",
    "TraceEvent",
    "TraceSpan",
    "TurnError",
    "TurnStopped",
    "UserAgents",
    "UserMessageData",
    "UserServer",
    "UserStateData",
    "UserTranscriptData",
    "VerdictReply",
    "VideoSDKRunner",
    "WireEvent",
    "bring_ups",
    "check_event_data",
    "handoff_phases",
    "handoff_targets",
    "load_suite",
    "run_app",
    "run_race",
    "run_suite",
    "turn_phases",
]
__version__ = "0.1.0"
