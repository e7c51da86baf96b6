"""What the trace wraps on agents and realtime sessions, and puts back on ``detach``.

livekit emits no session event for some of what the trace records: an agent's chat context
edited from code (``update_chat_ctx``), an ``on_enter``/``on_exit`` that raised (livekit runs
them in a task whose error nobody retrieves) and a realtime context sync (a failed one is only
logged). The trace wraps those methods on the instances, once each, and listens to each
realtime session's own events (its connection and responses become spans: ``realtime_spans``);
``restore`` undoes all of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from livekit.agents import Agent, llm

from .realtime_spans import RealtimeSpans
from .tap import Handler, listen

if TYPE_CHECKING:
    # AgentActivity has no public export: the running agent's activity holds its model and
    # realtime session, which the trace watches
    from livekit.agents.voice.agent_activity import AgentActivity


class Watcher(Protocol):
    """What the wrappers tell about agents (the trace's session reader). The methods of both
    watchers may raise: each call is guarded, a failure reported with ``failed``."""

    realtime_handlers: dict[str, Handler]
    """each realtime session's events the trace listens to, and its handlers"""

    def context_edited(self, agent: Agent, before: list[llm.ChatItem]) -> None: ...

    def hook_raised(self, agent: Agent, hook: str, error: Exception) -> None: ...

    def cancelling(self) -> None:
        """livekit asks the model to cancel the response in flight (a barge-in)."""

    def failed(self, error: Exception) -> None: ...


class SyncWatcher(Protocol):
    """What the wrappers tell about realtime context syncs (the trace's model side), and
    what it listens to on each realtime session of its own."""

    def session_handlers(self, rt_session: llm.RealtimeSession[Any]) -> dict[str, Handler]: ...

    def sync_started(self) -> None: ...

    def sync_failed(self, error: llm.RealtimeError) -> None: ...

    def sync_ended(self) -> None: ...

    def synced(self, chat_ctx: llm.ChatContext, rt_session: llm.RealtimeSession[Any]) -> None: ...


_ABSENT = object()


class Patches:
    """The wrappers and listeners in place, each once, to be restored."""

    def __init__(self, watcher: Watcher, syncs: SyncWatcher) -> None:
        self._watcher = watcher
        self._syncs = syncs
        # (object, attribute, its own value before the trace wrapped it, or _ABSENT)
        self._wrapped: list[tuple[Any, str, Any]] = []
        # (emitter, stop listening) beyond the session's own events: its realtime sessions
        self._listening: list[tuple[Any, Callable[[], None]]] = []

    def watch_agent(self, activity: AgentActivity) -> None:
        """Watch the agent of ``activity``: its context edits, its hooks, its model."""
        self._watch_context(activity.agent)
        self._watch_hooks(activity.agent)
        self.watch_realtime(activity)

    def watch_realtime(self, activity: AgentActivity) -> None:
        """Watch the realtime sessions of ``activity``'s model (made now or later)."""
        model = activity.llm
        if not isinstance(model, llm.RealtimeModel):
            return

        def wrapped_factory(original: Callable[..., Any]) -> Callable[..., Any]:
            def session(*args: Any, **kwargs: Any) -> Any:
                made = original(*args, **kwargs)
                self._guarded(self._watch_realtime_session, made)
                return made

            return session

        self._wrap(model, "session", wrapped_factory)
        if activity.realtime_llm_session is not None:
            self._watch_realtime_session(activity.realtime_llm_session)

    def restore(self) -> None:
        """Put back every method wrapped and stop listening."""
        for target, name, previous in reversed(self._wrapped):
            with contextlib.suppress(AttributeError):
                if previous is _ABSENT:
                    delattr(target, name)
                else:
                    setattr(target, name, previous)
        self._wrapped.clear()
        for _, stop in self._listening:
            stop()
        self._listening.clear()

    def _wrap(self, target: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Replace ``target.name`` by ``make(original)`` once; ``restore`` puts it back."""
        if any(t is target and n == name for t, n, _ in self._wrapped):
            return
        self._wrapped.append((target, name, vars(target).get(name, _ABSENT)))
        setattr(target, name, make(getattr(target, name)))

    def _guarded(self, call: Callable[..., None], *args: Any) -> None:
        try:
            call(*args)
        except (
            Exception
        ) as e:  # what the wrapper wraps is done: failing to record it must not fail it
            self._watcher.failed(e)

    def _watch_context(self, agent: Agent) -> None:
        """Wrap the agent's ``update_chat_ctx``: an edit from code records ``context_changed``."""
        watcher = self._watcher

        def wrapped(original: Callable[..., Any]) -> Callable[..., Any]:
            async def update_chat_ctx(chat_ctx: llm.ChatContext, *args: Any, **kwargs: Any) -> None:
                before = agent.chat_ctx.items  # a copy, as the read-only context always is
                await original(chat_ctx, *args, **kwargs)
                self._guarded(watcher.context_edited, agent, before)

            return update_chat_ctx

        self._wrap(agent, "update_chat_ctx", wrapped)

    def _watch_hooks(self, agent: Agent) -> None:
        """Wrap the agent's ``on_enter``/``on_exit`` so that one raising is recorded."""
        for hook in ("on_enter", "on_exit"):

            def wrapped(original: Callable[[], Any], hook: str = hook) -> Callable[[], Any]:
                async def run_hook() -> None:
                    try:
                        await original()
                    except Exception as e:
                        self._guarded(self._watcher.hook_raised, agent, hook, e)
                        raise

                return run_hook

            self._wrap(agent, hook, wrapped)

    def _watch_realtime_session(self, rt_session: llm.RealtimeSession[Any]) -> None:
        """Wrap its context sync, whose failure livekit only logs, and its ``interrupt``
        (livekit's own cancel, which the model then reports like one of its own), and listen
        to its events."""
        syncs = self._syncs

        def wrapped(original: Callable[..., Any]) -> Callable[..., Any]:
            async def update_chat_ctx(chat_ctx: llm.ChatContext) -> None:
                self._guarded(syncs.sync_started)
                try:
                    await original(chat_ctx)
                except llm.RealtimeError as e:
                    self._guarded(syncs.sync_failed, e)
                    raise
                finally:
                    self._guarded(syncs.sync_ended)
                self._guarded(syncs.synced, chat_ctx, rt_session)

            return update_chat_ctx

        self._wrap(rt_session, "update_chat_ctx", wrapped)

        def wrapped_interrupt(original: Callable[[], None]) -> Callable[[], None]:
            def interrupt() -> None:
                self._guarded(self._watcher.cancelling)
                original()

            return interrupt

        self._wrap(rt_session, "interrupt", wrapped_interrupt)
        if not any(emitter is rt_session for emitter, _ in self._listening):
            handlers = {**self._watcher.realtime_handlers, **syncs.session_handlers(rt_session)}
            for listened in (handlers, RealtimeSpans().handlers()):
                stop = listen(rt_session, listened, self._watcher.failed)
                self._listening.append((rt_session, stop))
