"""The user's LiveKit environment, kept for the process while runners run.

livekit's ``AgentServer.run`` writes the server's URL, key and secret (and a few more) into
``os.environ``, for the whole process. Kept per runner, two runners at once would mix them up:
one started with credentials would hand them to the next (which would take them for the
user's), and restored in the other order they would stay behind for good. So there is one
keeper: the first runner to start takes the user's values, every runner resolves its
credentials from those, and they are put back as soon as no runner with credentials runs
(an offline runner writes nothing: jobs in a real room may read them, as livekit's
``JobContext.api`` does).
"""

from __future__ import annotations

import os
import threading

from .. import _livekit_internals as livekit

_lock = threading.Lock()
_holders: dict[object, bool] = {}
"""each running runner's token, and whether it runs with credentials (livekit's writes)"""
_kept: dict[str, str | None] = {}
"""the user's values of what ``run`` writes, taken when the first holder came"""


def hold(*, with_credentials: bool) -> object:
    """A runner is about to run its server: keep the user's values if none are kept yet.
    Returns the token to ``release`` with."""
    token = object()
    with _lock:
        if not _holders:
            _kept.clear()
            _kept.update(livekit.environment_before_run())
        _holders[token] = with_credentials
    return token


def release(token: object | None) -> None:
    """The runner that ``hold`` gave ``token`` has stopped (None: it never held). Once no
    runner with credentials runs, the user's values are back. Releasing twice is harmless."""
    with _lock:
        if _holders.pop(token, None) is None:
            return
        if not any(_holders.values()):
            livekit.restore_environment(_kept)
        if not _holders:
            _kept.clear()


def user_value(name: str) -> str:
    """``name`` as the user set it (empty if unset): while runners run, ``os.environ`` may
    hold what livekit wrote for one of them instead."""
    with _lock:
        if _holders and name in _kept:
            return _kept[name] or ""
    return os.environ.get(name, "")
