"""One agent-level trial: A with its history, the trigger, A's tool returning B; your agents
or the bench's own pair (``bench_pair``), on a realtime model or (the bench's pair, the
cascaded level) Chat Completions.

The asked mode is applied at the handoff (``HandoffWatch``); the trial keeps what ran, as the
trace reads the handoff (its ``session`` and ``context``: the context the model answers from)
and, when that is not what was asked, why. A ``Trace`` is attached only when the trial is
traced or split into phases: reading the handoff needs none. ``YourAgents`` run in a session
the bench builds on the provider's model; ``YourServer`` runs in a ``NotebookRunner`` of its
own, its entrypoint building its models from the provider's environment.
"""

from __future__ import annotations

import asyncio
from typing import Any

from livekit.agents import Agent, AgentSession, RunResult, llm
from livekit.agents.utils import is_given
from livekit.plugins import openai

from .._environ import environment
from .._lifecycle import close_quietly
from .._text_sessions import text_turn_handling
from ..analysis import handoff_phases
from ..modes import ContextMode, SessionMode
from ..speech.tokens import tokens
from ..trace import Trace
from ..trace.livekit_spans import capture_spans_here
from ..trace.schema import HandoffData
from .clock import Clock
from .handoff_mode import HandoffWatch
from .probe import RealtimeProbe
from .providers import PROVIDERS, provider
from .scenario import history
from .trial import Ran, Timings, TrialFailed, TrialSpec, phase_timings
from .your_agents import AgentsUnderTest, YourAgents, YourServer, make_agent


async def agents_trial(spec: TrialSpec, agents: AgentsUnderTest) -> Timings:
    """Run one trial of ``agents`` as ``spec`` asks; raises TrialFailed naming what is wrong.
    A model your code builds itself (a B that pins its llm, your entrypoint's) reaches the
    trial's endpoint through the providers' environment, set for the trial: its provider's,
    and the others' that lend theirs, so an agent pinning another provider's model is still
    made, and the trial names that (``_pinned_elsewhere``) rather than that SDK's missing key."""
    variables: dict[str, str] = {}
    for entry in PROVIDERS.values():
        if entry.name != spec.provider and entry.lends_environment and entry.installed():
            variables |= entry.environment(spec.endpoint)
    # the trial's own provider's last, where they overlap
    variables |= provider(spec.provider).environment(spec.endpoint)
    with environment(variables):
        if isinstance(agents, YourServer):
            return await _trial_of_server(spec, agents)
        return await _trial_of_agents(spec, agents)


def _model(spec: TrialSpec) -> Any:
    if spec.level == "cascaded":
        return openai.LLM(
            base_url=spec.endpoint.openai_base_url(),
            api_key=spec.endpoint.api_key,
            model=spec.chat_model,
        )
    return provider(spec.provider).realtime_model(spec.endpoint, spec.model, spec.modality)


async def _trial_of_agents(spec: TrialSpec, agents: YourAgents) -> Timings:
    clock = Clock(reply_after="on_enter")
    probe = RealtimeProbe(clock)
    model = _model(spec)
    if isinstance(model, llm.RealtimeModel):
        probe.watch_model(model)
    # B's own model, when fresh, exists before t0 as it would in an app
    fresh = _model(spec) if spec.session == "fresh" else None
    session: AgentSession[None] = AgentSession(llm=model, vad=None, **text_turn_handling(model))
    errors: list[str] = []
    session.on("error", lambda ev: errors.append(f"{type(ev.error).__name__}: {ev.error}"))
    trace = Trace(session) if spec.traced or spec.phases else None
    # the session runs in no job: its spans are this trial's by context (the trial's task)
    release = capture_spans_here(trace) if trace is not None and spec.phases else None
    watch = HandoffWatch(session, (spec.session, spec.context), fresh, clock, probe)
    a: Agent | None = None
    try:
        a = make_agent(agents)
        pinned = _pinned_elsewhere(a, "A", model)
        if pinned is not None:
            raise TrialFailed(pinned)
        greeting = await session.start(a, capture_run=True)
        await greeting  # whatever A's on_enter says, said
        await _add_history(a, spec.history_turns)
        watch.install()
        result: RunResult[Any] = await session.run(user_input=agents.trigger)
        _check(agents, a, watch, result, errors + probe.errors)
        if watch.b is not None and (pinned := _pinned_elsewhere(watch.b, "B", model)):
            raise TrialFailed(pinned)
    finally:
        # closed first: every span of the handoff and of B's reply has ended
        await close_quietly(session.aclose())
        # the session closes none of these: the bench's models, and those A or B pinned
        own = [x.llm for x in (a, watch.b) if x is not None and is_given(x.llm)]
        for opened in dict.fromkeys((model, fresh, watch.own_model, *own)):
            if opened is not None:
                await close_quietly(opened.aclose())
        if trace is not None:
            trace.detach()
        if release is not None:
            release()
    return _timings(spec, clock, probe, watch, trace)


async def _trial_of_server(spec: TrialSpec, agents: YourServer) -> Timings:
    from ..runner import NotebookRunner  # the runner loads only for a server

    clock = Clock(reply_after="on_enter")
    probe = RealtimeProbe(clock)
    runner = NotebookRunner(agents.make())  # first: a factory that raises leaves nothing open
    fresh = _model(spec) if spec.session == "fresh" else None
    watch: HandoffWatch | None = None
    try:
        runner.start()
        session = await runner.ready()
        await runner.greeting()
        watch = HandoffWatch(session, (spec.session, spec.context), fresh, clock, probe)
        await runner.call(watch.install)
        a = session.current_agent
        await runner.call(_add_history, a, spec.history_turns)
        result = await runner.run(agents.trigger)
        _check(agents, a, watch, result, probe.errors)
    finally:
        await asyncio.to_thread(runner.stop)
        probe.release()
        for opened in (fresh, watch.own_model if watch is not None else None):
            if opened is not None:
                await close_quietly(opened.aclose())
    assert watch is not None  # set before the trigger, which the trial got past
    return _timings(spec, clock, probe, watch, runner.trace)


def _pinned_elsewhere(agent: Agent, who: str, model: Any) -> str | None:
    """Why ``agent`` cannot run on the trial's provider: it pins an llm of another kind than
    the bench's ``model`` for it; None if it pins none, or one of that kind."""
    own = agent.llm
    if not is_given(own) or own is None or isinstance(own, type(model)):
        return None
    return (
        f"{who} pins its own llm ({_public_name(own)}): the provider axis cannot switch it; "
        f"give {who} no llm= and let the session's model be the bench's"
    )


def _public_name(thing: object) -> str:
    """``openai.realtime.RealtimeModel``: a plugin's class where its package exports it
    (``livekit.plugins.openai.realtime.realtime_model`` -> ``openai.realtime``)."""
    kind = type(thing)
    module = kind.__module__
    if module.startswith("livekit.plugins."):
        module = module.removeprefix("livekit.plugins.").rpartition(".")[0] or module
    return f"{module}.{kind.__qualname__}"


async def _add_history(agent: Agent, turns: int) -> None:
    """``turns`` exchanges after A's own items, as if A had talked with the user that long."""
    if turns:
        ctx = agent.chat_ctx.copy()
        ctx.items.extend(history(turns).items)
        await agent.update_chat_ctx(ctx)


def _check(
    agents: AgentsUnderTest,
    a: Agent,
    watch: HandoffWatch,
    result: RunResult[Any],
    errors: list[str],
) -> None:
    if errors:
        raise TrialFailed(errors[0])
    if watch.b is None:
        raise TrialFailed(_no_handoff(agents, a, result))
    if agents.handoff_to is not None and not isinstance(watch.b, agents.handoff_to):
        raise TrialFailed(
            f"A handed off to {type(watch.b).__name__}, not {agents.handoff_to.__name__}"
        )


def _no_handoff(agents: AgentsUnderTest, a: Agent, result: RunResult[Any]) -> str:
    """Why there was nothing to measure: the trigger did not make A's tool return an agent."""
    called = [ev.item.name for ev in result.events if ev.type == "function_call"]
    said = [
        ev.item.text_content or ""
        for ev in result.events
        if ev.type == "message" and ev.item.role == "assistant"
    ]
    did = (
        f"it called {', '.join(called)}, which returned no agent"
        if called
        else f"it replied {said[-1]!r}"
        if said
        else "it did nothing"
    )
    tools = ", ".join(
        t.id for t in a.tools if isinstance(t, llm.FunctionTool | llm.RawFunctionTool)
    )
    fix = (
        f"; the emulator calls the tool the user's words name: try --trigger naming one of {tools}"
        if tools
        else "; A has no tools to hand off with"
    )
    return f"{agents.name} did not hand off on the trigger {agents.trigger!r}: {did}{fix}"


def _timings(
    spec: TrialSpec, clock: Clock, probe: RealtimeProbe, watch: HandoffWatch, trace: Trace | None
) -> Timings:
    # a cascaded reply arrives with its first streamed chunk (no realtime response)
    reply = "first_text" if spec.level == "cascaded" else "response_created"
    timings = Timings(
        handoff_ms=clock.since_t0("on_enter"),
        update_ms=probe.update_ms(),
        reply_ms=clock.since_t0(reply),
        first_text_ms=clock.since_t0("first_text"),
        first_audio_ms=clock.since_t0("first_audio"),
        ran=ran(watch),
    )
    if trace is not None and spec.phases:
        handoffs = handoff_phases(trace, spec.latency, truths=provider(spec.provider).phase_truths)
        if not handoffs:
            raise TrialFailed("the trace holds no handoff to split: no update_agent span")
        timings.phases = phase_timings(handoffs[0])
    return timings


def ran(watch: HandoffWatch) -> Ran:
    """What the handoff from A did, as the trace reads it, and why, if not what ``watch``
    asked."""
    data = watch.handoff
    if data is None or data.get("session") is None:
        raise TrialFailed("livekit never made B active: the session closed before the handoff")
    session: SessionMode = data["session"]  # type: ignore[assignment]
    context: ContextMode = data["context"]  # type: ignore[assignment]
    reasons = []
    if session != watch.asked_session:
        reasons.append(_session_reason(session, watch))
    if context != watch.asked_context:
        reasons.append(_context_reason(context, data))
    reply = watch.tool_reply
    return Ran(
        session,
        context,
        data.get("items_to", 0),
        "; ".join(reasons) or None,
        tool_reply=len(tokens(reply)) if reply is not None else None,
    )


def _session_reason(session: str, watch: HandoffWatch) -> str:
    if session == "none":
        return "A's model is not a realtime model: no session to reuse or open"
    if session == "fresh":
        return "; ".join(watch.blockers) or (
            "livekit opened a fresh session though none of 1.8.9's reuse conditions the bench "
            "mirrors failed"
        )
    return "B pins A's own model instance, so livekit reused A's session"


def _context_reason(context: str, data: HandoffData) -> str:
    items, shared = data.get("items_to", 0), data.get("items_shared", 0)
    if "livekit_context" in data:
        return (
            f"the model's server kept A's {data.get('kept_items', 0)} items on the reused "
            "session (it cannot remove a turn), though livekit's chat context for B was "
            f"{data['livekit_context']}"
        )
    if context == "empty":
        return "A's context held nothing to copy"
    return f"B started with {items} items of its context, {shared} of them A's"
