"""The one hook the runner needs in livekit: see each ``AgentSession`` its jobs start.

``AgentSession.start`` is wrapped once per process. The wrapper is a pass-through for every
session that is not started inside a runner's job, so agent code elsewhere in the kernel (or a
deployed worker importing the same module) behaves exactly as upstream.
"""

from __future__ import annotations

import copy
import functools
import threading
import weakref
from typing import Any, Protocol

from livekit.agents import (
    NOT_GIVEN,
    AgentSession,
    JobContext,
    RunResult,
    get_job_context,
    room_io,
)
from livekit.agents.utils import is_given

from .. import _livekit_internals as livekit


class SessionObserver(Protocol):
    """What a runner does when its job starts a session."""

    text_only: bool

    def session_starting(self, session: AgentSession[Any]) -> bool:
        """whether this start is the one whose greeting ``session_started`` is to get"""

    def session_started(self, session: AgentSession[Any], greeting: RunResult[Any]) -> None:
        """``greeting``: the start's run, as ``start(capture_run=True)`` returns it"""


_observers: weakref.WeakKeyDictionary[JobContext, SessionObserver] = weakref.WeakKeyDictionary()
_upstream_start = AgentSession.start
_install_lock = threading.Lock()


def observe_job(ctx: JobContext, observer: SessionObserver) -> None:
    """Sessions started in ``ctx``'s job are reported to ``observer`` (until ``forget_job``)."""
    _install()
    _observers[ctx] = observer


def forget_job(ctx: JobContext) -> None:
    _observers.pop(ctx, None)


@functools.wraps(_upstream_start)
async def _start(self: AgentSession[Any], agent: Any, **kwargs: Any) -> Any:
    ctx = get_job_context(required=False)
    observer = _observers.get(ctx) if ctx is not None else None
    if observer is None:
        return await _upstream_start(self, agent, **kwargs)
    if observer.text_only and is_given(kwargs.get("room", NOT_GIVEN)):
        kwargs["room_options"] = _without_audio(kwargs)
        # nobody can join the offline room to drive or watch the session (livekit's
        # RemoteSession): hosting them would encode every event of every turn for nobody
        kwargs.setdefault("session_host", False)
    greeted = observer.session_starting(self)
    # the greeting is captured as capture_run does; the entrypoint gets what it asked for
    capture = greeted and not kwargs.get("capture_run")
    greeting = livekit.capture_start(self) if capture else None
    try:
        result = await _upstream_start(self, agent, **kwargs)
    except BaseException:
        if greeting is not None:
            livekit.release_run(self, greeting)
        raise
    if greeted:
        observer.session_started(self, greeting or result)
    return result


def _without_audio(kwargs: dict[str, Any]) -> room_io.RoomOptions:
    """The caller's room options (however given) with audio in and out turned off.

    Offline the room is a mock with no tracks: audio I/O would only log errors, and text in
    and out is what a notebook talks through.
    """
    options = copy.copy(livekit.room_options(kwargs))
    options.audio_input = False
    options.audio_output = False
    return options


def _install() -> None:
    with _install_lock:
        if AgentSession.start is not _start:
            AgentSession.start = _start  # type: ignore[method-assign]
