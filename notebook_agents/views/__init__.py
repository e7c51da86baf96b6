"""The widgets: anywidget views fed by a Trace (live or loaded), each exportable as a figure."""

from .state_view import StateView

__all__ = ["StateView"]
