"""One benchmark trial: a real handoff, timed from t0 = A's tool returning B.

``agent`` level: a real ``AgentSession`` over the real realtime plugin; A (with the history
already in its context) is asked to transfer, its tool returns B, B's ``on_enter`` replies.
``session`` level mirrors upstream's own test: a bare realtime session, ``_update_session``
then a reply. ``cascaded`` level: the same handoff over Chat Completions (``openai.LLM``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import (
    NOT_GIVEN,
    Agent,
    AgentSession,
    FlushSentinel,
    ModelSettings,
    function_tool,
    llm,
)
from livekit.plugins import openai

from .. import _livekit_internals as livekit
from ..emulator import LatencyModel
from ..modes import ContextMode, SessionMode
from ..phases import Breakdown, handoff_phases
from ..trace import Trace
from ..trace.livekit_spans import capture_spans_here
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
    """the emulator's network at ``base_url``: the phases' truths (None: a foreign target)"""
    provider: str = "openai"
    agents: YourAgents | None = None
    """your agents instead of the bench's own pair (agent level)"""


@dataclass
class Ran:
    """What a trial's trace says its handoff did, where that can differ from what was asked
    (your agents): the session and context mode, the items B started with, and why not as
    asked."""

    session: SessionMode
    context: ContextMode
    items: int
    """the conversation items B's context carried (``handoff_truths``' ``items``)"""
    reason: str | None = None


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
    """what the trace says ran (your agents); None: as asked"""


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
    if spec.agents is not None:
        from .user_trial import user_trial  # its module builds on this one

        return await user_trial(spec, spec.agents)
    return await _agent_trial(spec)


def _realtime_model(spec: TrialSpec) -> Any:
    return provider(spec.provider).realtime_model(spec.endpoint, spec.model, spec.modality)


async def _agent_trial(spec: TrialSpec) -> Timings:
    clock = Clock(reply_after="on_enter")
    probe = RealtimeProbe(clock)
    reply_done = asyncio.Event()
    models: list[Any] = []
    cascaded = spec.level == "cascaded"

    def new_model() -> Any:
        if cascaded:
            model: Any = openai.LLM(
                base_url=spec.endpoint.openai_base_url(),
                api_key=spec.endpoint.api_key,
                model=spec.chat_model,
            )
        else:
            model = _realtime_model(spec)
            probe.watch_model(model)
        models.append(model)
        return model

    class Specialist(Agent):
        def __init__(
            self,
            chat_ctx: llm.ChatContext | None,
            model: Any,
            tools: list[llm.Tool | llm.Toolset],
        ) -> None:
            super().__init__(
                instructions=B_INSTRUCTIONS,
                chat_ctx=chat_ctx if chat_ctx is not None else NOT_GIVEN,
                llm=model if model is not None else NOT_GIVEN,
                tools=tools,
            )

        async def on_enter(self) -> None:
            clock.mark("on_enter")
            handle = self.session.generate_reply()
            handle.add_done_callback(lambda _: reply_done.set())

        async def llm_node(
            self, chat_ctx: llm.ChatContext, tools: list[llm.Tool], model_settings: ModelSettings
        ) -> AsyncIterable[llm.ChatChunk | str | FlushSentinel]:
            # cascaded only: the first streamed chunk is B's reply arriving
            async for chunk in Agent.default.llm_node(self, chat_ctx, tools, model_settings):
                clock.mark("first_text")
                yield chunk

    # B's own model, when fresh, exists before t0 as it would in an app (opening is B's cost)
    b_model = new_model() if spec.session == "fresh" else None

    class Receptionist(Agent):
        def __init__(self) -> None:
            super().__init__(instructions=A_INSTRUCTIONS, chat_ctx=history(spec.history_turns))

        @function_tool
        async def transfer_to_the_specialist(self) -> Agent:
            """Hand the caller to the specialist."""
            copied = self.chat_ctx.copy() if spec.context == "copied" else None
            model = self.session.llm
            # a model that cannot change a live session's tools (Gemini Live) keeps it only
            # for the same tool objects: the reuse arm hands B A's own
            shared = (
                spec.session == "reused"
                and isinstance(model, llm.RealtimeModel)
                and not model.capabilities.mutable_tools
            )
            specialist = Specialist(copied, b_model, list(self.tools) if shared else [])
            clock.t0 = time.perf_counter()
            return specialist

    session: AgentSession[None] = AgentSession(
        llm=new_model(), vad=None, turn_handling={"turn_detection": "manual"}
    )
    errors: list[str] = []
    session.on("error", lambda ev: errors.append(f"{type(ev.error).__name__}: {ev.error}"))
    trace = Trace(session) if spec.traced or spec.phases else None
    # the session runs in no job: its spans are this trial's by context (the trial's task)
    release = capture_spans_here(trace) if trace is not None and spec.phases else None
    try:
        await session.start(Receptionist())
        await session.run(user_input=HANDOFF_REQUEST)
        await reply_done.wait()
        if errors or probe.errors:
            raise TrialFailed((errors + probe.errors)[0])
        if clock.t0 is None:
            raise TrialFailed(
                "A's tool never ran: the model did not call transfer_to_the_specialist"
            )
        reply_mark = "first_text" if cascaded else "response_created"
        if reply_mark not in clock.marks:
            raise TrialFailed("B's reply never arrived")
        timings = Timings(
            handoff_ms=clock.since_t0("on_enter"),
            update_ms=probe.update_ms(),
            reply_ms=clock.since_t0(reply_mark),
            first_text_ms=clock.since_t0("first_text"),
            first_audio_ms=clock.since_t0("first_audio"),
        )
    finally:
        # closed first when splitting: every span of the handoff and of B's reply has ended
        if trace is not None and release is None:
            trace.detach()
        await _close(session, models)
        if trace is not None and release is not None:
            trace.detach()
            release()
    if trace is not None and spec.phases:
        handoffs = handoff_phases(trace, spec.latency, truths=provider(spec.provider).phase_truths)
        if not handoffs:
            raise TrialFailed("the trace holds no handoff to split: no update_agent span")
        timings.phases = phase_timings(handoffs[-1])
    return timings


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


async def _close(session: AgentSession[None], models: list[Any]) -> None:
    await close_quietly(session.aclose())
    for model in models:
        await close_quietly(model.aclose())


async def close_quietly(closing: Any, timeout: float = 5.0) -> None:
    """Cleanup after a failed trial must not hang or mask the trial's own error."""
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(closing, timeout)
