"""The widgets: anywidget views fed by a Trace (live or loaded), each exportable as a figure."""

from .chat_view import ChatView
from .state_view import StateView
from .timeline_view import TimelineView

__all__ = ["ChatView", "StateView", "TimelineView"]
