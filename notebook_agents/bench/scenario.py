"""One benchmark trial: a real handoff, timed from t0 = A's tool returning B.

``agent`` level: a real ``AgentSession`` over the real realtime plugin; A (with the history
in its context) is asked to hand off, its tool returns B, B's ``on_enter`` replies: your
agents or the bench's own pair (``bench_pair``), both run by ``user_trial`` and labelled by
what the handoff did. ``cascaded`` level: the same over Chat Completions (``openai.LLM``).
``session`` level mirrors upstream's own test: a bare realtime session, ``_update_session``
then a reply; the bench itself sends the mode, so it is labelled as asked.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import llm

from .. import _livekit_internals as livekit
from .._lifecycle import close_quietly
from ..analysis import Breakdown
from ..emulator import LatencyModel
from ..modes import ContextMode, SessionMode
from .providers import Endpoint, provider
from .results import Level, Modality, PhaseTiming
from .your_agents import YourAgents

QUESTION = "What is 2 + 2?"
HANDOFF_REQUEST = "Please transfer to the specialist."
A_INSTRUCTIONS = "You are the receptionist. You route callers."
B_INSTRUCTIONS = "You are the specialist. Answer in one sentence."


@dataclass
class TrialSpec:
    level: Level
    session: SessionMode
    context: ContextMode
    history_turns: int
    endpoint: Endpoint
    """where the models connect (the emulator with the trial's network, or a foreign URL)"""
    model: str | None = None
    """the realtime model's name; None: the provider's default"""
    chat_model: str = "gpt-4o-mini"
    traced: bool = False
    modality: Modality = "text"
    phases: bool = False
    """split the handoff into its phases: a Trace attached, livekit's spans captured"""
    latency: LatencyModel | None = None
    """the emulator's network at ``endpoint``: the phases' truths (None: a foreign target)"""
    provider: str = "openai"
    agents: YourAgents | None = None
    """your agents instead of the bench's own pair (agent level)"""


@dataclass
class Ran:
    """What a trial's handoff did as the trace reads it, where that can differ from what was
    asked: the session and context mode, the items B started with, and why not as asked."""

    session: SessionMode
    context: ContextMode
    items: int
    """the conversation items B's context carried (``handoff_truths``' ``items``)"""
    reason: str | None = None
    tool_reply: int | None = None
    """the deltas of A's reply to its tool's output, which the handoff waited for (a tool
    returning ``(B, "message")`` on OpenAI); None: no such reply (``handoff_truths``')"""


@dataclass
class Timings:
    """Milliseconds from t0; None where the trial has no such moment."""

    handoff_ms: float | None = None
    update_ms: float | None = None
    reply_ms: float | None = None
    first_text_ms: float | None = None
    first_audio_ms: float | None = None
    phases: dict[str, PhaseTiming] = field(default_factory=dict)
    ran: Ran | None = None
    """what the handoff did, as the trace reads it; None: as asked (the session level)"""


def history(turns: int) -> llm.ChatContext:
    """``turns`` user/assistant exchanges, as if A had talked with the user that long."""
    ctx = llm.ChatContext()
    for i in range(turns):
        ctx.add_message(role="user", content=f"Tell me fact number {i + 1}.")
        ctx.add_message(role="assistant", content=f"Fact {i + 1}: {i * 7} is interesting.")
    return ctx


@dataclass
class Clock:
    """The trial's moments on one perf_counter clock; each recorded once, the first time."""

    t0: float | None = None
    marks: dict[str, float] = field(default_factory=dict)
    reply_after: str | None = None
    """a mark the reply's marks must follow (B's ``on_enter``): a generation before it is
    not B's (Gemini answers A's handoff tool on its own)"""

    def mark(self, name: str) -> None:
        if self.t0 is not None and name not in self.marks:
            self.marks[name] = time.perf_counter()

    def mark_reply(self, name: str) -> None:
        """``mark``, once the reply can be B's."""
        if self.reply_after is None or self.reply_after in self.marks:
            self.mark(name)

    def since_t0(self, name: str) -> float | None:
        if self.t0 is None or name not in self.marks:
            return None
        return (self.marks[name] - self.t0) * 1000.0


class RealtimeProbe:
    """Times the realtime sessions a model opens: creation, ``_update_session``, replies."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.update_started: float | None = None
        self.update_ended: float | None = None
        self.errors: list[str] = []
        self._models: list[llm.RealtimeModel] = []
        self._sessions: list[Any] = []

    def watch_model(self, model: llm.RealtimeModel) -> None:
        """Watch each session ``model`` opens from now on (once per model, until ``release``)."""
        if any(watched is model for watched in self._models):
            return
        self._models.append(model)
        open_session = model.session

        def session(*args: Any, **kwargs: Any) -> Any:
            created = time.perf_counter()
            rt = open_session(*args, **kwargs)
            self.watch_session(rt, created)
            return rt

        model.session = session  # type: ignore[method-assign]

    def release(self) -> None:
        """Stop watching the models: a model that outlives the trial (your server's, made
        once) opens its sessions as before."""
        for model in self._models:
            vars(model).pop("session", None)
        self._models.clear()

    def watch_session(self, rt: Any, created: float = -math.inf) -> None:
        """Time ``rt``'s updates and replies (``created``: when it was opened, if after t0)."""
        if any(watched is rt for watched in self._sessions):
            return
        self._sessions.append(rt)
        clock = self.clock

        def timed(update: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
            async def update_session(*args: Any, **kwargs: Any) -> None:
                started = time.perf_counter()
                await update(*args, **kwargs)
                if clock.t0 is not None and started >= clock.t0 and self.update_ended is None:
                    # a session opened for B counts from its creation (upstream's "handoff")
                    self.update_started = created if created >= clock.t0 else started
                    self.update_ended = time.perf_counter()

            return update_session

        livekit.wrap_update_session(rt, timed)
        # any provider's session says a reply began; OpenAI's events say it sooner, and more
        rt.on("generation_created", lambda _: self.clock.mark_reply("response_created"))
        rt.on("openai_server_event_received", self._on_server_event)
        rt.on("error", lambda ev: self.errors.append(f"{type(ev.error).__name__}: {ev.error}"))

    def _on_server_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.created":
            self.clock.mark_reply("response_created")
        elif kind in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            self.clock.mark_reply("first_text")
        elif kind == "response.output_audio.delta":
            self.clock.mark_reply("first_audio")

    def update_ms(self) -> float | None:
        if self.update_started is None or self.update_ended is None:
            return None
        return (self.update_ended - self.update_started) * 1000.0


class TrialFailed(RuntimeError):
    """The trial could not be measured; the message is recorded as its reason."""


async def run_trial(spec: TrialSpec) -> Timings:
    """Run one trial of ``spec``; raises TrialFailed (or times out in the caller)."""
    if spec.level == "session":
        return await _session_trial(spec)
    # its modules build on this one
    from .bench_pair import bench_pair
    from .user_trial import user_trial

    return await user_trial(spec, spec.agents or bench_pair(spec.session))


def _realtime_model(spec: TrialSpec) -> Any:
    return provider(spec.provider).realtime_model(spec.endpoint, spec.model, spec.modality)


def phase_timings(breakdown: Breakdown) -> dict[str, PhaseTiming]:
    """A handoff's phases as a trial keeps them, in milliseconds."""

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else seconds * 1000.0

    return {
        phase.name: PhaseTiming(
            ms=phase.seconds * 1000.0,
            truth_ms=ms(phase.truth),
            livekit_ms=ms(phase.livekit),
            critical=phase.critical,
        )
        for phase in breakdown.phases
    }


async def _session_trial(spec: TrialSpec) -> Timings:
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
