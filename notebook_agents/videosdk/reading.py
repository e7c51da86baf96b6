"""Reading a VideoSDK agents ``AgentSession``: its states and conversation as the trace's events.

VideoSDK's session emits only its two state events; what was said and done lives in each
agent's chat context (messages, tool calls and outputs, each with an ``id``), which the reader
watches on the instance: after each call that changes it, the items added since become the
same kinds a livekit session gives (``user_message``, ``agent_message``, ``tool_call``,
``tool_output``), each exactly once by id, and an edit (an instruction replaced, items
removed) a ``context_changed``. A handoff is read where VideoSDK makes it, when the pipeline
is given the next agent (``Pipeline.set_agent``), not from its ``agent_switched`` event, which
names the new agent as the old one.

The states are VideoSDK's in the trace's words (``docs/frameworks.md``): ``starting`` reads
as ``initializing``; the user's ``idle`` and ``listening`` (not speaking, while the agent is
quiet or speaks) both as livekit's ``listening``; ``closing`` stays. After ``closing`` VideoSDK
announces ``listening`` although the session is gone: it is not recorded.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from videosdk.agents import Agent, AgentSession
from videosdk.agents.event_bus import get_current_event_bus
from videosdk.agents.llm.context.items import ChatMessage, FunctionCall, FunctionCallOutput

from ..trace.describe import class_path
from ..trace.foreign import ForeignReader
from ..trace.reading import context_mode
from ..trace.recorder import error_data, given
from ..trace.schema import ChatItemData, ErrorSource, HandoffData, SpeechPhase, SpeechSource
from ..trace.tap import listen

_AGENT_STATES = {"starting": "initializing", "closing": "closing"}
"""VideoSDK's agent states whose word differs from livekit's (the others are the same)"""
_USER_STATES = {"idle": "listening", "listening": "listening", "speaking": "speaking"}
"""VideoSDK's user states in livekit's words: the user is speaking, or not"""
_ERROR_SOURCES: dict[str, ErrorSource] = {
    "STT": "stt",
    "LLM": "llm",
    "TTS": "tts",
    "REALTIME": "realtime",
}
"""the ``source`` of VideoSDK's pipeline ``error`` -> the trace's"""

_USAGE: dict[str, dict[str, tuple[str, float]]] = {
    "llm": {
        "promptTokens": ("input_tokens", 1),
        "completionTokens": ("output_tokens", 1),
        "promptCachedTokens": ("input_cached_tokens", 1),
    },
    "tts": {"ttsCharacters": ("characters_count", 1)},
}
"""VideoSDK's per-turn counters of each model (``TURN_METRICS_ADDED``) -> the name livekit's
usage gives each, and the factor to its unit"""

_CHANGING = (
    "add_message",
    "add_function_call",
    "add_function_output",
    "add_handoff",
    "add_config_update",
    "insert",
    "insert_many",
    "truncate",
)
"""the ``ChatContext`` methods that change its items"""
_CHANGING_ASYNC = ("merge", "merge_result", "merge_with_summary", "summarize")


def agent_label(agent: Agent) -> str:
    """The agent's class name, unless it was given an ``agent_id`` of its own (VideoSDK's
    default is a random UUID)."""
    try:
        generated = uuid.UUID(agent.id).version == 4
    except (ValueError, AttributeError, TypeError):
        generated = False
    return type(agent).__name__ if generated else str(agent.id)


def item_data(item: Any) -> ChatItemData:
    """A VideoSDK chat item as the trace shows a livekit one: id, type, role and text."""
    described: ChatItemData = {"id": item.id, "type": item.type}
    if isinstance(item, ChatMessage):
        described["role"], described["text"] = item.role.value, message_text(item)
    elif isinstance(item, FunctionCall | FunctionCallOutput):
        described["name"], described["call_id"] = item.name, item.call_id
        described["text"] = item.arguments if isinstance(item, FunctionCall) else item.output
    return described


def message_text(message: ChatMessage) -> str:
    """The message's text parts, joined (its images left out)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part for part in content if isinstance(part, str))


class VideoSDKReader(ForeignReader):
    """Listens to one VideoSDK ``AgentSession``; ``detach`` stops it and puts back every
    method it wrapped."""

    def __init__(self) -> None:
        super().__init__()
        self._stops: list[Callable[[], None]] = []
        self._wrapped: list[tuple[Any, str]] = []
        self._known: dict[int, list[Any]] = {}
        """each watched chat context (by id()) -> its items as last seen"""
        self._seen: set[str] = set()
        self._active: Agent | None = None
        self._agents: dict[str, Agent] = {}
        """each agent that became active, by its label"""
        self._held: dict[int, set[str]] = {}
        """each agent (by id()) -> the item ids it held when it last handed off"""
        self._agent_state = "initializing"
        self._user_state = "listening"
        self._phase: SpeechPhase = "turn"
        self._saying = 0
        self._tool_output_this_turn = False
        self._realtime = False
        self._speaks = False
        self._unsaid: list[tuple[ChatMessage, dict[str, Any], str | None]] = []
        """agent messages (item, data, agent) waiting for their speech to end"""
        self._unclaimed_speech = False
        """a speech ended that no message has claimed yet: ``reply()`` adds its message
        after the speech, ``say()`` and a turn's reply before it"""
        self._instructions: list[tuple[str, SpeechPhase]] = []
        """``reply(instructions)`` calls whose instructions have not reached the context, and
        the phase each was asked in (from a handoff's ``on_enter``, VideoSDK runs it later)"""
        self._reply_phase: SpeechPhase | None = None
        """the phase of the reply whose instructions came last: its message's"""
        self._replies: set[Any] = set()
        """``reply()`` handles not done yet (a reply asked from a tool runs in the background)"""
        self._reply_watches: set[asyncio.Task[None]] = set()
        self.on_handoff: Callable[[Agent], None] = lambda agent: None
        """called with each agent as it becomes active (the first included)"""
        self.on_change: Callable[[], None] = lambda: None
        """called on the session's loop after each state change and each message recorded:
        whoever waits for the session to settle asks again"""
        self._typed: str | None = None
        self._usage: dict[tuple[str, str, str], dict[str, float]] = {}
        """(type, provider, model) -> its counters so far"""
        self._tool_errors = _ToolErrors(self)
        self.user_turns = 0
        """how many user messages the session has had: a spoken one counts once heard"""
        self.close_reason = "user_initiated"
        """the ``closed`` reason when the session's ``close()`` returns: its runner's stop
        sets ``job_shutdown``; otherwise the agent's code closed it"""

    def attach(self, session: AgentSession) -> None:
        """Call inside the session's job (its event bus is the job's), before ``start``."""
        failed = self._recorder.capture_failure
        states = {
            "agent_state_changed": self._on_agent_state,
            "user_state_changed": self._on_user_state,
        }
        self._stops.append(listen(session, states, failed))
        bus = {
            "USER_TRANSCRIPT_ADDED": self._on_transcript,
            "TURN_METRICS_ADDED": self._on_turn_metrics,
        }
        self._stops.append(listen(get_current_event_bus(), bus, failed))
        pipeline = session.pipeline
        self._realtime = bool(pipeline.config.is_realtime)
        self._speaks = self._realtime or pipeline.tts is not None
        self._stops.append(listen(pipeline, {"error": self._on_error}, failed))
        self._wrap(pipeline, "set_agent", self._wrap_set_agent(pipeline.set_agent))
        self._wrap(session, "say", self._wrap_say(session.say))
        self._wrap(session, "reply", self._wrap_reply(session.reply))
        self._wrap(session, "close", self._wrap_close(session.close))
        _TOOL_LOG.addHandler(self._tool_errors)

    def detach(self) -> None:
        _TOOL_LOG.removeHandler(self._tool_errors)
        for stop in reversed(self._stops):
            stop()
        self._stops.clear()
        for owner, name in reversed(self._wrapped):
            vars(owner).pop(name, None)
        self._wrapped.clear()

    # -- wrapping ---------------------------------------------------------------------------

    def _wrap(self, owner: Any, name: str, wrapper: Any) -> None:
        if name in vars(owner):  # wrapped already (this agent handed back to)
            return
        setattr(owner, name, wrapper)
        self._wrapped.append((owner, name))

    def _wrap_set_agent(self, set_agent: Callable[[Agent], None]) -> Callable[[Agent], None]:
        @functools.wraps(set_agent)
        def wrapper(agent: Agent) -> None:
            if agent is not self._active:
                self._guarded(self._handoff, agent)
            set_agent(agent)

        return wrapper

    def _wrap_say(self, say: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(say)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._saying += 1
            try:
                return await say(*args, **kwargs)
            finally:
                self._saying -= 1

        return wrapper

    def _wrap_reply(self, reply: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(reply)
        async def wrapper(instructions: str, *args: Any, **kwargs: Any) -> Any:
            if instructions:
                self._instructions.append((instructions, self._phase))
            handle = await reply(instructions, *args, **kwargs)
            if not handle.done():  # asked from a tool (a handoff's on_enter): it runs later
                self._replies.add(handle)
                watch = asyncio.ensure_future(self._reply_over(handle))
                self._reply_watches.add(watch)
                watch.add_done_callback(self._reply_watches.discard)
            return handle

        return wrapper

    async def _reply_over(self, handle: Any) -> None:
        try:
            await handle
        finally:
            self._replies.discard(handle)
            self.on_change()

    @property
    def settling(self) -> bool:
        """Whether the session still owes the last turn something: a reply asked in the
        background, or the message of a speech that has ended (a spoken turn's reply is added
        after it was played)."""
        return bool(self._replies) or self._unclaimed_speech

    def _wrap_close(self, close: Callable[[], Any]) -> Callable[[], Any]:
        # VideoSDK has no closed state: ``closed`` is when its close() has returned
        @functools.wraps(close)
        async def wrapper() -> Any:
            try:
                return await close()
            finally:
                self._said(len(self._unsaid))
                self.record_closed(self.close_reason)

        return wrapper

    def _watch_agent(self, agent: Agent) -> None:
        for hook in ("on_enter", "on_exit"):
            self._wrap(agent, hook, self._wrap_hook(getattr(agent, hook), hook))
        self._watch_context(agent.chat_context)

    def _wrap_hook(self, hook: Callable[[], Any], phase: SpeechPhase) -> Callable[[], Any]:
        # an ``async def``: VideoSDK calls on_enter only if it is a coroutine function
        @functools.wraps(hook)
        async def wrapper() -> Any:
            self._phase = phase
            try:
                return await hook()
            finally:
                self._phase = "turn"

        return wrapper

    def _watch_context(self, context: Any) -> None:
        if id(context) in self._known:
            return
        self._known[id(context)] = list(context.items)
        for name in _CHANGING:
            self._wrap(context, name, self._wrap_change(context, getattr(context, name)))
        for name in _CHANGING_ASYNC:
            self._wrap(context, name, self._wrap_change_async(context, getattr(context, name)))

    def _wrap_change(self, context: Any, change: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(change)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return change(*args, **kwargs)
            finally:
                self._guarded(self._changed, context)

        return wrapper

    def _wrap_change_async(self, context: Any, change: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(change)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await change(*args, **kwargs)
            finally:
                self._guarded(self._changed, context)

        return wrapper

    def _guarded(self, read: Callable[..., None], *args: Any) -> None:
        try:
            read(*args)
        except Exception as e:  # a trace must never break what it observes
            self._recorder.capture_failure(e, self.agent)

    # -- what the session does ---------------------------------------------------------------

    def _handoff(self, agent: Agent) -> None:
        old, label = self._active, agent_label(agent)
        new_items = list(agent.chat_context.items)
        data: HandoffData = {
            "from": self.agent,
            "to": label,
            "from_id": str(old.id) if old is not None else None,
            "to_id": str(agent.id),
            "session": None,
            "context": None,
            "to_class": class_path(agent),
            "context_items": [item_data(item) for item in new_items],
        }
        if old is not None:
            old_items = list(old.chat_context.items)
            new_ids = [item.id for item in new_items]
            context, shared = context_mode(
                {item.id for item in old_items}, set(new_ids), self._held.get(id(agent), set())
            )
            self._held[id(old)] = {item.id for item in old_items}
            data["session"] = "reused" if self._realtime else "none"
            data["context"] = context
            data["items_from"], data["items_to"] = len(old_items), len(new_items)
            data["items_shared"] = len(shared)
        self._active, self.agent = agent, label
        self._agents[label] = agent
        self._seen.update(item.id for item in new_items)
        self._tool_output_this_turn = False
        self._capture("handoff", data)
        self._watch_agent(agent)
        if old is not None:  # the first agent's words are offered once its session started
            self.on_handoff(agent)

    def _changed(self, context: Any) -> None:
        items = list(context.items)
        before, self._known[id(context)] = self._known.get(id(context), []), items
        now = {item.id for item in items}
        removed = [item_data(item) for item in before if item.id not in now]
        edited: list[ChatItemData] = []
        for item in items:
            if item.id in self._seen:
                continue
            self._seen.add(item.id)
            if not self._conversation_item(item):
                edited.append(item_data(item))
        if edited or removed:
            data = {"agent": self.agent or "", "added": edited, "removed": removed}
            self._capture("context_changed", data)

    def _conversation_item(self, item: Any) -> bool:
        """Record ``item`` as a conversation event, if it is one (not an instruction)."""
        if isinstance(item, ChatMessage) and item.role.value == "user":
            asked = next((a for a in self._instructions if a[0] == message_text(item)), None)
            if asked is not None:
                self._instructions.remove(asked)
                self._reply_phase = asked[1]
                return False  # reply()'s instructions, put in as a user message: an edit
            self._tool_output_this_turn = self._unclaimed_speech = False
            self.user_turns += 1
            data = {
                "text": message_text(item),
                "item_id": item.id,
                "metrics": _numbers(item.metrics),
                "created_at": item.created_at,
            }
            self._capture("user_message", data)
        elif isinstance(item, ChatMessage) and item.role.value == "assistant":
            # recorded once said, as livekit records its messages (at once without a TTS)
            self._unsaid.append((item, self._agent_message(item), self.agent))
            if not self._speaks or self._unclaimed_speech:
                self._unclaimed_speech = False
                self._said(1)
        elif isinstance(item, FunctionCall):
            data = {"name": item.name, "call_id": item.call_id, "arguments": item.arguments}
            self._capture("tool_call", data)
        elif isinstance(item, FunctionCallOutput):
            self._tool_output_this_turn = True
            data = {
                "name": item.name,
                "call_id": item.call_id,
                "output": item.output,
                "is_error": item.is_error,
            }
            self._capture("tool_output", data)
        else:
            return False
        return True

    def _agent_message(self, item: ChatMessage) -> dict[str, Any]:
        phase, self._reply_phase = self._reply_phase or self._phase, None
        source: SpeechSource = (
            "say"
            if self._saying
            else "tool_reply"
            if self._tool_output_this_turn and phase == "turn"
            else "generate_reply"
        )
        return {
            "text": message_text(item),
            "item_id": item.id,
            "source": source,
            "phase": phase,
            "interrupted": item.interrupted,
            "metrics": _numbers(item.metrics),
        }

    def _on_agent_state(self, payload: dict[str, Any]) -> None:
        if self._agent_state == "closing":
            return  # VideoSDK says "listening" after closing; the session is gone
        new = _AGENT_STATES.get(payload["state"], payload["state"])
        if new != self._agent_state:
            self._capture("agent_state", {"old": self._agent_state, "new": new})
            if self._agent_state == "speaking":
                self._unclaimed_speech = not self._unsaid
                self._said(1)
            self._agent_state = new
            self.on_change()

    def _said(self, count: int) -> None:
        """The first ``count`` messages waiting have been said (or never will be)."""
        said, self._unsaid = self._unsaid[:count], self._unsaid[count:]
        for item, data, agent in said:
            data["interrupted"] = item.interrupted  # a barge-in marks it as it is cut
            self._recorder.capture(given, "agent_message", data, agent)
        if said:
            self.on_change()

    def _on_user_state(self, payload: dict[str, Any]) -> None:
        new = _USER_STATES.get(payload["state"], payload["state"])
        if new != self._user_state and self._agent_state != "closing":
            self._capture("user_state", {"old": self._user_state, "new": new})
            self._user_state = new

    def agent_named(self, label: str) -> Agent:
        """The agent that became active under ``label`` (a handoff names it)."""
        return self._agents[label]

    def typed(self, text: str) -> None:
        """``text`` is about to be typed in (``pipeline.process_text``): VideoSDK announces it
        as a transcript, but no speech was recognized, so that one is not recorded."""
        self._typed = text

    def _on_transcript(self, payload: dict[str, Any]) -> None:
        final = payload.get("type", "final") == "final"
        text = str(payload.get("text", ""))
        if final and self._typed is not None and text == self._typed.strip():
            self._typed = None
            return
        self._capture("user_transcript", {"text": text, "final": final})

    def _on_turn_metrics(self, payload: dict[str, Any]) -> None:
        turn = payload.get("metrics") or {}
        changed = False
        for kind, counters in _USAGE.items():
            provider = turn.get(f"{kind}ProviderClass")
            if not provider:
                continue
            counts = self._usage.setdefault(
                (f"{kind}_usage", str(provider), str(turn.get(f"{kind}ModelName") or "")), {}
            )
            for theirs, (ours, scale) in counters.items():
                value = turn.get(theirs)
                if isinstance(value, int | float) and not isinstance(value, bool) and value:
                    counts[ours] = counts.get(ours, 0) + value * scale
                    changed = True
        if changed:
            usage = [
                {"type": kind, "provider": provider, "model": model, "counts": dict(counts)}
                for (kind, provider, model), counts in self._usage.items()
                if counts
            ]
            self._capture("metrics", {"usage": usage})

    def tool_raised(self, tool: str, message: str) -> None:
        """VideoSDK only logs a tool that raised (its model is not told; the turn ends
        without a reply and the agent stays ``thinking``): an ``error`` of source ``tool``."""
        if "can't be used in 'await' expression" in message:
            message += " (VideoSDK awaits every function tool: make it `async def`)"
        data = {
            **error_data(f"the tool {tool} raised: {message}", "ToolError", "tool"),
            "tool": tool,
        }
        self._recorder.capture_alarm(given, "error", data, self.agent)

    def _on_error(self, payload: dict[str, Any]) -> None:
        source = str(payload.get("source", ""))
        data = error_data(
            str(payload.get("error", "")),
            f"{source or 'Pipeline'}Error",
            _ERROR_SOURCES.get(source.upper(), "session"),
        )
        self._recorder.capture_alarm(given, "error", data, self.agent)


_TOOL_LOG = logging.getLogger("videosdk.agents.content_generation")
_TOOL_RAISED = re.compile(r"^Error executing function (\w+): (.*)$", re.DOTALL)
"""VideoSDK's log line for a tool that raised (content_generation.py, 1.0.30)"""


class _ToolErrors(logging.Handler):
    """VideoSDK's log of a tool that raised, to the reader (its only report of one)."""

    def __init__(self, reader: VideoSDKReader) -> None:
        super().__init__(logging.ERROR)
        self._reader = reader

    def emit(self, record: logging.LogRecord) -> None:
        raised = _TOOL_RAISED.match(record.getMessage())
        if raised is not None:
            self._reader.tool_raised(raised.group(1), raised.group(2))


def _numbers(metrics: dict[str, Any] | None) -> dict[str, float]:
    return {
        name: float(value)
        for name, value in (metrics or {}).items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
