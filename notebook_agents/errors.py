"""The root of every error the package raises: ``except NotebookAgentsError`` catches any of
them (a runner misused, a scenarios file that cannot run, a latency the emulator cannot take...)
and nothing raised by livekit, a plugin or the user's own code.

Each error also keeps the builtin base callers have always caught it by (``RunnerError`` is a
``RuntimeError``, ``SuiteFileError`` a ``ValueError``), so ``except ValueError`` still works.
This module imports nothing of the package: every layer can build on it.
"""

__all__ = ["MissingExtraError", "NotebookAgentsError"]


class NotebookAgentsError(Exception):
    """An error raised by notebook-agents; its message says what went wrong and the fix."""


class MissingExtraError(NotebookAgentsError, ImportError):
    """A part of the package that needs an optional extra, imported without it (``import
    notebook_agents.videosdk`` without the ``videosdk`` extra): the message names the ``pip
    install``. It lives here, not in that part, which cannot be imported to catch it by."""
