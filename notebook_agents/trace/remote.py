"""Reading an agent in another process: livekit's ``RemoteSession`` events as the trace's.

An agent run with livekit's console transport reports its session over the ``lk.agent.session``
protocol (livekit's ``SessionHost``); ``RemoteSession`` emits each report. They become the same
kinds, with the same data, as a session in the kernel gives (``reading``), each exactly once.
The protocol carries less than the session itself, and the trace says so rather than guess:
it reports agents by their ``id``, so their classes come from the agent's process beside it
(``AgentProcess`` has its script say each as it starts): an agent whose class is known is
named as in the kernel, one whose is not (an agent started by hand) by its id; a
handoff's realtime session and context modes are None (unknown), and an agent message's
``source`` and ``phase`` are read from its place in the conversation (after a handoff and
before the user speaks: ``on_enter``; after a tool's output in the same turn: ``tool_reply``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from livekit.agents import llm
from livekit.agents.voice.remote_session import RemoteSession
from livekit.protocol.agent_pb import agent_session as agent_pb

from .describe import label_of, message_metrics, message_text
from .foreign import ForeignReader
from .recorder import error_data, given
from .remote_items import chat_item
from .schema import ErrorSource, HandoffData, ModelUsageData, TraceSpan
from .tap import Handler, listen

_ERROR_SOURCES: dict[str, ErrorSource] = {
    "stt": "stt",
    "llm": "llm",
    "tts": "tts",
    "realtime_model": "realtime",
}
"""the ``type`` in livekit's reported error (``stt_error``, ...) -> the trace's ``source``"""
# the protocol's error is str(livekit's error event): "type='stt_error' ... recoverable=True"
_REPORTED_TYPE = re.compile(r"\btype='(\w+)_error'")
_REPORTED_RECOVERABLE = re.compile(r"\brecoverable=(True|False)\b")
_REPORTED_ERROR = re.compile(r"\berror=(\w+)\(")
_REPORTED_ERROR_TEXT = re.compile(
    r"""\berror=\w+\((?P<quote>['"])(?P<text>(?:\\.|(?!(?P=quote)).)*)(?P=quote)"""
)
"""the first argument of the exception's repr, a string literal: its message"""
_HOOKS = ("on_enter", "on_exit")
"""the agent's hooks livekit runs in a span of their name, which records what one raised"""


class RemoteReader(ForeignReader):
    """Listens to one ``RemoteSession``; ``detach`` stops it."""

    def __init__(self, agent_classes: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._classes: Mapping[str, str] = agent_classes if agent_classes is not None else {}
        """each agent's class (``module:qualname``) by its id, as far as it is known"""
        self._stop_listening: Callable[[], None] = lambda: None
        self._seen: set[object] = set()  # item ids, and ("call" | "output", call_id)
        self._entering = False  # a handoff came and the user has not spoken since
        self._tool_output_this_turn = False
        self._usage: list[ModelUsageData] = []

    def attach(self, remote: RemoteSession) -> None:
        handlers: dict[str, Handler] = {
            "agent_state_changed": self._on_agent_state,
            "user_state_changed": self._on_user_state,
            "user_input_transcribed": self._on_transcript,
            "conversation_item_added": self._on_item_added,
            "tool_execution_updated": self._on_tool_update,
            "function_tools_executed": self._on_tools_executed,
            "session_usage_updated": self._on_usage,
            "error": self._on_error,
        }
        self._stop_listening = listen(remote, handlers, self._recorder.capture_failure)

    def detach(self) -> None:
        self._stop_listening()

    # -- the reports, on the loop that reads the protocol ----------------------------------

    def _on_agent_state(self, ev: agent_pb.AgentSessionEvent) -> None:
        changed = ev.agent_state_changed
        old, new = (
            agent_pb.AgentState.Name(changed.old_state),
            agent_pb.AgentState.Name(changed.new_state),
        )
        self._capture("agent_state", {"old": _state(old), "new": _state(new)})

    def _on_user_state(self, ev: agent_pb.AgentSessionEvent) -> None:
        changed = ev.user_state_changed
        old, new = (
            agent_pb.UserState.Name(changed.old_state),
            agent_pb.UserState.Name(changed.new_state),
        )
        self._capture("user_state", {"old": _state(old), "new": _state(new)})

    def _on_transcript(self, ev: agent_pb.AgentSessionEvent) -> None:
        heard = ev.user_input_transcribed
        self._capture("user_transcript", {"text": heard.transcript, "final": heard.is_final})

    def _on_item_added(self, ev: agent_pb.AgentSessionEvent) -> None:
        item = chat_item(ev.conversation_item_added.item)
        if item is None or item.id in self._seen:
            return
        self._seen.add(item.id)
        if isinstance(item, llm.AgentHandoff):
            self._on_handoff(item)
        elif isinstance(item, llm.ChatMessage) and item.role == "user":
            self._entering = self._tool_output_this_turn = False
            data = {
                "text": message_text(item),
                "item_id": item.id,
                "metrics": message_metrics(item),
                "created_at": item.created_at,
            }
            self._capture("user_message", data)
        elif isinstance(item, llm.ChatMessage) and item.role == "assistant":
            tool_reply = self._tool_output_this_turn and not self._entering
            self._capture(
                "agent_message",
                {
                    "text": message_text(item),
                    "item_id": item.id,
                    "source": "tool_reply" if tool_reply else "generate_reply",
                    "phase": "on_enter" if self._entering else "turn",
                    "interrupted": item.interrupted,
                    "metrics": message_metrics(item),
                },
            )

    def _on_handoff(self, item: llm.AgentHandoff) -> None:
        old, new = item.old_agent_id, item.new_agent_id
        to_class = self._classes.get(new)
        data: HandoffData = {
            "from": label_of(old, self._classes.get(old)) if old is not None else None,
            "to": label_of(new, to_class),
            "from_id": old,
            "to_id": new,
            "session": None,  # reused or fresh: the protocol does not say
            "context": None,
        }
        if to_class is not None:
            data["to_class"] = to_class
        self.agent = data["to"]
        self._entering, self._tool_output_this_turn = True, False
        self._capture("handoff", data)

    def _on_tool_update(self, ev: agent_pb.AgentSessionEvent) -> None:
        update = ev.tool_execution_updated
        kind = update.WhichOneof("update")
        if kind == "started":
            call = update.started.function_call
            self._tool_call(call.name, call.call_id, call.arguments)
        elif kind == "ended" and update.ended.status == agent_pb.TC_ERROR:
            ended = update.ended
            message = (
                f"the tool raised: {ended.message} (the model was told only that an internal "
                "error occurred)"
            )
            data = {**error_data(message, "ToolError", "tool"), "call_id": ended.call_id}
            self._recorder.capture_alarm(given, "error", data, self.agent)

    def _on_tools_executed(self, ev: agent_pb.AgentSessionEvent) -> None:
        executed = ev.function_tools_executed
        for call in executed.function_calls:
            self._tool_call(call.name, call.call_id, call.arguments)
        for output in executed.function_call_outputs:
            if ("output", output.call_id) in self._seen:
                continue
            self._seen.add(("output", output.call_id))
            self._tool_output_this_turn = True
            data = {
                "name": output.name,
                "call_id": output.call_id,
                "output": output.output,
                "is_error": output.is_error,
            }
            self._capture("tool_output", data)

    def _tool_call(self, name: str, call_id: str, arguments: str) -> None:
        if ("call", call_id) in self._seen:
            return
        self._seen.add(("call", call_id))
        self._capture("tool_call", {"name": name, "call_id": call_id, "arguments": arguments})

    def span_ended(self, span: TraceSpan) -> None:
        """A span of livekit's from the agent's process (``AgentProcess`` receives them): a
        hook that raised is an ``error``, as the kernel's trace records one. livekit only logs
        it (in the agent's process) and records it on the hook's span; the protocol reports
        nothing of it."""
        if span.name not in _HOOKS or span.status != "error":
            return
        raised = next((e["attributes"] for e in span.events if e["name"] == "exception"), None)
        if raised is None:
            return
        type_name = str(raised.get("exception.type", "Exception"))
        said = str(raised.get("exception.message", ""))
        agent = span.attributes.get("lk.agent_label") or self.agent
        # worded as the kernel's trace words it: the agent, the hook, repr() of what it raised
        message = f"{agent}.{span.name} raised {type_name}({said!r})"
        data = error_data(message, type_name, "agent")
        self._recorder.capture_alarm(given, "error", data, agent)

    def _on_usage(self, ev: agent_pb.AgentSessionEvent) -> None:
        described = usage_data(ev.session_usage_updated.usage)
        if described != self._usage:
            self._usage = described
            self._capture("metrics", {"usage": described})

    def _on_error(self, ev: agent_pb.AgentSessionEvent) -> None:
        text = ev.error.message
        reported = _REPORTED_TYPE.search(text)
        recoverable = _REPORTED_RECOVERABLE.search(text)
        raised = _REPORTED_ERROR.search(text)
        data = error_data(
            text,
            raised.group(1) if raised else "Error",
            _ERROR_SOURCES.get(reported.group(1), "session") if reported else "session",
            recoverable is not None and recoverable.group(1) == "True",
        )
        self._recorder.capture_alarm(given, "error", data, self.agent)


def reported_error_text(message: str) -> str:
    """What the exception of a reported error says: the protocol's ``error`` carries livekit's
    error event as text (``type='llm_error' ... error=APIStatusError("Error code: 404 - ...",
    status_code=404, ...) recoverable=False``), in which the exception's message is its repr's
    first argument. The whole report where there is none."""
    literal = _REPORTED_ERROR_TEXT.search(message)
    if literal is None or not literal["text"]:
        return message
    # repr() escapes backslashes, quotes and what is not printable; a character beyond latin-1
    # kept as it is becomes an escape that unicode_escape reads back. Not ast.literal_eval:
    # building ASTs in two threads at once can raise SystemError ("AST constructor recursion
    # depth mismatch", CPython 3.11.7 here), and Python 3.11 parses a traceback as it prints it
    return literal["text"].encode("latin-1", "backslashreplace").decode("unicode_escape")


def _state(name: str) -> str:
    """A protocol state's name (``AS_THINKING``, ``US_AWAY``) as livekit's (``thinking``)."""
    return name.split("_", 1)[1].lower()


def usage_data(usage: agent_pb.AgentSessionUsage) -> list[ModelUsageData]:
    """The reported usage as ``describe.usage_data`` gives livekit's: per model, its counters
    that are not zero."""
    described: list[ModelUsageData] = []
    for model in usage.model_usage:
        variant = model.WhichOneof("usage")
        if variant is None:
            continue
        fields = getattr(model, variant)
        counts = {
            field.name: value
            for field, value in fields.ListFields()
            if field.name not in ("provider", "model") and isinstance(value, int | float) and value
        }
        described.append(
            {
                "type": f"{variant}_usage",
                "provider": fields.provider,
                "model": fields.model,
                "counts": counts,
            }
        )
    return described
