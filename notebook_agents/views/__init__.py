"""The widgets: anywidget views fed by a Trace (live or loaded), each exportable as a figure."""

from .benchmark_view import BenchmarkView
from .chat_view import ChatView
from .context_table import ContextTable
from .errors import ViewArgumentError, ViewSourceError, ViewStateError
from .graph_view import AgentGraphView
from .state_view import StateView
from .suite_view import SuiteView
from .timeline_view import TimelineView
from .voice_view import VoiceView
from .waterfall_view import WaterfallView

__all__ = [
    "AgentGraphView",
    "BenchmarkView",
    "ChatView",
    "ContextTable",
    "StateView",
    "SuiteView",
    "TimelineView",
    "ViewArgumentError",
    "ViewSourceError",
    "ViewStateError",
    "VoiceView",
    "WaterfallView",
]
