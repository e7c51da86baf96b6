"""Errors the views raise: each derives from ``NotebookAgentsError`` and keeps the builtin base
the views raised before (``TypeError`` for the wrong source, ``ValueError`` for an argument its
source cannot answer), and its message names what to pass instead."""

from __future__ import annotations

from ..errors import NotebookAgentsError


class ViewSourceError(NotebookAgentsError, TypeError):
    """A view given something it cannot show: not the runner, ``Trace`` or agents it takes
    (a ``ChatView`` given a trace, a ``TimelineView`` given a runner), or a ``like=`` that is
    no ``TimelineView``. Raised before the view is made."""


class ViewArgumentError(NotebookAgentsError, ValueError):
    """An argument a view's source cannot answer: a wait it has not seen, a race mark for an
    agent with no lane, no agent whose two sides parted to show, or ``trace=`` beside the
    runner or trace it already follows."""


class ViewStateError(NotebookAgentsError, RuntimeError):
    """A view asked for what it cannot do now: a ``BenchmarkView`` asked to run while its
    run is going (await the first, or give the second its own view)."""
