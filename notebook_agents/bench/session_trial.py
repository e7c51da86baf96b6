"""The ``session`` level: upstream's own test, a bare realtime session per mode.

``_update_session`` to B's instructions and context, then a question and a reply; the bench
itself sends the mode, so the trial is labelled as asked (``agents_trial`` has the levels
that run a real handoff).
"""

from __future__ import annotations

import time
from typing import Any

from livekit.agents import llm

from .. import _livekit_internals as livekit
from .._lifecycle import close_quietly
from .clock import Clock
from .probe import RealtimeProbe
from .providers import provider
from .scenario import B_INSTRUCTIONS, QUESTION, history
from .trial import Timings, TrialFailed, TrialSpec


def _realtime_model(spec: TrialSpec) -> Any:
    return provider(spec.provider).realtime_model(spec.endpoint, spec.model, spec.modality)


async def session_trial(spec: TrialSpec) -> Timings:
    """Upstream's test, per mode: ``_update_session`` to B's instructions and context, then
    the question and a reply; ``update_ms`` = ``handoff_ms`` = the update, as upstream times."""
    clock = Clock()
    probe = RealtimeProbe(clock)
    model = _realtime_model(spec)
    probe.watch_model(model)
    long_ctx = history(spec.history_turns)
    rt = model.session()
    try:
        if spec.session == "reused":
            await rt.update_chat_ctx(long_ctx)
        clock.t0 = time.perf_counter()
        chat_ctx = long_ctx.copy() if spec.context == "copied" else llm.ChatContext()
        await livekit.update_session(rt, instructions=B_INSTRUCTIONS, chat_ctx=chat_ctx)
        clock.mark("updated")
        ctx = rt.chat_ctx.copy()
        ctx.add_message(role="user", content=QUESTION)
        await rt.update_chat_ctx(ctx)
        generation = await rt.generate_reply()
        clock.mark("reply")
        async for message in generation.message_stream:
            async for _ in message.text_stream:
                pass
        if probe.errors:
            raise TrialFailed(probe.errors[0])
        update = clock.since_t0("updated")
        return Timings(
            handoff_ms=update,
            update_ms=update,
            reply_ms=clock.since_t0("reply"),
            first_text_ms=clock.since_t0("first_text"),
        )
    finally:
        await close_quietly(rt.aclose())
        await close_quietly(model.aclose())
