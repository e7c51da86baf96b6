"""Trace: every event of a LiveKit ``AgentSession``, normalized, each exactly once.

A ``Trace`` attaches to a session on the session's own loop (the job thread, under the
runner) and records ``TraceEvent``s on one monotonic clock. Subscribers are called on the loop
they subscribed from (a notebook's kernel loop), so views never touch the job thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from livekit.agents import llm
from livekit.agents.utils import misc
from livekit.agents.voice import agent_activity as _activity
from livekit.agents.voice.agent import Agent
from livekit.agents.voice.agent_session import AgentSession
from livekit.agents.voice.events import EventTypes

from . import _livekit_internals as livekit
from ._contexts import agent_contexts, divergences
from ._records import FieldError, build, not_utf8, value
from .modes import SessionMode

EventKind = Literal[
    "agent_state",
    "user_state",
    "user_message",
    "agent_message",
    "tool_call",
    "tool_output",
    "handoff",
    "context_changed",
    "metrics",
    "error",
    "closed",
    "context_diverged",
    "context_converged",
]
"""What a ``TraceEvent`` records; ``data`` per kind as DESIGN.md writes it, and:

- ``context_diverged``: livekit's chat context of the active agent and the model's
  conversation (the realtime plugin's view of it, built from the server's acks) no longer hold
  the same items in the same order, seen between turns. ``agent``; ``missing`` (items livekit
  has that the model lacks), ``extra`` (the model has, livekit lacks), ``order`` (the shared
  items are in another order); ``livekit`` and ``model``, both views then; ``message``.
  Recorded once when they part, not again while they stay apart.
- ``context_converged``: they hold the same again. ``agent``; ``items`` (how many).
"""
ErrorSource = Literal["stt", "llm", "tts", "realtime", "session", "agent", "runner", "trace"]
"""what failed: a model (speech recognition, LLM, speech synthesis, realtime), the session,
the agent's own code (a hook that raised), the runner's job, or the trace itself"""
_ERROR_SOURCES: dict[str, ErrorSource] = {
    "stt_error": "stt",
    "llm_error": "llm",
    "tts_error": "tts",
    "realtime_model_error": "realtime",
}
"""livekit's ``ErrorEvent.error.type`` -> the trace's ``source``"""
DELIVERY_INTERVAL_S = 0.01
"""subscribers on another thread get events in batches at most this late (a display frame)"""
TRACE_FORMAT = "notebook-agents.trace/1"
"""the first line of a saved trace, so an unrelated or newer file is refused clearly"""


@dataclass(frozen=True)
class TraceEvent:
    """One session event: ``t`` is seconds since the trace started; ``agent`` the active agent."""

    seq: int
    t: float
    kind: EventKind
    agent: str | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


Subscriber = Callable[[TraceEvent], None]


def agent_label(agent: Agent) -> str:
    """The agent's class name, unless it was given an ``id`` of its own."""
    return _label(type(agent).__name__, agent.id)


@functools.lru_cache(maxsize=1024)
def _label(name: str, agent_id: str) -> str:
    # every event is labelled: uncached, the two regex passes of camel_to_snake_case were
    # most of a record's cost (benchmarks/trace_overhead.py)
    return name if agent_id in (misc.camel_to_snake_case(name), "default_agent") else agent_id


def describe_item(item: llm.ChatItem) -> dict[str, Any]:
    """A chat item as the trace shows it: id, type, role and text."""
    described: dict[str, Any] = {"id": item.id, "type": item.type}
    if isinstance(item, llm.ChatMessage):
        described.update(role=item.role, text=_text(item))
    elif isinstance(item, llm.FunctionCall):
        described.update(name=item.name, call_id=item.call_id, text=item.arguments)
    elif isinstance(item, llm.FunctionCallOutput):
        described.update(name=item.name, call_id=item.call_id, text=item.output)
    return described


def _text(message: llm.ChatMessage) -> str:
    """``message.text_content``: the text without expressive ``<expr/>`` markup."""
    raw = message.raw_text_content or ""
    # text_content imports and runs the markup stripper on each call, most of a message
    # event's cost (benchmarks/trace_overhead.py); without a tag there is nothing to strip
    return (message.text_content or "") if "expr" in raw else raw


def _conversation_items(agent: Agent) -> list[llm.ChatItem]:
    """What an agent brings to a conversation: messages and tool items, not config entries."""
    return [
        item
        for item in agent.chat_ctx.items
        if item.type in ("message", "function_call", "function_call_output")
        and not (isinstance(item, llm.ChatMessage) and item.role in ("system", "developer"))
    ]


@dataclass
class _Speech:
    source: str
    phase: str


class Trace:
    """Records a session's events; attach with ``Trace(session)`` or ``trace.attach(session)``.

    ``trace.events`` is the list so far; ``trace.subscribe(fn)`` calls ``fn`` with each new
    event on the subscriber's loop. ``save``/``load`` round-trip through JSON Lines.
    """

    def __init__(self, session: AgentSession[Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._events: list[TraceEvent] = []
        # replaced on (un)subscribe, never mutated: _record reads it without copying
        self._subscribers: list[tuple[asyncio.AbstractEventLoop | None, Subscriber]] = []
        # events recorded but not yet delivered on each subscriber loop
        self._outboxes: dict[asyncio.AbstractEventLoop, list[tuple[Subscriber, TraceEvent]]] = {}
        self._t0 = time.perf_counter()
        self.started_at = time.time()
        """wall-clock time (Unix seconds) of t = 0, so a view can tell how long ago t was"""
        self.loaded = False
        """True for a trace read by ``load``: a replay, it will not grow"""
        self._session: AgentSession[Any] | None = None
        self._handlers: dict[EventTypes, Callable[[Any], None]] = {}
        self._seen_items: set[str] = set()
        self._seen_calls: set[tuple[str, str]] = set()
        self._speeches: dict[str, _Speech] = {}
        self._current: _activity.AgentActivity | None = None
        self._closed_recorded = False
        # why the session is ending, when its runner knows before livekit says (a job failed)
        self._failure: str | None = None
        # the items each agent held when it last handed off: a returning agent's own
        self._left_with: weakref.WeakKeyDictionary[Agent, set[str]] = weakref.WeakKeyDictionary()
        # (object, attribute, its own value before the trace wrapped it, or _ABSENT)
        self._wrapped: list[tuple[Any, str, Any]] = []
        # (emitter, event, handler) the trace listens to beyond the session's own events
        self._listening: list[tuple[Any, str, Callable[[Any], None]]] = []
        # agents whose chat context and model's conversation parted at the last comparison
        self._parted: set[str] = set()
        self._syncs = 0  # realtime context syncs under way: their items are in flight
        # the activity whose tool handed off: its context is never the model's again
        self._leaving: _activity.AgentActivity | None = None
        self._compare_pending = False
        if session is not None:
            self.attach(session)

    # -- reading ---------------------------------------------------------------------------

    @property
    def events(self) -> list[TraceEvent]:
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def of_kind(self, *kinds: EventKind) -> list[TraceEvent]:
        return [e for e in self.events if e.kind in kinds]

    def events_since(self, seq: int) -> list[TraceEvent]:
        """The events from sequence number ``seq`` on (``len(trace)`` taken earlier)."""
        with self._lock:
            return self._events[seq:]

    def contexts_at(self, t: float | None = None) -> dict[str, list[dict[str, Any]]]:
        """Each agent's chat context at trace time ``t`` (default: the end), rebuilt from the
        events: what a replay shows when scrubbed to ``t``. Items as ``describe_item`` gives."""
        return agent_contexts(self.events, t)

    def divergences_at(self, t: float | None = None) -> dict[str, TraceEvent]:
        """Each agent whose chat context and model's conversation were apart at trace time
        ``t`` (default: the end): its ``context_diverged`` event, both sides as they parted."""
        return divergences(self.events, t)

    def to_records(self) -> list[dict[str, Any]]:
        """Plain dicts, one per event, for pandas or matplotlib."""
        return [e.to_record() for e in self.events]

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for each new event, on the calling thread's running loop.

        Returns a function that unsubscribes. Without a running loop, callbacks run on
        whichever thread records the event.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        entry = (loop, callback)
        with self._lock:
            self._subscribers = [*self._subscribers, entry]

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not entry]

        return unsubscribe

    # -- saving ----------------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the events as JSON Lines (a format line first)."""
        path = Path(path)
        with path.open("w", encoding="utf-8") as out:
            header = {"format": TRACE_FORMAT, "started_at": self.started_at}
            out.write(json.dumps(header) + "\n")
            for event in self.events:
                out.write(json.dumps(event.to_record(), default=str) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """A trace saved by ``save``, for replay in the views; no session is attached."""
        path = Path(path)
        trace = cls()
        trace.loaded = True
        # bytes, decoded line by line: a file that is not UTF-8 is refused at its line
        with path.open("rb") as lines:
            header = _parse_line(path, 1, next(lines, b""))
            if header.get("format") != TRACE_FORMAT:
                raise ValueError(
                    f"{path}:1: not a notebook-agents trace (format {header.get('format')!r}, "
                    f"expected {TRACE_FORMAT!r}); save one with Trace.save()"
                )
            number = 1  # the line being read, which an error names
            try:
                if "started_at" in header:
                    trace.started_at = value(header["started_at"], float, "started_at")
                for number, line in enumerate(lines, start=2):
                    if line.strip():
                        trace._events.append(build(TraceEvent, _parse_line(path, number, line)))
            except FieldError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
        return trace

    # -- attaching -------------------------------------------------------------------------

    def attach(self, session: AgentSession[Any]) -> None:
        """Start recording ``session``; call before ``session.start`` to see everything."""
        if self._session is not None:
            raise RuntimeError("this Trace is already attached; make a new Trace per session")
        self._session = session
        self._handlers = {
            "agent_state_changed": self._on_agent_state,
            "user_state_changed": self._on_user_state,
            "conversation_item_added": self._on_item_added,
            "speech_created": self._on_speech_created,
            "tool_execution_updated": self._on_tool_update,
            "function_tools_executed": self._on_tools_executed,
            "metrics_collected": self._on_metrics,
            "error": self._on_error,
            "close": self._on_close,
        }
        for name, handler in self._handlers.items():
            # The emitter inspects each callback's signature on every emit; a fixed one is
            # cached here, which keeps the trace cheap enough to leave on in benchmarks.
            wrapper = _guarded(self, handler)
            self._handlers[name] = wrapper
            livekit.listen(session, name, wrapper)
        running = livekit.current_activity(session)
        if running is not None:  # attached after start: watch what is running
            self._watch_realtime(running)

    def detach(self) -> None:
        """Stop recording and restore every agent method the trace wrapped."""
        session, self._session = self._session, None
        if session is None:
            return
        for name, handler in self._handlers.items():
            with contextlib.suppress(KeyError, ValueError):
                session.off(name, handler)
        for target, name, previous in reversed(self._wrapped):
            with contextlib.suppress(AttributeError):
                if previous is _ABSENT:
                    delattr(target, name)
                else:
                    setattr(target, name, previous)
        self._wrapped.clear()
        for emitter, event, handler in self._listening:
            with contextlib.suppress(KeyError, ValueError):
                emitter.off(event, handler)
        self._listening.clear()
        with self._lock:
            pending = list(self._outboxes)
        for loop in pending:  # the session's loop may close before a scheduled wake-up
            self._wake(loop)

    # -- recording -------------------------------------------------------------------------

    def _record(self, kind: EventKind, data: dict[str, Any], agent: str | None = None) -> None:
        if agent is None and self._session is not None:
            running = livekit.current_activity(self._session)
            agent = agent_label(running.agent) if running is not None else None
        wake: list[asyncio.AbstractEventLoop] = []
        last = kind == "closed"  # nothing may follow: deliver everything now
        with self._lock:
            event = TraceEvent(len(self._events), time.perf_counter() - self._t0, kind, agent, data)
            self._events.append(event)
            subscribers = self._subscribers
            for loop, callback in subscribers:
                if loop is None:
                    continue
                # waking another thread's loop costs a syscall (~20 µs, benchmarks/
                # trace_overhead.py): one wake-up delivers every event recorded until it runs
                outbox = self._outboxes.get(loop)
                if outbox is None:
                    self._outboxes[loop] = outbox = []
                    wake.append(loop)
                elif loop.is_closed():  # closed after its wake-up was sent: nothing will drain it
                    del self._outboxes[loop]
                    continue
                elif last:
                    wake.append(loop)
                outbox.append((callback, event))
        # wake first: a raising callback below must not leave an outbox that nothing drains
        for loop in wake:
            self._schedule_wake(loop, now=last)
        for loop, callback in subscribers:
            if loop is None:
                callback(event)

    def _schedule_wake(self, loop: asyncio.AbstractEventLoop, *, now: bool = False) -> None:
        """Deliver ``loop``'s outbox soon: within ``DELIVERY_INTERVAL_S`` when recording on
        another loop, so one cross-thread wake-up (a syscall, the largest part of a
        subscribed event's cost) carries every event of that interval."""
        try:
            recording = asyncio.get_running_loop()
        except RuntimeError:
            recording = None
        if recording is loop:
            loop.call_soon(self._deliver, loop)
        elif recording is not None and not now:
            recording.call_later(DELIVERY_INTERVAL_S, self._wake, loop)
        else:
            self._wake(loop)

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.call_soon_threadsafe(self._deliver, loop)
        except RuntimeError:  # the loop is closed: nobody is left there to deliver to
            with self._lock:
                self._outboxes.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        """On a subscriber's loop: call its callbacks with the events waiting, in order."""
        with self._lock:
            outbox = self._outboxes.pop(loop, [])
        for callback, event in outbox:
            try:
                callback(event)
            except Exception as e:  # one failing view must not starve the others
                loop.call_exception_handler(
                    {"message": f"trace subscriber {callback!r} failed", "exception": e}
                )

    def _speaking_activity(self) -> _activity.AgentActivity | None:
        """The activity whose speech this is: during a handoff the old agent may still speak
        (``on_exit``) after the session moved on, so the emitting task's context decides."""
        activity = livekit.activity_of_this_task()
        if activity is None and self._session is not None:
            activity = livekit.current_activity(self._session)
        return activity

    def _on_agent_state(self, ev: Any) -> None:
        self._record("agent_state", {"old": ev.old_state, "new": ev.new_state})

    def _on_user_state(self, ev: Any) -> None:
        self._record("user_state", {"old": ev.old_state, "new": ev.new_state})

    def _on_speech_created(self, ev: Any) -> None:
        activity = self._speaking_activity()
        phase = "turn"
        if activity is not None:
            if livekit.agent_entering() is activity.agent:
                phase = "on_enter"
            elif livekit.in_on_exit(activity):
                phase = "on_exit"
        self._speeches[ev.speech_handle.id] = _Speech(source=ev.source, phase=phase)
        ev.speech_handle.add_done_callback(lambda _: self._compare_soon())

    def _on_item_added(self, ev: Any) -> None:
        item = ev.item
        if item.id in self._seen_items:
            return
        self._seen_items.add(item.id)
        if isinstance(item, llm.AgentHandoff):
            self._on_handoff(item)
        elif isinstance(item, llm.ChatMessage) and item.role == "user":
            self._leaving = None  # a new turn: whatever handoff was coming did not
            self._record("user_message", {"text": _text(item), "item_id": item.id})
        elif isinstance(item, llm.ChatMessage) and item.role == "assistant":
            self._record(
                "agent_message",
                {"text": _text(item), "item_id": item.id, **self._speech_of_current()},
            )

    def _speech_of_current(self) -> dict[str, str]:
        handle = livekit.speech_of_this_task()
        if handle is None:
            return {"source": "generate_reply", "phase": "turn"}
        speech = self._speeches.get(handle.id, _Speech("generate_reply", "turn"))
        replied_to_tool = any(i.type == "function_call_output" for i in handle.chat_items)
        return {"source": "tool_reply" if replied_to_tool else speech.source, "phase": speech.phase}

    def _on_handoff(self, item: llm.AgentHandoff) -> None:
        assert self._session is not None
        old, new = self._current, livekit.current_activity(self._session)
        self._current = new
        self._leaving = None  # gone: the session's activity is the new agent's
        if old is not None:
            self._left_with[old.agent] = {i.id for i in _conversation_items(old.agent)}
        if new is not None:
            self._watch_context(new.agent)
            self._watch_hooks(new.agent)
            self._watch_realtime(new)
        data: dict[str, Any] = {
            "from": agent_label(old.agent) if old is not None else None,
            "to": agent_label(new.agent) if new is not None else None,
            "session": None,
            "context": None,
        }
        if old is not None and new is not None:
            data.update(_handoff_modes(old, new, held_before=self._left_with.get(new.agent, set())))
        elif new is not None:
            data["context_items"] = [describe_item(i) for i in _conversation_items(new.agent)]
        self._record("handoff", data, agent=data["to"])

    def _on_tool_update(self, ev: Any) -> None:
        update = ev.update
        if update.type == "tool_call_started":
            call = update.function_call
            if ("call", call.call_id) not in self._seen_calls:
                self._seen_calls.add(("call", call.call_id))
                self._record(
                    "tool_call",
                    {"name": call.name, "call_id": call.call_id, "arguments": call.arguments},
                )

    def _on_tools_executed(self, ev: Any) -> None:
        if ev.has_agent_handoff and self._session is not None:
            self._leaving = livekit.current_activity(self._session)
        for call, output in ev.zipped():
            if ("call", call.call_id) not in self._seen_calls:
                self._seen_calls.add(("call", call.call_id))
                self._record(
                    "tool_call",
                    {"name": call.name, "call_id": call.call_id, "arguments": call.arguments},
                )
            if ("output", call.call_id) not in self._seen_calls:
                self._seen_calls.add(("output", call.call_id))
                self._record(
                    "tool_output",
                    {
                        "name": call.name,
                        "call_id": call.call_id,
                        "output": output.output if output is not None else "",
                        "is_error": bool(output.is_error) if output is not None else False,
                    },
                )

    def _on_metrics(self, ev: Any) -> None:
        metrics = ev.metrics
        data = {"type": getattr(metrics, "type", type(metrics).__name__)}
        for name in (
            "label",
            "ttft",
            "duration",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "cancelled",
        ):
            if (value := getattr(metrics, name, None)) is not None:
                data[name] = value
        self._record("metrics", data)
        if data.get("cancelled") and not self._interrupted_by_livekit():
            self._record_error(
                "the model cancelled its response before answering (response.done status "
                "'cancelled')",
                "ResponseCancelled",
                "realtime",
            )

    def _interrupted_by_livekit(self) -> bool:
        """Whether livekit itself cut the current speech (a barge-in): its cancel is normal."""
        speech = self._session.current_speech if self._session is not None else None
        return speech is not None and speech.interrupted

    def _on_error(self, ev: Any) -> None:
        error = getattr(ev.error, "error", ev.error)
        recoverable = bool(getattr(ev.error, "recoverable", False))
        source = _ERROR_SOURCES.get(getattr(ev.error, "type", ""), "session")
        text = error_text(ev.error)
        self._record_error(text, type(error).__name__, source, recoverable=recoverable)

    def _record_error(
        self, message: str, type_name: str, source: ErrorSource, *, recoverable: bool = True
    ) -> None:
        self._record(
            "error",
            {"message": message, "type": type_name, "source": source, "recoverable": recoverable},
        )

    def _on_close(self, ev: Any) -> None:
        reason = str(getattr(ev.reason, "value", ev.reason))
        error = error_text(ev.error) if ev.error else None
        self.record_closed(reason, error)

    def record_failure(self, message: str) -> None:
        """Record why the session cannot go on (an ``error``, not recoverable); the
        ``closed`` that follows carries it as its error, with reason ``error``."""
        self._failure = message
        self._record_error(message, "RunnerError", "runner", recoverable=False)

    def record_closed(self, reason: str, error: str | None = None) -> None:
        """Record ``closed`` once: from livekit's close event, or from the runner when
        livekit closes a session without one (a close that raised)."""
        with self._lock:
            if self._closed_recorded:
                return
            self._closed_recorded = True
        if self._failure is not None:
            reason, error = "error", error or self._failure
        self._record("closed", {"reason": reason, "error": error})

    # -- context edits ---------------------------------------------------------------------

    def _wrap(self, target: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Replace ``target.name`` by ``make(original)`` once; ``detach`` puts it back."""
        if any(t is target and n == name for t, n, _ in self._wrapped):
            return
        self._wrapped.append((target, name, vars(target).get(name, _ABSENT)))
        setattr(target, name, make(getattr(target, name)))

    def _watch_context(self, agent: Agent) -> None:
        """Wrap this agent's ``update_chat_ctx`` so an edit records ``context_changed``."""
        trace = self

        def wrapped(original: Callable[..., Any]) -> Callable[..., Any]:
            async def update_chat_ctx(chat_ctx: llm.ChatContext, *args: Any, **kwargs: Any) -> None:
                before = {item.id: item for item in agent.chat_ctx.items}
                await original(chat_ctx, *args, **kwargs)
                try:
                    trace._on_context_edited(agent, before)
                except Exception as e:  # the edit is done: failing to record it must not fail it
                    trace._record_failure(e)

            return update_chat_ctx

        self._wrap(agent, "update_chat_ctx", wrapped)

    def _watch_hooks(self, agent: Agent) -> None:
        """Wrap the agent's ``on_enter``/``on_exit``: livekit runs them in a task whose error
        nobody retrieves, so a hook that raises would otherwise leave no trace at all."""
        trace = self
        for hook in ("on_enter", "on_exit"):

            def wrapped(original: Callable[[], Any], hook: str = hook) -> Callable[[], Any]:
                async def run_hook() -> None:
                    try:
                        await original()
                    except Exception as e:
                        message = f"{agent_label(agent)}.{hook} raised {e!r}"
                        trace._record_error(message, type(e).__name__, "agent")
                        raise

                return run_hook

            self._wrap(agent, hook, wrapped)

    def _watch_realtime(self, activity: _activity.AgentActivity) -> None:
        """Watch the realtime sessions of ``activity``'s model (made now or later).

        livekit logs a failed realtime context sync (an ack past its 5 s timeout) and goes
        on, so no session event tells of it; the trace records it as an ``error``.
        """
        model = activity.llm
        if not isinstance(model, llm.RealtimeModel):
            return

        def wrapped_factory(original: Callable[..., Any]) -> Callable[..., Any]:
            def session(*args: Any, **kwargs: Any) -> Any:
                made = original(*args, **kwargs)
                self._watch_realtime_session(made)
                return made

            return session

        self._wrap(model, "session", wrapped_factory)
        if activity.realtime_llm_session is not None:
            self._watch_realtime_session(activity.realtime_llm_session)

    def _watch_realtime_session(self, rt_session: llm.RealtimeSession[Any]) -> None:
        trace = self

        def wrapped(original: Callable[..., Any]) -> Callable[..., Any]:
            async def update_chat_ctx(chat_ctx: llm.ChatContext) -> None:
                trace._syncs += 1
                try:
                    await original(chat_ctx)
                except llm.RealtimeError as e:
                    trace._record_error(
                        f"realtime context sync failed: {e}", type(e).__name__, "realtime"
                    )
                    raise
                finally:
                    trace._syncs -= 1
                    trace._on_model_side_changed()
                try:
                    trace._check_model_has(chat_ctx, rt_session)
                except Exception as e:
                    trace._record_failure(e)

            return update_chat_ctx

        self._wrap(rt_session, "update_chat_ctx", wrapped)
        if not any(emitter is rt_session for emitter, _, _ in self._listening):
            # an ack that comes in between turns (a late one) changes the model's side alone
            handler = _guarded(self, self._on_remote_item)
            rt_session.on("remote_item_added", handler)
            self._listening.append((rt_session, "remote_item_added", handler))

    def _on_remote_item(self, ev: llm.RemoteItemAddedEvent) -> None:
        self._on_model_side_changed()

    def _check_model_has(
        self, chat_ctx: llm.ChatContext, rt_session: llm.RealtimeSession[Any]
    ) -> None:
        """Record an ``error`` for each item the model rejected: livekit only logs it, and
        the turn then goes on without the item (a user message the model never heard)."""
        if not rt_session.realtime_model.capabilities.mutable_chat_context:
            return  # the model keeps no item-by-item conversation to compare with
        held = {item.id for item in rt_session.chat_ctx.items}
        for item in chat_ctx.items:
            if item.id not in held and _syncs_to_model(item):
                described = describe_item(item)
                what = described.get("role") or described["type"]
                self._record_error(
                    f"the model rejected the {what} item {described.get('text', '')!r}: "
                    "its conversation goes on without it",
                    "ItemRejected",
                    "realtime",
                )

    # -- the model's side ------------------------------------------------------------------

    def _on_model_side_changed(self) -> None:
        """A sync ended or the model's side gained an item: compare if that happened between
        turns (a late ack, an edit from code); within a turn, the turn's end compares."""
        session = self._session
        if session is not None and not self._syncs and session.current_speech is None:
            self._compare_soon()

    def _compare_soon(self) -> None:
        """Compare the two sides once the current step is over (livekit adds its own copy of
        an item the model added right after announcing it), if the session is then settled."""
        if self._compare_pending or self._session is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._compare_pending = True
        loop.call_soon(self._compare_if_settled)

    def _compare_if_settled(self) -> None:
        """Compare if nothing is in flight: no sync, no speech, the agent listening."""
        self._compare_pending = False
        session = self._session
        if session is None or self._syncs or session.agent_state not in ("listening", "idle"):
            return  # mid-turn, items are in flight both ways: the turn's end compares
        if session.current_speech is None:
            self.compare_contexts()

    def compare_contexts(self) -> None:
        """Record ``context_diverged`` if the active agent's chat context and its realtime
        model's conversation now differ (``context_converged`` if they agree again).

        The trace calls it between turns; call it when you know the session is settled (the
        runner does after each turn). Ids only, so it stays cheap; a sync under way is left
        to finish (its end compares again). Never raises: a failure is recorded instead."""
        try:
            self._compare_contexts()
        except Exception as e:  # a trace must never break the session it observes
            self._record_failure(e)

    def _compare_contexts(self) -> None:
        session = self._session
        activity = livekit.current_activity(session) if session is not None else None
        rt_session = activity.realtime_llm_session if activity is not None else None
        if activity is None or rt_session is None or self._syncs:
            return
        if activity is self._leaving:
            return  # the next agent's context replaces this one on the model
        model = activity.llm
        if not isinstance(model, llm.RealtimeModel) or not model.capabilities.mutable_chat_context:
            return  # no item-by-item conversation on the model's side to hold livekit's to
        theirs = [item for item in rt_session.chat_ctx.items if _syncs_to_model(item)]
        held = {item.id for item in theirs}
        # what livekit would send: an empty message it keeps only for itself is not synced
        ours = [
            item
            for item in activity.agent.chat_ctx.items
            if _syncs_to_model(item) and (item.id in held or not _empty_message(item))
        ]
        agent = agent_label(activity.agent)
        if [item.id for item in ours] == [item.id for item in theirs]:
            if agent in self._parted:
                self._parted.discard(agent)
                self._record("context_converged", {"agent": agent, "items": len(ours)}, agent)
        elif agent not in self._parted:
            self._parted.add(agent)
            self._record("context_diverged", _divergence(agent, ours, theirs), agent)

    def _on_context_edited(self, agent: Agent, before: dict[str, llm.ChatItem]) -> None:
        after = {item.id: item for item in agent.chat_ctx.items}
        added = [describe_item(after[i]) for i in after if i not in before]
        removed = [describe_item(before[i]) for i in before if i not in after]
        if added or removed:
            self._record(
                "context_changed",
                {"agent": agent_label(agent), "added": added, "removed": removed},
            )

    def _record_failure(self, error: Exception) -> None:
        """Record the trace's own failure as an ``error`` event; never raise."""
        with contextlib.suppress(Exception):
            self._record_error(f"trace failed: {error!r}", "TraceError", "trace")


_ABSENT = object()


def _handoff_modes(
    old: _activity.AgentActivity, new: _activity.AgentActivity, held_before: set[str]
) -> dict[str, Any]:
    """Reused or fresh realtime session, copied, empty or own context, as the handoff left them.

    Copied means the new agent holds items of the old one that it did not hold itself when it
    last handed off (``held_before``): an agent returning to its own context is not a copy.
    """
    session: SessionMode = "none"
    if isinstance(old.llm, llm.RealtimeModel) or isinstance(new.llm, llm.RealtimeModel):
        # a reused session is detached from the old activity before the handoff is announced
        reused = (
            isinstance(old.llm, llm.RealtimeModel)
            and old.llm is new.llm
            and old.realtime_llm_session is None
        )
        session = "reused" if reused else "fresh"
    old_items = _conversation_items(old.agent)
    new_items = _conversation_items(new.agent)
    shared = {i.id for i in old_items} & {i.id for i in new_items}
    context = "copied" if shared - held_before else "empty" if not new_items else "own"
    return {
        "session": session,
        "context": context,
        "items_from": len(old_items),
        "items_to": len(new_items),
        "items_shared": len(shared),
        # what the new agent starts from, so a replay can show each agent's context at any time
        "context_items": [describe_item(item) for item in new_items],
    }


def error_text(reported: object) -> str:
    """The text of an error livekit reports (its session events wrap the exception in
    ``.error``), with what the service said: ``APIError`` keeps that in its body ("OpenAI
    Realtime API returned an error" alone does not say why)."""
    error = getattr(reported, "error", reported)
    text = str(error)
    body = getattr(error, "body", None)
    said = body.get("message") if isinstance(body, dict) else getattr(body, "message", None)
    return f"{text}: {said}" if isinstance(said, str) and said and said not in text else text


def _divergence(agent: str, ours: list[llm.ChatItem], theirs: list[llm.ChatItem]) -> dict[str, Any]:
    """``context_diverged``'s data: what each side holds that the other lacks, and whether
    the items both hold are in the same order."""
    our_ids, their_ids = {item.id for item in ours}, {item.id for item in theirs}
    missing = [describe_item(item) for item in ours if item.id not in their_ids]
    extra = [describe_item(item) for item in theirs if item.id not in our_ids]
    order = [i.id for i in ours if i.id in their_ids] != [i.id for i in theirs if i.id in our_ids]
    parts = [
        f"the model lacks {_items(len(missing))} livekit has" if missing else "",
        f"the model holds {_items(len(extra))} livekit lacks" if extra else "",
        "the items both hold are in another order" if order else "",
    ]
    return {
        "agent": agent,
        "message": f"{agent}'s chat context and the model's conversation diverged: "
        + "; ".join(part for part in parts if part),
        "missing": missing,
        "extra": extra,
        "order": order,
        "livekit": [describe_item(item) for item in ours],
        "model": [describe_item(item) for item in theirs],
    }


def _items(count: int) -> str:
    return f"{count} item" + ("" if count == 1 else "s")


def _empty_message(item: llm.ChatItem) -> bool:
    return isinstance(item, llm.ChatMessage) and not item.content


def _syncs_to_model(item: llm.ChatItem) -> bool:
    """Items a realtime plugin sends to the model: not instructions, handoffs or config."""
    if isinstance(item, llm.ChatMessage):
        return item.role in ("user", "assistant")
    return item.type in ("function_call", "function_call_output")


def _guarded(trace: Trace, handler: Callable[[Any], None]) -> Callable[[Any], None]:
    """``handler`` that never raises into the session, with a fixed signature for the emitter."""

    def handle(event: Any) -> None:
        try:
            handler(event)
        except Exception as e:  # a trace must never break the session it observes
            trace._record_failure(e)

    handle.__signature__ = inspect.signature(handler)  # type: ignore[attr-defined]
    return handle


def _parse_line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{number}: {not_utf8(e)}; is this a trace file?") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{number}: not JSON ({e.msg}); is this a trace file?") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object")
    return record
