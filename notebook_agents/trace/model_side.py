"""livekit's chat context held against the model's conversation, between turns.

A realtime plugin keeps its own view of the model's conversation, built from the server's
acks. When the two no longer hold the same items in the same order, the trace records
``context_diverged`` (again only if what parts them changes) and ``context_converged`` when
they agree again; an item the model rejected during a sync is an ``error``. Where the model's
server can be asked (``server``: an emulator in this process), livekit's context is held
against the model's own conversation as well: a late ack can leave the plugin's view agreeing
with livekit while the model answers from another conversation. The checks compare ids on the
session's thread, where the sides are, judging only the items that came since the sides last
agreed (``Agreement``; the lists are only copied and compared whole, at C speed), and capture
only what they find: a parting, a coming together, a rejected item. What the runner looks for
after each turn is then known without making any event (``Recorder.last_alarm``, ``parted``,
``lacking``).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from livekit.agents import AgentSession, llm

from .. import _livekit_internals as livekit
from .agreement import Agreement, past
from .describe import (
    activity_label,
    agent_label,
    describe_item,
    sent_to_model,
    syncs_to_model,
)
from .model_server import ModelServer
from .realtime_protocol import RealtimeProtocol
from .recorder import Record, Recorder, error_data, given
from .schema import ChatItemData, ContextDivergedData, ModelSource
from .tap import Handler

if TYPE_CHECKING:
    # no public export: the running agent's activity holds its realtime session
    from livekit.agents.voice.agent_activity import AgentActivity


class ModelSide:
    """When to compare the two sides (settled, nothing in flight), and what they part on."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self.session: AgentSession[Any] | None = None
        self.syncs = 0
        """realtime context syncs under way: their items are in flight"""
        self.leaving: AgentActivity | None = None
        """the activity whose tool handed off: its context is never the model's again"""
        self._compare_pending = False
        self._asked: llm.RealtimeSession[Any] | None = None  # the last asked, and its answer
        self._item_by_item = False
        self.parted: dict[str, Apart] = {}
        """the agents whose sides were apart at their last comparison, and what parted them"""
        self.server: ModelServer | None = None
        """where the model's own conversation can be read; None: the plugin's view stands in"""
        self._protocols: weakref.WeakKeyDictionary[llm.RealtimeSession[Any], RealtimeProtocol] = (
            weakref.WeakKeyDictionary()
        )
        self._comparing = threading.Lock()  # the session's loop, and a caller's compare
        self._heard = 0  # changes of the sides heard here (the recorder counts the others)
        self._compared_at: tuple[int, int] | None = None  # what was heard at the last compare
        # where livekit's context last agreed with each side: the next compare builds on it
        self._with_server: Agreement[str] = Agreement(list)
        self._with_plugin: Agreement[llm.ChatItem] = Agreement(_synced_ids)
        self._all_held: _AllHeld | None = None  # the next sync's check builds on it

    def detach(self) -> None:
        """The session is over: let go of it (a kept trace keeps no session, model or loop)."""
        self.session = self.leaving = self._asked = None

    # -- on the session's thread -----------------------------------------------------------

    def changed(self, *_: object) -> None:
        """A sync ended or the model's side gained an item: compare if that happened between
        turns (a late ack, an edit from code); within a turn, the turn's end compares."""
        self._heard += 1
        if self.syncs or self._compare_pending:
            return
        session = self.session
        if session is not None and session.current_speech is None:
            self.compare_soon()

    def compare_soon(self, *_: object) -> None:
        """Compare once the current step is over (livekit adds its own copy of an item the
        model added right after announcing it), if the session is then settled."""
        if self._compare_pending or self.session is None:
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
        session = self.session
        if session is None or self.syncs or session.agent_state not in ("listening", "idle"):
            return  # mid-turn, items are in flight both ways: the turn's end compares
        if session.current_speech is None:
            self.compare()

    def compare_if_changed(self) -> None:
        """``compare``, unless nothing was heard since the last one: livekit's side and the
        plugin's are as they were compared (the server's is read again only after a change)."""
        if self._compared_at != self._heard_so_far():
            self.compare()

    def _heard_so_far(self) -> tuple[int, int]:
        return self._recorder.captures, self._heard

    def compare(self) -> None:
        """Hold the active agent's context against the model's sides, from what changed since
        they last agreed (``Agreement``); the event is made with the events. A sync under way
        is left to finish (its end compares again). Never raises: a failure is recorded."""
        try:
            session = self.session
            activity = livekit.current_activity(session) if session is not None else None
            if activity is None or self.syncs or activity is self.leaving:
                return  # (leaving: the next agent's context replaces this one on the model)
            rt_session = activity.realtime_llm_session
            if rt_session is None:
                return
            if rt_session is not self._asked:  # asked once per realtime session
                capabilities = rt_session.realtime_model.capabilities
                self._asked, self._item_by_item = rt_session, capabilities.mutable_chat_context
            if not self._item_by_item:
                return  # no item-by-item conversation on the model's side to hold livekit's to
            self._compared_at = self._heard_so_far()
            # lists made now: livekit's read-only context, the plugin's rebuilt one, and the
            # server's ids (read at once, without waiting on the server's thread)
            server = self._server_side(rt_session)
            ours = activity.agent.chat_ctx.items
            plugin = _with_answered_calls(ours, rt_session.chat_ctx.items)
            with self._comparing:
                self._compare(agent_label(activity.agent), ours, plugin, server)
        except Exception as e:  # a trace must never break the session it observes
            self._recorder.capture_failure(e)

    def _compare(
        self,
        label: str,
        ours: list[llm.ChatItem],
        plugin: list[llm.ChatItem],
        server: tuple[list[str], str] | None,
    ) -> None:
        """Parted if livekit's ids differ from either side's (the server's first)."""
        server_read = server is not None
        if server is not None and not self._with_server.holds(ours, server[0]):
            # described only now: the ids found the sides apart, or could not tell
            described = self._server_items(server[1])
            server_read = described is not None
            if described is not None:
                if self._parted(label, ours, described, "server", True):
                    self._with_server.forget()
                    return
                self._with_server.agreed(ours, [item["id"] for item in described])
        if not self._with_plugin.holds(ours, plugin):
            theirs = [item for item in plugin if syncs_to_model(item)]
            if self._parted(label, ours, theirs, "plugin", server_read):
                self._with_plugin.forget()
                return
            self._with_plugin.agreed(ours, plugin)
        if self.parted.pop(label, None) is not None:
            data = {"agent": label, "items": self._with_plugin.alike}
            self._recorder.capture(given, "context_converged", data, label)

    def _parted(
        self,
        label: str,
        ours: list[llm.ChatItem],
        theirs: Sequence[Item],
        source: ModelSource,
        server_known: bool,
    ) -> bool:
        """Whether livekit's ids differ from ``theirs``: a ``context_diverged`` if they part
        otherwise than they did at the agent's last comparison. ``server_known``: the
        server's side was read (then the plugin's is only a view of it)."""
        their_ids = [_item_id(item) for item in theirs]
        held = set(their_ids)
        # what livekit would send (an item the model holds is one it was sent: no need to ask)
        our_ids = [item.id for item in ours if item.id in held or sent_to_model(item)]
        if our_ids == their_ids:
            return False
        kept = set(our_ids)
        order = [i for i in our_ids if i in held] != [i for i in their_ids if i in kept]
        apart = (source, kept - held, held - kept, order)
        if self.parted.get(label) != apart:  # parted, or parted otherwise than before
            self.parted[label] = apart
            ours = [item for item in ours if item.id in kept]
            self._recorder.capture_alarm(_diverged, label, ours, theirs, source, server_known)
        return True

    def _server_side(self, rt_session: llm.RealtimeSession[Any]) -> tuple[list[str], str] | None:
        """The ids of the model's items as its server holds them, and its session id, if a
        model server serves this session."""
        server, protocol = self.server, self._protocols.get(rt_session)
        if server is None or protocol is None or protocol.session_id is None:
            return None
        ids = server.item_ids(protocol.session_id)
        return (ids, protocol.session_id) if ids is not None else None

    def _server_items(self, session_id: str) -> list[ChatItemData] | None:
        """The model's items as its server holds them, described (the server's conversation
        may wait on the server's thread: never on a lock here that the server takes)."""
        server = self.server
        items = server.conversation(session_id) if server is not None else None
        if items is None:
            return None
        # what livekit's side holds too: messages of the caller and the model, tool items
        kept = [
            item
            for item in items
            if item.get("role") in ("user", "assistant")
            or item.get("type") in ("function_call", "function_call_output")
        ]
        return cast(list[ChatItemData], kept)  # described as the trace describes items

    # -- what each realtime session's protocol says (its own events) -----------------------

    def session_handlers(self, rt_session: llm.RealtimeSession[Any]) -> dict[str, Handler]:
        """The handlers of ``rt_session``'s protocol events: its server session, its
        refused settings."""
        protocol = self._protocols.setdefault(rt_session, RealtimeProtocol())
        return protocol.handlers()

    def lacking(self) -> list[str]:
        """The settings the active agent's realtime session runs without (a refused
        ``session.update`` set them and none since was accepted)."""
        session = self.session
        activity = livekit.current_activity(session) if session is not None else None
        rt_session = activity.realtime_llm_session if activity is not None else None
        protocol = self._protocols.get(rt_session) if rt_session is not None else None
        return list(protocol.lacking) if protocol is not None else []

    def refused(self, event_id: str) -> list[str] | None:
        """If ``event_id`` is a ``session.update`` the model refused: what its session runs
        without now (that update's settings and those of earlier refused ones)."""
        for protocol in list(self._protocols.values()):
            if event_id in protocol.refused:
                return list(protocol.lacking)
        return None

    # -- what the sync wrapper reports (patching.SyncWatcher) ------------------------------

    def sync_started(self) -> None:
        self._heard += 1
        self.syncs += 1

    def sync_failed(self, error: llm.RealtimeError) -> None:
        message = f"realtime context sync failed: {error}"
        self._recorder.capture_error(message, type(error).__name__, "realtime", self._label())

    def sync_ended(self) -> None:
        self.syncs -= 1
        self.changed()

    def synced(self, chat_ctx: llm.ChatContext, rt_session: llm.RealtimeSession[Any]) -> None:
        """After a sync: an ``error`` for each item sent that the model does not hold. Once a
        check found every item held, the next looks only at the items sent since, while the
        plugin's view still holds what it held then."""
        if not rt_session.realtime_model.capabilities.mutable_chat_context:
            return
        sent, plugin = list(chat_ctx.items), rt_session.chat_ctx.items
        last = self._all_held
        held_since = past(plugin, last.plugin) if last is not None else None
        to_check: Sequence[llm.ChatItem]
        if last is None or held_since is None:
            to_check, held = sent, {item.id for item in plugin}
        else:
            to_check, held = _unchecked(sent, last.sent), last.held
            held.update(item.id for item in held_since)
        rejected = [item for item in to_check if item.id not in held and syncs_to_model(item)]
        self._all_held = None if rejected else _AllHeld(sent, plugin, held)
        if rejected:
            session = self.session
            activity = livekit.current_activity(session) if session is not None else None
            self._recorder.capture_alarm(_rejected, activity, rejected)

    def _label(self) -> str | None:
        session = self.session
        return activity_label(livekit.current_activity(session) if session is not None else None)


# -- where the events are made ---------------------------------------------------------------


class _AllHeld(NamedTuple):
    """A sync after which the model held every item sent."""

    sent: list[llm.ChatItem]
    plugin: list[llm.ChatItem]
    """the plugin's items then"""
    held: set[str]
    """their ids (and those the plugin gained since, once a later check builds on it)"""


Apart = tuple[ModelSource, set[str], set[str], bool]
"""what parts two sides: which side, the ids only livekit holds, only the model, the order"""
Item = llm.ChatItem | ChatItemData
"""an item of the model's side: the plugin's (livekit's type) or the server's (described)"""


def _unchecked(sent: list[llm.ChatItem], checked: list[llm.ChatItem]) -> list[llm.ChatItem]:
    """The items of ``sent`` past the start it shares with ``checked`` (all of them if none
    is shared). livekit sends the caller's newest message again as another object (the same
    id, a later ``created_at``): the shared start is found walking back from the end."""
    shared = min(len(sent), len(checked))
    while shared and sent[shared - 1] is not checked[shared - 1]:
        shared -= 1
    return sent[shared:] if sent[:shared] == checked[:shared] else sent


def _with_answered_calls(
    ours: list[llm.ChatItem], plugin: list[llm.ChatItem]
) -> list[llm.ChatItem]:
    """The plugin's view with livekit's tool calls whose outputs it holds, each before its
    output. google's plugin (1.8.9) never puts the calls its model makes in its view, and
    livekit extends that view with their outputs only (agent_activity, "generating the
    function calls results"); yet the model holds those calls: it made them, and an output
    answers a call it holds."""
    calls_held = {i.call_id for i in plugin if isinstance(i, llm.FunctionCall)}
    answered = {i.call_id for i in plugin if isinstance(i, llm.FunctionCallOutput)}
    missing = {
        item.call_id: item
        for item in ours
        if isinstance(item, llm.FunctionCall)
        and item.call_id in answered
        and item.call_id not in calls_held
    }
    if not missing:
        return plugin
    completed: list[llm.ChatItem] = []
    for item in plugin:
        if isinstance(item, llm.FunctionCallOutput) and (call := missing.pop(item.call_id, None)):
            completed.append(call)
        completed.append(item)
    return completed


def _synced_ids(items: Sequence[llm.ChatItem]) -> list[str]:
    return [item.id for item in items if syncs_to_model(item)]


def _item_id(item: Item) -> str:
    return item["id"] if isinstance(item, dict) else item.id


def _described(item: Item) -> ChatItemData:
    return item if isinstance(item, dict) else describe_item(item)


def _diverged(
    label: str,
    ours: list[llm.ChatItem],
    theirs: Sequence[Item],
    source: ModelSource,
    server_known: bool,
) -> Iterable[Record]:
    yield "context_diverged", divergence(label, ours, theirs, source, server_known), label


def _rejected(activity: AgentActivity | None, rejected: list[llm.ChatItem]) -> Iterable[Record]:
    """An ``error`` for each item the model rejected: livekit only logs it, and the turn
    then goes on without the item (a user message the model never heard)."""
    for item in rejected:
        described = describe_item(item)
        what = described.get("role") or described["type"]
        message = (
            f"the model rejected the {what} item {described.get('text', '')!r}: "
            "its conversation goes on without it"
        )
        yield "error", error_data(message, "ItemRejected", "realtime"), activity_label(activity)


def divergence(
    agent: str,
    ours: list[llm.ChatItem],
    theirs: Sequence[Item],
    source: ModelSource = "plugin",
    server_known: bool = False,
) -> ContextDivergedData:
    """``context_diverged``'s data: what each side holds that the other lacks, and whether
    the items both hold are in the same order. ``source``: where the model's side was read;
    ``server_known``: the plugin's view parted while the server's agrees with livekit."""
    our_ids, their_ids = {item.id for item in ours}, {_item_id(item) for item in theirs}
    missing = [describe_item(item) for item in ours if item.id not in their_ids]
    extra = [_described(item) for item in theirs if _item_id(item) not in our_ids]
    order = [i.id for i in ours if i.id in their_ids] != [
        _item_id(i) for i in theirs if _item_id(i) in our_ids
    ]
    side = "the model" if source == "server" or not server_known else "the plugin's view"
    parts = [
        f"{side} lacks {_items(len(missing))} livekit has" if missing else "",
        f"{side} holds {_items(len(extra))} livekit lacks" if extra else "",
        "the items both hold are in another order" if order else "",
    ]
    if side == "the model":
        what = "the model's conversation"
    else:  # the model itself is in step: what the plugin does next is based on a wrong view
        what = "the realtime plugin's view of the model's conversation (the model's own agrees)"
    return {
        "agent": agent,
        "message": f"{agent}'s chat context and {what} diverged: "
        + "; ".join(part for part in parts if part),
        "missing": missing,
        "extra": extra,
        "order": order,
        "livekit": [describe_item(item) for item in ours],
        "model": [_described(item) for item in theirs],
        "model_source": source,
    }


def _items(count: int) -> str:
    return f"{count} item" + ("" if count == 1 else "s")
