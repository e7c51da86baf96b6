"""Reading a livekit ``AgentSession``: its events, captured on its thread, made into data later.

Each ``_on_*`` handler runs inside livekit's emit, on the session's thread, in the middle of a
turn. It keeps only what cannot wait: the raw event, the running activity (who is speaking),
what the emitting task's context says about the speech, and what the session's next steps
depend on (the agents to watch after a handoff). The matching ``_make_*`` function turns that
into the kind's data (``schema``) when the trace flushes, on whichever thread needs it.
"""

from __future__ import annotations

import asyncio
import functools
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from livekit.agents import (
    Agent,
    AgentSession,
    ConversationItemAddedEvent,
    ErrorEvent,
    FunctionToolsExecutedEvent,
    SessionUsageUpdatedEvent,
    SpeechCreatedEvent,
    StopResponse,
    ToolError,
    ToolExecutionUpdatedEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
    llm,
    metrics,
)

from .. import _livekit_internals as livekit
from ..modes import ContextMode, SessionMode
from .describe import (
    activity_label,
    agent_label,
    class_path,
    conversation_items,
    describe_item,
    error_text,
    message_metrics,
    message_text,
    sent_to_model,
    usage_data,
)
from .errors import TraceAttachError
from .model_side import ModelSide
from .patching import Patches
from .recorder import Record, Recorder, error_data
from .schema import (
    ErrorData,
    ErrorSource,
    HandoffData,
    ModelUsageData,
    SpeechPhase,
    SpeechSource,
)
from .tap import Handler, listen

if TYPE_CHECKING:
    # no public export: the running agent's activity, which handoffs swap
    from livekit.agents.voice.agent_activity import AgentActivity

    # no public export: the names of the session's events, as AgentSession.on takes them,
    # and a tool call's end (in livekit's tool_execution_updated)
    from livekit.agents.voice.events import EventTypes, ToolCallEnded

_ERROR_SOURCES: dict[str, ErrorSource] = {
    "stt_error": "stt",
    "llm_error": "llm",
    "tts_error": "tts",
    "realtime_model_error": "realtime",
}
"""livekit's ``ErrorEvent.error.type`` -> the trace's ``source``"""
_TURN: tuple[SpeechSource, SpeechPhase] = ("generate_reply", "turn")


def _not_listening() -> None:
    """What stops listening when nothing listens."""


class SessionReader:
    """Listens to one session at a time; ``detach`` stops it and restores what it wrapped."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self.model = ModelSide(recorder)
        self.patches = Patches(self, self.model)
        self._session: AgentSession[Any] | None = None
        self._handlers: dict[EventTypes, Handler] = {}
        self.realtime_handlers: dict[str, Handler] = {}
        self._stop_listening: Callable[[], None] = _not_listening
        # on the session's thread
        self._seen_items: set[str] = set()
        self._speeches: dict[str, tuple[SpeechSource, SpeechPhase]] = {}
        self._current: AgentActivity | None = None
        # the items each agent held when it last handed off: a returning agent's own
        self._left_with: weakref.WeakKeyDictionary[Agent, set[str]] = weakref.WeakKeyDictionary()
        self._closing = threading.Lock()
        self._closed_recorded = False
        # why the session is ending, when its runner knows before livekit says (a job failed)
        self._failure: str | None = None
        # when livekit last asked the model to cancel its response (time.time())
        self._cancelled_at = -math.inf
        # each tool call running: its tool's name and livekit's task running it
        self._tool_runs: dict[str, tuple[str, asyncio.Task[Any] | None]] = {}
        # where the events are made
        self._seen_calls: set[tuple[str, str]] = set()
        self._usage: list[ModelUsageData] = []
        self.caller_conditions: list[dict[str, Any]] = []
        """the line conditions the caller's audio crosses now (the runner's)"""
        # those in force when the caller last began to speak: their words come later
        self._spoken_under: list[dict[str, Any]] | None = None

    def attach(self, session: AgentSession[Any]) -> None:
        if self._session is not None:
            raise TraceAttachError("this Trace is already attached; make a new Trace per session")
        self._session = self.model.session = session
        # events the trace only captures: one frame each, inside livekit's emit
        capturing = functools.partial(
            self._recorder.capturing, read=livekit.current_activity, source=session
        )
        capture_user_state = capturing(_make_state, ("user_state",))

        def on_user_state(ev: UserStateChangedEvent) -> None:
            if ev.new_state == "speaking":  # the caller's words come later, heard under these
                self._spoken_under = self.caller_conditions
            capture_user_state(ev)

        self._handlers = {
            "agent_state_changed": capturing(_make_state, ("agent_state",)),
            "user_state_changed": on_user_state,
            "user_input_transcribed": capturing(_make_transcript, ()),
            "session_usage_updated": capturing(self._make_usage, ()),
            "error": self._on_error,
            # events the session's next steps depend on: read at once
            "conversation_item_added": self._on_item_added,
            "speech_created": self._on_speech_created,
            "tool_execution_updated": self._on_tool_update,
            "function_tools_executed": self._on_tools_executed,
            "close": self._on_close,
        }
        self.realtime_handlers = {
            # an ack that comes in between turns (a late one) changes the model's side alone
            "remote_item_added": self.model.changed,
            # each response's own metrics: the only place a server-side cancel shows
            "metrics_collected": self._on_model_metrics,
        }
        self._stop_listening = listen(session, self._handlers, self.failed)
        running = livekit.current_activity(session)
        if running is not None:  # attached after start: watch what is running
            self.patches.watch_realtime(running)

    def detach(self) -> None:
        session, self._session = self._session, None
        self.model.detach()
        if session is None:
            return
        self._stop_listening()
        self.patches.restore()
        self._tool_runs.clear()
        # a kept trace must not keep the session: its handlers and activity reach it
        self._stop_listening = _not_listening
        self._handlers, self.realtime_handlers = {}, {}
        self._current = None

    # -- what the runner knows -------------------------------------------------------------

    def record_failure(self, message: str) -> None:
        """Why the session cannot go on: an ``error``, not recoverable; the ``closed`` that
        follows carries it as its error, with reason ``error``."""
        self._failure = message
        self._capture_error(message, "RunnerError", "runner", recoverable=False)

    def record_closed(self, reason: str, error: object | None = None) -> None:
        """``closed``, once: from livekit's close event, or from the runner when livekit
        closes a session without one (a close that raised)."""
        with self._closing:
            if self._closed_recorded:
                return
            self._closed_recorded = True
        activity = self._activity()
        self._recorder.capture_last(_make_closed, activity, reason, error, self._failure)

    # -- livekit's session events, on the session's thread ---------------------------------

    def _activity(self) -> AgentActivity | None:
        session = self._session
        return livekit.current_activity(session) if session is not None else None

    def _on_speech_created(self, ev: SpeechCreatedEvent) -> None:
        # during a handoff the old agent may still speak (on_exit) after the session moved
        # on: the emitting task's activity says whose speech this is
        activity = livekit.activity_of_this_task() or self._activity()
        phase: SpeechPhase = "turn"
        if activity is not None:
            entering = livekit.on_enter_of_this_task()
            if entering is not None and entering.agent is activity.agent:
                phase = "on_enter"
            elif livekit.on_exit_task(activity) is asyncio.current_task():
                phase = "on_exit"
        handle = ev.speech_handle
        self._speeches[handle.id] = (ev.source, phase)
        handle.add_done_callback(self.model.compare_soon)

    def _on_item_added(self, ev: ConversationItemAddedEvent) -> None:
        item = ev.item
        if item.id in self._seen_items:  # type: ignore[union-attr]
            return
        self._seen_items.add(item.id)  # type: ignore[union-attr]
        if isinstance(item, llm.ChatMessage):
            # (emitted only while attached: the session is set)
            activity = livekit.current_activity(self._session)  # type: ignore[arg-type]
            if item.role == "user":
                self.model.leaving = None  # a new turn: whatever handoff was coming did not
                conditions = None
                if item.transcript_confidence is not None:  # heard, not typed (livekit's mark)
                    spoken_under, self._spoken_under = self._spoken_under, None
                    conditions = self.caller_conditions if spoken_under is None else spoken_under
                self._recorder.capture(_make_user_message, activity, item, conditions)
            elif item.role == "assistant":
                # the speech it belongs to, and how many items that speech had before it
                handle = livekit.speech_of_this_task()
                before = len(handle.chat_items) if handle is not None else 0
                self._recorder.capture(self._make_agent_message, activity, item, handle, before)
        elif isinstance(item, llm.AgentHandoff):
            self._on_handoff()

    def _on_handoff(self) -> None:
        old, new = self._current, self._activity()
        self._current = new
        self.model.leaving = None  # gone: the session's activity is the new agent's
        old_items = conversation_items(old.agent) if old is not None else []
        if old is not None:
            self._left_with[old.agent] = {item.id for item in old_items}
        new_items, held_before, session, keeps = [], set[str](), None, False
        if new is not None:
            self.patches.watch_agent(new)
            new_items = conversation_items(new.agent)
            held_before = self._left_with.get(new.agent, set())
            if old is not None:
                session = _session_mode(old, new)
                keeps = session == "reused" and _keeps_turns(new.llm)
        self._recorder.capture(
            _make_handoff,
            old.agent if old is not None else None,
            new.agent if new is not None else None,
            session,
            old_items,
            new_items,
            held_before,
            keeps,
        )

    def _on_tools_executed(self, ev: FunctionToolsExecutedEvent) -> None:
        activity = livekit.current_activity(self._session)  # type: ignore[arg-type]
        if ev.has_agent_handoff:
            self.model.leaving = activity
        self._recorder.capture(self._make_tools_executed, activity, ev)

    def _on_tool_update(self, ev: ToolExecutionUpdatedEvent) -> None:
        """A call starting is a ``tool_call``; one ending on an exception an ``error``. livekit's
        task is taken at the start: it holds the exception, and is gone when the end comes."""
        update, session = ev.update, self._session
        activity = livekit.current_activity(session)  # type: ignore[arg-type]
        if update.type == "tool_call_started":
            call = update.function_call
            task = livekit.tool_task(session, call.call_id)  # type: ignore[arg-type]
            self._tool_runs[call.call_id] = (call.name, task)
            self._recorder.capture(self._make_tool_calls, activity, ((call, None),), False)
        elif update.type == "tool_call_ended":
            name, task = self._tool_runs.pop(update.call_id, ("", None))
            if update.status == "error":
                self._recorder.capture_alarm(_make_tool_error, activity, update, name, task)

    def _on_error(self, ev: ErrorEvent) -> None:
        # a refused session.update: the plugin has just read the server's error (its protocol
        # events come first), so what the session now runs without is known
        event_id = _client_event_id(ev.error)
        lacking = self.model.refused(event_id) if event_id is not None else None
        self._recorder.capture_alarm(_make_livekit_error, self._activity(), ev, lacking)

    def _on_close(self, ev: Any) -> None:
        self.record_closed(str(getattr(ev.reason, "value", ev.reason)), ev.error)

    # -- the realtime session's events -----------------------------------------------------

    def _on_model_metrics(self, ev: object) -> None:
        """A response the model cancelled before answering (``response.done`` status
        ``cancelled``) is an ``error``, unless livekit asked for it (a barge-in): the response
        was made (its metrics' ``timestamp``) before livekit's last cancel."""
        if (
            isinstance(ev, metrics.RealtimeModelMetrics)
            and ev.cancelled
            and ev.timestamp > self._cancelled_at
        ):
            self._capture_error(
                "the model cancelled its response before answering (response.done status "
                "'cancelled')",
                "ResponseCancelled",
                "realtime",
            )

    # -- what the patches report (patching.Watcher; syncs go to the model side) -------------

    def context_edited(self, agent: Agent, before: list[llm.ChatItem]) -> None:
        after = agent.chat_ctx.items
        self._recorder.capture(_make_context_changed, self._activity(), agent, before, after)

    def cancelling(self) -> None:
        self._cancelled_at = time.time()  # the clock of the metrics' timestamp

    def hook_raised(self, agent: Agent, hook: str, error: Exception) -> None:
        message = f"{agent_label(agent)}.{hook} raised {error!r}"
        self._capture_error(message, type(error).__name__, "agent")

    def failed(self, error: Exception) -> None:
        """The trace's own failure, recorded as an ``error``; never raises."""
        self._recorder.capture_failure(error, activity_label(self._activity()))

    def _capture_error(
        self, message: str, type_name: str, source: ErrorSource, *, recoverable: bool = True
    ) -> None:
        """An ``error`` at the active agent."""
        agent = activity_label(self._activity())
        self._recorder.capture_error(message, type_name, source, agent, recoverable=recoverable)

    # -- where the events are made ---------------------------------------------------------

    def _make_agent_message(
        self, activity: AgentActivity | None, item: llm.ChatMessage, handle: Any, before: int
    ) -> Iterable[Record]:
        source, phase = _TURN if handle is None else self._speeches.get(handle.id, _TURN)
        if handle is not None and any(
            i.type == "function_call_output" for i in handle.chat_items[:before]
        ):
            source = "tool_reply"
        data = {
            "text": message_text(item),
            "item_id": item.id,
            "source": source,
            "phase": phase,
            "interrupted": item.interrupted,
            "metrics": message_metrics(item),
        }
        yield "agent_message", data, activity_label(activity)

    def _make_tools_executed(
        self, activity: AgentActivity | None, ev: FunctionToolsExecutedEvent
    ) -> Iterable[Record]:
        yield from self._make_tool_calls(activity, ev.zipped(), True)

    def _make_tool_calls(
        self,
        activity: AgentActivity | None,
        calls: Iterable[tuple[llm.FunctionCall, llm.FunctionCallOutput | None]],
        executed: bool,
    ) -> Iterable[Record]:
        """Each call once, and each output once when executed: livekit announces a call
        when it starts and again with its output."""
        agent = activity_label(activity)
        for call, output in calls:
            if ("call", call.call_id) not in self._seen_calls:
                self._seen_calls.add(("call", call.call_id))
                data = {"name": call.name, "call_id": call.call_id, "arguments": call.arguments}
                yield "tool_call", data, agent
            if executed and ("output", call.call_id) not in self._seen_calls:
                self._seen_calls.add(("output", call.call_id))
                result = {
                    "name": call.name,
                    "call_id": call.call_id,
                    "output": output.output if output is not None else "",
                    "is_error": bool(output.is_error) if output is not None else False,
                }
                yield "tool_output", result, agent

    def _make_usage(
        self, activity: AgentActivity | None, ev: SessionUsageUpdatedEvent
    ) -> Iterable[Record]:
        """``metrics`` when the session's usage changed (livekit reports it after every
        metric, a voice activity detector's included; each report is a copy)."""
        described = usage_data(ev.usage)
        if described != self._usage:
            self._usage = described
            yield "metrics", {"usage": described}, activity_label(activity)


def _session_mode(old: AgentActivity, new: AgentActivity) -> SessionMode:
    """Reused or fresh realtime session (``none`` without one), as the handoff left it."""
    if not (isinstance(old.llm, llm.RealtimeModel) or isinstance(new.llm, llm.RealtimeModel)):
        return "none"
    # a reused session is detached from the old activity before the handoff is announced
    reused = (
        isinstance(old.llm, llm.RealtimeModel)
        and old.llm is new.llm
        and old.realtime_llm_session is None
    )
    return "reused" if reused else "fresh"


def _keeps_turns(model: object) -> bool:
    """Whether the realtime model's server keeps every turn of a live session, whatever a
    context sync leaves out: the Gemini Live API has no message that removes one
    (``clientContent`` "is unconditionally appended to the conversation history",
    ai.google.dev/api/live), and google's plugin (1.8.9, ``_sync_chat_ctx``) only logs
    "Gemini Live does not support removing messages". OpenAI's Realtime API deletes items
    (``conversation.item.delete``): its plugin syncs removals."""
    return type(model).__module__.startswith("livekit.plugins.google.")


def read_handoff(old: AgentActivity, new: AgentActivity) -> HandoffData:
    """The trace's reading of a handoff from ``old``'s agent to ``new``'s (its ``handoff``
    event's data), read now, as the trace reads it, without a ``Trace``: call it when livekit
    adds the ``AgentHandoff`` item. No earlier handoff is known: an agent handed back to
    reads as copied, not own."""
    session = _session_mode(old, new)
    keeps = session == "reused" and _keeps_turns(new.llm)
    old_items, new_items = conversation_items(old.agent), conversation_items(new.agent)
    return handoff_data(old.agent, new.agent, session, old_items, new_items, set(), keeps)


def _make_state(kind: Any, activity: AgentActivity | None, ev: Any) -> Iterable[Record]:
    yield kind, {"old": ev.old_state, "new": ev.new_state}, activity_label(activity)


def _make_transcript(
    activity: AgentActivity | None, ev: UserInputTranscribedEvent
) -> Iterable[Record]:
    data = {"text": ev.transcript, "final": ev.is_final}
    yield "user_transcript", data, activity_label(activity)


def _make_user_message(
    activity: AgentActivity | None,
    item: llm.ChatMessage,
    conditions: list[dict[str, Any]] | None,
) -> Iterable[Record]:
    data: dict[str, Any] = {
        "text": message_text(item),
        "item_id": item.id,
        "metrics": message_metrics(item),
        "created_at": item.created_at,
    }
    if conditions:
        data["conditions"] = conditions
    yield "user_message", data, activity_label(activity)


def _make_handoff(
    old: Agent | None,
    new: Agent | None,
    session: SessionMode | None,
    old_items: list[llm.ChatItem],
    new_items: list[llm.ChatItem],
    held_before: set[str],
    keeps_turns: bool,
) -> Iterable[Record]:
    data = handoff_data(old, new, session, old_items, new_items, held_before, keeps_turns)
    yield "handoff", data, data["to"]


def handoff_data(
    old: Agent | None,
    new: Agent | None,
    session: SessionMode | None,
    old_items: list[llm.ChatItem],
    new_items: list[llm.ChatItem],
    held_before: set[str],
    keeps_turns: bool = False,
) -> HandoffData:
    """Copied means the new agent starts from items of the old one that it did not hold
    itself when it last handed off (``held_before``): an agent returning to its own context is
    not a copy. The context is the one the model answers from: on a reused session whose
    server keeps every turn (``keeps_turns``), the old agent's items the model was sent stay
    in its conversation though livekit's context for the new agent lacks them (``kept_items``;
    ``livekit_context`` then says what livekit's context alone would read as)."""
    data: HandoffData = {
        "from": agent_label(old) if old is not None else None,
        "to": agent_label(new) if new is not None else None,
        "from_id": old.id if old is not None else None,
        "to_id": new.id if new is not None else None,
        "session": None,
        "context": None,
    }
    if new is not None:
        # the agent's code, so a graph of the app can be drawn from a trace alone
        data["to_class"] = class_path(new)
        # what the new agent starts from, so a replay can show each agent's context at any time
        data["context_items"] = [describe_item(item) for item in new_items]
    if old is not None and new is not None:
        new_ids = {i.id for i in new_items}
        context, shared = context_mode({i.id for i in old_items}, new_ids, held_before)
        data["session"] = session
        data["context"] = context
        data["items_from"] = len(old_items)
        data["items_to"] = len(new_items)
        data["items_shared"] = len(shared)
        if keeps_turns:
            kept = {i.id for i in old_items if i.id not in new_ids and sent_to_model(i)}
            if kept:
                data["kept_items"] = len(kept)
                if kept - held_before and context != "copied":
                    data["context"], data["livekit_context"] = "copied", context
    return data


def context_mode(
    old_ids: set[str], new_ids: set[str], held_before: set[str]
) -> tuple[ContextMode, set[str]]:
    """How the new agent's context came about, and the item ids it shares with the old one's:
    copied (it starts from items of the old one it did not hold itself when it last handed
    off, ``held_before``), empty, or its own."""
    shared = old_ids & new_ids
    mode: ContextMode = "copied" if shared - held_before else "empty" if not new_ids else "own"
    return mode, shared


def _make_context_changed(
    activity: AgentActivity | None,
    agent: Agent,
    before: list[llm.ChatItem],
    after: list[llm.ChatItem],
) -> Iterable[Record]:
    before_ids, after_ids = {i.id for i in before}, {i.id for i in after}
    added = [describe_item(item) for item in after if item.id not in before_ids]
    removed = [describe_item(item) for item in before if item.id not in after_ids]
    if added or removed:
        data = {"agent": agent_label(agent), "added": added, "removed": removed}
        yield "context_changed", data, activity_label(activity)


def _make_tool_error(
    activity: AgentActivity | None,
    ended: ToolCallEnded,
    name: str,
    task: asyncio.Task[Any] | None,
) -> Iterable[Record]:
    """An ``error`` for a tool that raised: livekit tells the model only that an internal
    error occurred, and logs the exception. A ``ToolError`` is no such failure: its message
    is the tool's output, what the model was meant to hear."""
    raised = _raised(task)
    if isinstance(raised, ToolError | StopResponse):
        return
    type_name = type(raised).__name__ if raised is not None else "Exception"
    text = str(raised) if raised is not None else ended.message or ""
    message = (
        f"the tool {name} raised {type_name}: {text} "
        "(the model was told only that an internal error occurred)"
    )
    data = {**error_data(message, type_name, "tool"), "tool": name, "call_id": ended.call_id}
    yield "error", data, activity_label(activity)


def _raised(task: asyncio.Task[Any] | None) -> BaseException | None:
    """What a finished tool task raised: livekit's task returns the tool's exception."""
    if task is None or not task.done() or task.cancelled():
        return None
    error = task.exception()
    if error is None and isinstance(result := task.result(), BaseException):
        error = result
    return error


def _make_livekit_error(
    activity: AgentActivity | None, ev: ErrorEvent, lacking: list[str] | None
) -> Iterable[Record]:
    """livekit's error event; a refused ``session.update`` says what the session runs
    without (``lacking``): livekit goes on as if the update had applied."""
    reported = ev.error
    error = getattr(reported, "error", reported)
    data: ErrorData = {
        "message": error_text(reported),
        "type": type(error).__name__,
        "source": _ERROR_SOURCES.get(getattr(reported, "type", ""), "session"),
        "recoverable": bool(getattr(reported, "recoverable", False)),
    }
    if lacking is not None:
        data["type"], data["settings"] = "SessionUpdateRejected", lacking
        data["message"] = (
            f"the model rejected session.update: the session runs without its "
            f"{', '.join(_first_named(lacking))} until an update setting them is accepted "
            f"({data['message']})"
        )
    yield "error", data, activity_label(activity)


def _first_named(settings: list[str]) -> list[str]:
    """The session's settings, what an agent brings first: its instructions and tools."""
    return sorted(settings, key=lambda name: _AGENTS_OWN.get(name, len(_AGENTS_OWN)))


_AGENTS_OWN = {"instructions": 0, "tools": 1}


def _client_event_id(reported: object) -> str | None:
    """The ``event_id`` of the client event a model's error answers, if it names one (the
    plugin keeps the server's error as the body of its ``APIError``)."""
    body = getattr(getattr(reported, "error", reported), "body", None)
    event_id = body.get("event_id") if isinstance(body, dict) else getattr(body, "event_id", None)
    return event_id if isinstance(event_id, str) else None


def _make_closed(
    activity: AgentActivity | None, reason: str, error: object | None, failure: str | None
) -> Iterable[Record]:
    text = error_text(error) if error else None
    if failure is not None:  # the runner knew first why it ends
        reason, text = "error", text or failure
    yield "closed", {"reason": reason, "error": text}, activity_label(activity)
