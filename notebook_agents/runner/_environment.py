"""The user's LiveKit environment, kept for the process while runners run.

livekit's ``AgentServer.run`` writes the server's URL, key and secret (and a few more) into
``os.environ``, for the whole process. Kept per runner, two runners at once would mix them up:
one started with credentials would hand them to the next (which would take them for the
user's), and restored in the other order they would stay behind for good. So there is one
keeper: it knows what each running runner's ``run`` writes, so a value in ``os.environ`` is
either livekit's (one of those, not the user's own) or the user's, set before or since.
Credentials resolve from the user's; when a runner stops, livekit's values go: the latest
running runner's are put back (its jobs may read them, as livekit's ``JobContext.api``
does), else the user's.
"""

from __future__ import annotations

import os
import threading

from .. import _livekit_internals as livekit

_lock = threading.Lock()
_writes: dict[object, dict[str, str]] = {}
"""each running runner's token -> what livekit's ``run`` writes for it, in start order"""
_kept: dict[str, str | None] = {}
"""the user's values of what ``run`` writes (None: unset), while runners run"""


def _by_livekit(name: str, value: str | None) -> bool:
    """Whether ``value`` of ``name`` in ``os.environ`` is one livekit wrote, not the user's."""
    return (
        value is not None
        and value != _kept.get(name)
        and any(writes.get(name) == value for writes in _writes.values())
    )


def _keep_what_the_user_set() -> dict[str, str | None]:
    """Keeps the values in ``os.environ`` that livekit did not write (the user's, set before
    or since) and returns all of them, as they are now."""
    current = livekit.run_environment()
    _kept.update({name: value for name, value in current.items() if not _by_livekit(name, value)})
    return current


def hold(writes: dict[str, str]) -> object:
    """A runner whose server's ``run`` writes ``writes`` is about to run it. Returns the
    token to ``release`` with."""
    token = object()
    with _lock:
        _keep_what_the_user_set()
        _writes[token] = writes
    return token


def release(token: object | None) -> None:
    """The runner that ``hold`` gave ``token`` has stopped (None: it never held): what livekit
    wrote becomes what it writes for the latest runner still running, or the user's value.
    Releasing twice is harmless."""
    with _lock:
        if token not in _writes:
            return
        current = _keep_what_the_user_set()
        left = [name for name, value in current.items() if _by_livekit(name, value)]
        del _writes[token]
        back = dict(_kept)
        for writes in _writes.values():
            back.update(writes)
        livekit.restore_environment({name: back[name] for name in left})
        if not _writes:
            _kept.clear()


def user_value(name: str) -> str:
    """``name`` as the user set it (empty if unset): while runners run, ``os.environ`` may
    hold what livekit wrote for one of them instead."""
    with _lock:
        value = os.environ.get(name)
        if _by_livekit(name, value):
            value = _kept.get(name)
    return value or ""
