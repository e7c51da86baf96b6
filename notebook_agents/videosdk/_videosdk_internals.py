"""Every reach into videosdk-agents' private names, one named function each.

VideoSDK runs a job by binding it to context variables (``WorkerJob``'s direct mode) and wires
a room's audio track into the pipeline itself; there is no public way to do either for a room
of our own. A new videosdk-agents that renames one breaks here, loudly: ``PRIVATE_NAMES`` lists
them and a test checks each exists on the installed version.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from videosdk.agents import JobContext, Pipeline
from videosdk.agents import job as videosdk_job

PRIVATE_NAMES: dict[Any, tuple[str, ...]] = {
    videosdk_job: (
        "_set_current_job_context",
        "_reset_current_job_context",
        "_enter_session_scope",
        "_exit_session_scope",
    ),
    Pipeline: ("_set_loop_and_audio_track",),
    JobContext: ("_loop",),
}


@contextmanager
def job_scope(ctx: JobContext) -> Iterator[None]:
    """Run inside as ``WorkerJob`` runs a job (its direct mode): ``ctx`` is the current job
    context, which an ``AgentSession`` and a ``Pipeline`` register with when made, and the
    session gets a fresh metrics collector and event bus of its own (context variables, so
    two sessions in one kernel keep theirs apart). Enter and exit in the same task."""
    token = videosdk_job._set_current_job_context(ctx)
    scope = videosdk_job._enter_session_scope()
    try:
        yield
    finally:
        videosdk_job._exit_session_scope(scope)
        videosdk_job._reset_current_job_context(token)


def wire_audio_track(ctx: JobContext, pipeline: Pipeline, track: Any) -> None:
    """Give ``pipeline`` the room's agent audio track, on the job's loop, as
    ``JobContext.connect`` does for VideoSDK's own rooms (the TTS writes into it)."""
    pipeline._set_loop_and_audio_track(ctx._loop, track)
