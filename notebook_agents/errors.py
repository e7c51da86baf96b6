"""Errors the package raises to notebook users; each message says what to do."""

from __future__ import annotations


class RunnerError(RuntimeError):
    """The runner cannot do what was asked; the message says why and what to do."""
