"""The trace contract, proven on real parts: a real ``AgentSession`` over the real realtime
plugin, talking to the in-process emulator. Nothing here is mocked but a failing handler."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from livekit.agents import (
    NOT_GIVEN,
    Agent,
    AgentSession,
    ConversationItemAddedEvent,
    ToolError,
    function_tool,
    llm,
)
from livekit.agents.voice.run_result import RunResult
from livekit.plugins import openai

from notebook_agents import trace as trace_module
from notebook_agents.emulator import Emulator
from notebook_agents.trace import TRACE_FORMAT, Trace, TraceEvent, check_event_data, reading
from notebook_agents.trace import recorder as recorder_module
from notebook_agents.trace.describe import conversation_items
from notebook_agents.trace.foreign import ForeignReader
from notebook_agents.trace.realtime_protocol import RealtimeProtocol
from tests.conftest import MakeModel, realtime_model

T = TypeVar("T")

GREETING = "You are Alice. How can I help you?"


class Bob(Agent):
    """Billing. Says hello on entering and can send the caller back to whoever sent him."""

    def __init__(
        self,
        *,
        back: Agent | None = None,
        model: openai.realtime.RealtimeModel | None = None,
        chat_ctx: llm.ChatContext | None = None,
        id: str | None = None,
        server_turns: bool = False,
        briefs: bool = False,
    ) -> None:
        # no model of its own means the session's: the same RealtimeModel instance as Alice's
        super().__init__(
            instructions="You are Bob. You handle billing.",
            llm=model if model is not None else NOT_GIVEN,
            chat_ctx=chat_ctx if chat_ctx is not None else NOT_GIVEN,
            id=id,
            # the model's own turn detection: a realtime session set up otherwise can't be reused
            turn_handling={"turn_detection": "realtime_llm"} if server_turns else NOT_GIVEN,
        )
        self._back = back
        self._briefs = briefs  # give whoever he sends back to what was said to him

    async def on_enter(self) -> None:
        await self.session.say("Bob here.")

    @function_tool
    async def transfer_to_alice(self) -> Agent:
        """Send the caller back to Alice."""
        assert self._back is not None
        if self._briefs:
            await self._back.update_chat_ctx(self.chat_ctx.copy())
        return self._back


class Alice(Agent):
    """Greets in ``on_enter``, says goodbye in ``on_exit``, has tools and hands off to Bob."""

    def __init__(self, bob: Callable[[Alice], Agent] | None = None) -> None:
        super().__init__(instructions="You are Alice. You greet callers.")
        self._bob = bob if bob is not None else lambda alice: Bob(back=alice)

    async def on_enter(self) -> None:
        self.session.generate_reply()

    async def on_exit(self) -> None:
        await self.session.say("Goodbye from Alice.")

    @function_tool
    async def get_weather(self, city: str) -> str:
        """Look up the weather in a city."""
        return f"sunny in {city}"

    @function_tool
    async def lookup_account(self) -> str:
        """Look up the caller's account."""
        raise ToolError("no such account")

    @function_tool
    async def transfer_to_bob(self) -> Agent:
        """Hand the caller to Bob for billing questions."""
        return self._bob(self)


def new_session(model: openai.realtime.RealtimeModel) -> AgentSession[None]:
    """The text-only session recipe: no VAD, turns end when ``run`` is called."""
    return AgentSession(llm=model, vad=None, turn_handling={"turn_detection": "manual"})


@contextlib.asynccontextmanager
async def traced(
    model: openai.realtime.RealtimeModel,
    agent: Agent,
    trace: Trace | None = None,
    *,
    parts: bool = False,
) -> AsyncIterator[tuple[AgentSession[None], Trace]]:
    """A started session with a trace attached before ``start``; closed on exit. Unless the
    test ``parts`` livekit's context from the model's, none of its traces may record that.
    Every event it recorded is checked against its kind's schema."""
    session = new_session(model)
    trace = trace if trace is not None else Trace()
    trace.attach(session)
    try:
        await session.start(agent)
        yield session, trace
    finally:
        await session.aclose()
        if not parts:
            assert not trace.of_kind("context_diverged")  # a settled session: both sides agree
    for event in trace.events:  # every event as the schema writes it
        check_event_data(event.kind, event.data)


@contextlib.asynccontextmanager
async def late_tool_results(
    emulator: Emulator, delay_ms: float
) -> AsyncIterator[openai.realtime.RealtimeModel]:
    """A model whose connection holds each tool result's ack ``delay_ms`` (past livekit's
    5 s wait when over 5000); closed on exit."""
    url = emulator.base_url(ack_delay_ms=delay_ms, ack_delay_items="function_call_output")
    model = openai.realtime.RealtimeModel(base_url=url, api_key="x", modalities=["text"])
    try:
        yield model
    finally:
        await model.aclose()


def spoken(trace: Trace) -> dict[str, tuple[str | None, str, str]]:
    """Each agent message's text -> (agent, source, phase)."""
    return {
        e.data["text"]: (e.agent, e.data["source"], e.data["phase"])
        for e in trace.of_kind("agent_message")
    }


# -- 1. speech phase and source -----------------------------------------------------------


async def test_speech_is_recorded_with_its_phase_and_source(models: MakeModel) -> None:
    async with traced(models(), Alice()) as (session, trace):
        await session.run(user_input="hello there")
        await session.run(user_input="get weather city=Paris")
        await session.run(user_input="please transfer to bob")

    assert spoken(trace) == {
        GREETING: ("Alice", "generate_reply", "on_enter"),
        'You are Alice. You said: "hello there".': ("Alice", "generate_reply", "turn"),
        "You are Alice. The tool returned: sunny in Paris": ("Alice", "tool_reply", "turn"),
        # the old agent still speaks in on_exit after the handoff began: labelled as itself
        "Goodbye from Alice.": ("Alice", "say", "on_exit"),
        "Bob here.": ("Bob", "say", "on_enter"),
    }
    assert len(trace.of_kind("agent_message")) == 5


# -- 2. exactly once ----------------------------------------------------------------------

TURNS = [
    "hello there",
    "please transfer to bob",
    "what is 2 plus 3",
    "transfer to alice please",
    "get weather city=Oslo",
]


@pytest.mark.parametrize("mode", ["reused", "fresh"])
async def test_a_to_b_to_a_records_every_item_exactly_once(models: MakeModel, mode: str) -> None:
    own = models() if mode == "fresh" else None
    alice = Alice(lambda alice: Bob(back=alice, model=own, chat_ctx=alice.chat_ctx.copy()))
    async with traced(models(), alice) as (session, trace):
        for text in TURNS:
            await session.run(user_input=text)
        # an item announced again (as upstream's audio paths can) is still recorded once
        recorded = len(trace)
        for item in session.history.items:
            if isinstance(item, llm.ChatMessage | llm.AgentHandoff):
                session.emit("conversation_item_added", ConversationItemAddedEvent(item=item))
        assert len(trace) == recorded

    events = trace.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.t for e in events] == sorted(e.t for e in events)
    assert [e.data["text"] for e in trace.of_kind("user_message")] == TURNS
    assert [(e.data["from"], e.data["to"]) for e in trace.of_kind("handoff")] == [
        (None, "Alice"),
        ("Alice", "Bob"),
        ("Bob", "Alice"),
    ]

    message_ids = [e.data["item_id"] for e in trace.of_kind("user_message", "agent_message")]
    call_ids = [e.data["call_id"] for e in trace.of_kind("tool_call")]
    output_ids = [e.data["call_id"] for e in trace.of_kind("tool_output")]
    assert len(message_ids) == len(set(message_ids))
    assert len(call_ids) == len(set(call_ids))
    assert len(output_ids) == len(set(output_ids))

    # the session's own history, item by item: each maps to exactly one trace event
    history = session.history.items
    messages = [i for i in history if isinstance(i, llm.ChatMessage) and i.role != "system"]
    for message in messages:
        assert message_ids.count(message.id) == 1, message
    for item in history:
        if isinstance(item, llm.FunctionCall):
            assert call_ids.count(item.call_id) == 1, item
        elif isinstance(item, llm.FunctionCallOutput):
            assert output_ids.count(item.call_id) == 1, item
    # ... and nothing the session did not have
    assert sorted(message_ids) == sorted(i.id for i in messages)
    assert sorted(call_ids) == sorted(i.call_id for i in history if i.type == "function_call")
    handoffs = [i for i in history if i.type == "agent_handoff"]
    assert len(trace.of_kind("handoff")) == len(handoffs) == 3


async def test_contexts_at_rebuilds_each_agents_chat_context(models: MakeModel) -> None:
    bobs: list[Agent] = []

    def bob(alice: Alice) -> Agent:
        bobs.append(Bob(back=alice, chat_ctx=alice.chat_ctx.copy()))
        return bobs[-1]

    alice = Alice(bob)
    async with traced(models(), alice) as (session, trace):
        for text in TURNS:
            await session.run(user_input=text)
        edited = alice.chat_ctx.copy()
        edited.remove(edited.items[-1])
        edited.add_message(role="user", content="an edit")
        await alice.update_chat_ctx(edited)

    def keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(i["type"], i.get("call_id") or i["id"]) for i in items]

    def actual(agent: Agent) -> list[tuple[str, str]]:
        return [(i.type, getattr(i, "call_id", None) or i.id) for i in conversation_items(agent)]

    contexts = trace.contexts_at()
    assert keys(contexts["Alice"]) == actual(alice)
    assert keys(contexts["Bob"]) == actual(bobs[0])
    # scrubbed to the handoff: Bob starts from the copy, made inside the tool, so without
    # the transfer call that was still pending
    to_bob = trace.of_kind("handoff")[1]
    at_handoff = trace.contexts_at(to_bob.t)
    assert keys(at_handoff["Bob"]) == keys(to_bob.data["context_items"])
    assert "transfer_to_bob" not in [i.get("name") for i in at_handoff["Bob"]]
    assert "transfer_to_bob" in [i.get("name") for i in at_handoff["Alice"]]
    assert trace.contexts_at(-1.0) == {}


# -- 3. handoff events --------------------------------------------------------------------


@pytest.mark.parametrize("context", ["copied", "empty"])
@pytest.mark.parametrize("mode", ["reused", "fresh"])
async def test_handoff_event_says_how_the_session_and_context_moved(
    emulator: Emulator, models: MakeModel, mode: str, context: str
) -> None:
    own = models() if mode == "fresh" else None
    alice = Alice(
        lambda alice: Bob(
            back=alice, model=own, chat_ctx=alice.chat_ctx.copy() if context == "copied" else None
        )
    )
    async with traced(models(), alice) as (session, trace):
        await session.run(user_input="hello there")
        await session.run(user_input="please transfer to bob")

    start, handoff = trace.of_kind("handoff")
    assert start.data == {
        "from": None, "to": "Alice", "from_id": None, "to_id": "alice",
        "to_class": f"{__name__}:Alice", "session": None, "context": None, "context_items": [],
    }  # fmt: skip
    assert start.agent == "Alice"
    assert handoff.agent == "Bob"
    data = handoff.data
    assert data["to_class"] == f"{__name__}:Bob"
    assert (data["from"], data["to"], data["session"], data["context"]) == (
        "Alice",
        "Bob",
        mode,
        context,
    )
    # greeting, "hello there", its reply, "please transfer to bob", the call and its output
    assert data["items_from"] >= 6
    if context == "copied":
        # Bob has no transfer tool, so the copy drops the call items: the four messages remain
        assert data["items_shared"] == data["items_to"] == 4
        texts = [item["text"] for item in data["context_items"]]
        assert [item["type"] for item in data["context_items"]] == ["message"] * 4
        assert "hello there" in texts and "please transfer to bob" in texts
    else:
        assert data["items_shared"] == data["items_to"] == 0
        assert data["context_items"] == []
    # what the emulator saw: one realtime connection when reused, a second when fresh
    realtime = [c for c in emulator.connections if c.kind == "realtime"]
    assert len(realtime) == (1 if mode == "reused" else 2)


@pytest.mark.parametrize("briefed", [False, True], ids=["own", "briefed"])
async def test_an_agent_handed_back_to_starts_from_its_own_context_unless_given_more(
    models: MakeModel, briefed: bool
) -> None:
    # Bob starts from a copy of Alice's context; going back, Alice holds items Bob holds too,
    # but they were hers: only what Bob gives her on the way back makes her context a copy
    alice = Alice(lambda alice: Bob(back=alice, chat_ctx=alice.chat_ctx.copy(), briefs=briefed))
    async with traced(models(), alice) as (session, trace):
        await session.run(user_input="please transfer to bob")
        await session.run(user_input="my invoice is late")
        await session.run(user_input="transfer to alice")

    there, back = trace.of_kind("handoff")[1:]
    assert (there.data["context"], back.data["from"], back.data["to"]) == ("copied", "Bob", "Alice")
    told_bob = "my invoice is late" in [i["text"] for i in back.data["context_items"]]
    assert (back.data["context"], told_bob) == (("copied", True) if briefed else ("own", False))


async def test_a_shared_model_still_makes_a_fresh_session_when_it_cannot_be_reused(
    emulator: Emulator, models: MakeModel
) -> None:
    # same RealtimeModel instance, but Bob turns server-side turn detection on: LiveKit opens
    # a new realtime session, and the trace must say so rather than infer "reused"
    alice = Alice(lambda alice: Bob(back=alice, server_turns=True))
    async with traced(models(), alice) as (session, trace):
        await session.run(user_input="please transfer to bob")

    assert trace.of_kind("handoff")[-1].data["session"] == "fresh"
    assert len([c for c in emulator.connections if c.kind == "realtime"]) == 2


# -- 4. context edits ---------------------------------------------------------------------


async def test_update_chat_ctx_records_what_was_added_and_removed(models: MakeModel) -> None:
    alice = Alice()
    async with traced(models(), alice) as (session, trace):
        await session.run(user_input="hello there")
        user = next(
            i for i in alice.chat_ctx.items if isinstance(i, llm.ChatMessage) and i.role == "user"
        )
        edited = alice.chat_ctx.copy()
        edited.remove(user)
        system = edited.add_message(role="system", content="Be brief.")
        await alice.update_chat_ctx(edited)
        # an edit that changes nothing records nothing
        await alice.update_chat_ctx(alice.chat_ctx.copy())
        # and the session carries on
        result: RunResult[None] = await session.run(user_input="still there")
        assert result.events

    (changed,) = trace.of_kind("context_changed")
    assert changed.agent == "Alice"
    assert changed.data == {
        "agent": "Alice",
        "added": [{"id": system.id, "type": "message", "role": "system", "text": "Be brief."}],
        "removed": [{"id": user.id, "type": "message", "role": "user", "text": "hello there"}],
    }
    assert user.id not in {i.id for i in alice.chat_ctx.items}


# -- 5. tools -----------------------------------------------------------------------------


async def test_tool_calls_and_outputs_are_recorded(models: MakeModel) -> None:
    async with traced(models(), Alice()) as (session, trace):
        await session.run(user_input="get weather city=Paris")
        await session.run(user_input="lookup account please")

    weather_call, account_call = trace.of_kind("tool_call")
    weather_out, account_out = trace.of_kind("tool_output")
    assert weather_call.data["name"] == "get_weather"
    assert json.loads(weather_call.data["arguments"]) == {"city": "Paris"}
    assert weather_out.data == {
        "name": "get_weather",
        "call_id": weather_call.data["call_id"],
        "output": "sunny in Paris",
        "is_error": False,
    }
    assert account_call.data["name"] == "lookup_account"
    assert json.loads(account_call.data["arguments"]) == {}
    assert account_out.data == {
        "name": "lookup_account",
        "call_id": account_call.data["call_id"],
        "output": "no such account",
        "is_error": True,
    }
    assert weather_call.seq < weather_out.seq < account_call.seq < account_out.seq
    calls = [i for i in session.history.items if isinstance(i, llm.FunctionCall)]
    assert [c.call_id for c in calls] == [
        weather_call.data["call_id"],
        account_call.data["call_id"],
    ]


# -- 6. agent labels ----------------------------------------------------------------------


async def test_agents_are_labelled_by_class_name_unless_given_an_id(models: MakeModel) -> None:
    alice = Alice(lambda alice: Bob(back=alice, id="concierge"))
    async with traced(models(), alice) as (session, trace):
        await session.run(user_input="please transfer to bob")

    handoff = trace.of_kind("handoff")[-1]
    assert (handoff.data["from"], handoff.data["to"]) == ("Alice", "concierge")
    assert (handoff.data["from_id"], handoff.data["to_id"]) == ("alice", "concierge")
    assert spoken(trace)["Bob here."] == ("concierge", "say", "on_enter")
    assert {e.agent for e in trace.events if e.seq < handoff.seq} == {"Alice"}
    assert trace_module.agent_label(Agent(instructions="plain")) == "Agent"


# -- 7. subscribers across threads --------------------------------------------------------


class LoopThread:
    """An event loop on a thread of its own, as the runner's job thread is."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """Run ``coro`` on the thread's loop; await the result without blocking ours."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def worker() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


async def test_subscribers_are_called_on_their_own_loop(
    emulator: Emulator, worker: LoopThread
) -> None:
    trace = Trace()
    received: list[TraceEvent] = []
    threads: set[int] = set()
    early: list[TraceEvent] = []
    loopless: list[tuple[TraceEvent, int]] = []

    def on_event(event: TraceEvent) -> None:
        received.append(event)
        threads.add(threading.get_ident())

    trace.subscribe(on_event)
    stop_early = trace.subscribe(early.append)
    # subscribed from a thread with no running loop: called on whichever thread records
    await asyncio.to_thread(
        trace.subscribe, lambda event: loopless.append((event, threading.get_ident()))
    )

    model: openai.realtime.RealtimeModel | None = None
    session: AgentSession[None] | None = None

    async def begin() -> None:
        nonlocal model, session
        model = realtime_model(emulator)
        session = new_session(model)
        trace.attach(session)
        await session.start(Alice())
        await session.run(user_input="hello there")

    async def finish() -> None:
        assert model is not None and session is not None
        await session.run(user_input="goodbye now")
        await session.aclose()
        await model.aclose()

    await worker.run(begin())
    stop_early()
    await worker.run(finish())
    # every callback was queued on this loop before the wake-up of the await above, and the
    # loop runs its queue in order: all deliveries are done by now

    assert received == trace.events
    assert received[-1].kind == "closed"
    assert threads == {threading.get_ident()} != {worker.thread.ident}
    assert [event for event, _ in loopless] == trace.events
    assert {thread for _, thread in loopless} == {worker.thread.ident}
    # unsubscribed between the turns: a prefix, without the second turn
    assert early == trace.events[: len(early)]
    assert "goodbye now" not in [e.data.get("text") for e in early]
    assert early[-1].kind != "closed"


async def test_a_failing_subscriber_does_not_starve_the_others(models: MakeModel) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))
    received: list[TraceEvent] = []
    closed = asyncio.Event()

    def failing(event: TraceEvent) -> None:
        raise RuntimeError(f"view broke on {event.kind}")

    def on_event(event: TraceEvent) -> None:
        received.append(event)
        if event.kind == "closed":
            closed.set()

    trace = Trace()
    trace.subscribe(failing)
    trace.subscribe(on_event)
    async with traced(models(), Alice(), trace) as (session, _):
        await session.run(user_input="hello there")
    await asyncio.wait_for(closed.wait(), timeout=10)
    loop.set_exception_handler(None)

    assert received == trace.events
    # each failure went to the loop's handler, as any failing callback does
    assert len(reported) == len(trace.events)
    assert all(isinstance(c["exception"], RuntimeError) for c in reported)


async def test_a_subscriber_on_a_closed_loop_is_skipped(models: MakeModel) -> None:
    gone = LoopThread()
    subscribed = asyncio.run_coroutine_threadsafe(_subscribed(Trace()), gone.loop)
    trace = subscribed.result(timeout=10)
    gone.close()
    async with traced(models(), Alice(), trace) as (session, _):
        result: RunResult[None] = await session.run(user_input="hello there")
        assert result.events
    assert trace.events[-1].kind == "closed"
    assert not trace._delivery._outboxes  # nothing piles up for a loop that will never run again


async def _subscribed(trace: Trace) -> Trace:
    """``trace``, subscribed to from the loop this runs on."""
    trace.subscribe(lambda event: None)
    return trace


async def test_events_since_a_length_holds_only_what_came_after(
    emulator: Emulator, worker: LoopThread
) -> None:
    # recorded on the session's thread and made only when read: a length taken on another
    # thread still counts everything recorded before it
    model = realtime_model(emulator)
    session = new_session(model)
    trace = Trace(session)

    async def first() -> None:
        await session.start(Alice())
        await session.run(user_input="hello there")

    async def second() -> None:
        await session.run(user_input="what is 2 plus 3")
        await session.aclose()
        await model.aclose()

    await worker.run(first())
    seen = len(trace)
    await worker.run(second())

    def said(events: list[TraceEvent]) -> list[str]:
        return [e.data["text"] for e in events if e.kind == "user_message"]

    assert said(trace.events[:seen]) == ["hello there"]
    assert said(trace.events_since(seen)) == ["what is 2 plus 3"]
    assert trace.events_since(seen) == trace.events[seen:]


async def test_events_recorded_from_many_threads_are_each_numbered_once_in_order() -> None:
    trace = Trace()
    delivered: list[TraceEvent] = []
    closed = asyncio.Event()

    def on_event(event: TraceEvent) -> None:
        delivered.append(event)
        if event.kind == "closed":
            closed.set()

    trace.subscribe(on_event)
    threads, each = 4, 300
    start = threading.Barrier(threads + 1)

    def record(thread: int) -> None:
        start.wait()
        for number in range(each):
            data = {"message": f"{thread}:{number}", "type": "T", "source": "trace"}
            trace._record("error", {**data, "recoverable": True})

    workers = [threading.Thread(target=record, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    start.wait()
    lengths = []
    while any(thread.is_alive() for thread in workers):  # reading while they record
        lengths.append(len(trace))
    for thread in workers:
        thread.join()
    trace.record_closed("user_initiated")
    await asyncio.wait_for(closed.wait(), 10)  # a bound on failure, not a sync

    events = trace.events
    assert [e.seq for e in events] == list(range(threads * each + 1))
    assert [e.t for e in events] == sorted(e.t for e in events)
    assert lengths == sorted(lengths)
    messages = [e.data["message"] for e in events[:-1]]
    for index in range(threads):
        mine = [m for m in messages if m.startswith(f"{index}:")]
        assert mine == [f"{index}:{number}" for number in range(each)]  # once each, in order
    assert delivered == events


# -- 8. save and load ---------------------------------------------------------------------


async def test_save_and_load_round_trip(models: MakeModel, tmp_path: Path) -> None:
    async with traced(models(), Alice()) as (session, trace):
        await session.run(user_input="get weather city=Paris")
        await session.run(user_input="please transfer to bob")

    records = trace.to_records()
    assert isinstance(records, list) and all(type(r) is dict for r in records)
    assert json.loads(json.dumps(records)) == records  # plain data, nothing to convert
    assert {r["kind"] for r in records} >= {"handoff", "agent_message", "tool_call", "closed"}

    path = trace.save(tmp_path / "run.jsonl")
    header = {"format": TRACE_FORMAT, "started_at": trace.started_at}
    assert json.loads(path.read_text().splitlines()[0]) == header
    loaded = Trace.load(path)
    assert loaded.events == trace.events
    assert loaded.started_at == trace.started_at
    assert loaded.to_records() == records


def test_load_reads_a_trace_saved_in_the_earlier_format(tmp_path: Path) -> None:
    """Version 1 wrote ``metrics`` as livekit's metrics of one call: still loaded, as written."""
    old_metrics = {"type": "realtime_model_metrics", "ttft": 0.2, "input_tokens": 12}
    lines = [
        {"format": "notebook-agents.trace/1", "started_at": 1.0},
        {"seq": 0, "t": 0.1, "kind": "metrics", "agent": "Alice", "data": old_metrics},
        {"seq": 1, "t": 0.2, "kind": "closed", "agent": "Alice", "data": {"reason": "user"}},
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    loaded = Trace.load(path)
    assert [e.data for e in loaded.events] == [old_metrics, {"reason": "user"}]
    assert TRACE_FORMAT == "notebook-agents.trace/5"


def test_load_reads_a_version_2_trace_whose_messages_say_nothing_of_interruptions(
    tmp_path: Path,
) -> None:
    message = {
        "text": "Hi.",
        "item_id": "i1",
        "source": "generate_reply",
        "phase": "turn",
        "metrics": {},
    }
    lines = [
        {"format": "notebook-agents.trace/2", "started_at": 1.0},
        {"seq": 0, "t": 0.1, "kind": "agent_message", "agent": "Alice", "data": message},
    ]
    path = tmp_path / "v2.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [e.data for e in Trace.load(path).events] == [message]


HEADER = json.dumps({"format": TRACE_FORMAT})
EVENT = json.dumps({"seq": 0, "t": 0.0, "kind": "closed", "agent": None, "data": {}})


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        ([], 1),  # empty
        (["{not json"], 1),
        ([json.dumps({"format": "someone-else/9"}), EVENT], 1),
        ([HEADER, EVENT, "{not json"], 3),
        ([HEADER, "[1, 2]"], 2),
        ([HEADER, json.dumps({"seq": 0, "t": 0.0, "kind": "closed"})], 2),  # no agent, no data
    ],
)
def test_load_refuses_a_malformed_file_naming_file_and_line(
    tmp_path: Path, lines: list[str], line: int
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(f"{text}\n" for text in lines))
    with pytest.raises(ValueError, match=rf"bad\.jsonl:{line}:"):
        Trace.load(path)


def test_load_refuses_binary_garbage_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "picture.jsonl"
    path.write_bytes(f"{HEADER}\n".encode() + b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ValueError, match=r"picture\.jsonl:2: not UTF-8 text") as caught:
        Trace.load(path)
    assert "is this a trace file?" in str(caught.value)


GOOD_EVENT: dict[str, Any] = {"seq": 0, "t": 0.5, "kind": "closed", "agent": None, "data": {}}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("seq", "x", "an integer"),
        ("seq", True, "an integer"),
        ("t", "soon", "a finite number"),
        ("t", float("nan"), "a finite number"),
        ("kind", "bogus", "one of 'agent_state'"),
        ("agent", 3, "a string or null"),
        ("data", [1], "an object"),
    ],
)
def test_load_refuses_a_wrongly_typed_field_naming_it(
    tmp_path: Path, field: str, value: object, expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    bad = json.dumps({**GOOD_EVENT, field: value})
    path.write_text(f"{HEADER}\n{json.dumps(GOOD_EVENT)}\n{bad}\n")
    with pytest.raises(ValueError) as caught:
        Trace.load(path)
    assert str(caught.value).startswith(f"{path}:3: {field}: found {json.dumps(value)}")
    assert f"expected {expected}" in str(caught.value)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({k: v for k, v in GOOD_EVENT.items() if k != "kind"}, "kind: missing"),
        ({**GOOD_EVENT, "colour": "red"}, "colour: not a field"),
    ],
)
def test_load_refuses_a_missing_or_unknown_field_naming_it(
    tmp_path: Path, record: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{HEADER}\n{json.dumps(record)}\n")
    with pytest.raises(ValueError, match=rf"bad\.jsonl:2: {problem}"):
        Trace.load(path)


def test_load_refuses_a_header_whose_start_time_is_not_a_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    header = json.dumps({"format": TRACE_FORMAT, "started_at": "yesterday"})
    path.write_text(f"{header}\n{json.dumps(GOOD_EVENT)}\n")
    with pytest.raises(ValueError, match=r'bad\.jsonl:1: started_at: found "yesterday"'):
        Trace.load(path)


# -- 9. a failing trace never breaks the session ------------------------------------------


async def test_a_hook_that_raises_is_recorded_as_an_error(models: MakeModel) -> None:
    class Clumsy(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are Clumsy.")

        async def on_enter(self) -> None:
            raise ValueError("bug in on_enter")

    class Host(Alice):
        @function_tool
        async def transfer_to_clumsy(self) -> Agent:
            """Hand the caller to Clumsy."""
            return Clumsy()

    async with traced(models(), Host()) as (session, trace):
        await session.run(user_input="transfer to clumsy")
        reply: RunResult[None] = await session.run(
            user_input="hello"
        )  # the session goes on with Clumsy
        assert reply.expect.contains_message(role="assistant").event().item.text_content
        errors = trace.of_kind("error")
        assert [(e.agent, e.data["message"]) for e in errors] == [
            ("Clumsy", "Clumsy.on_enter raised ValueError('bug in on_enter')")
        ]


async def test_a_failing_handler_is_recorded_and_the_session_goes_on(
    models: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any) -> None:
        # TypeError in particular: the session's emitter re-raises it into the session
        raise TypeError("boom")

    trace = Trace()
    # failing where livekit calls the trace, on the session's thread
    monkeypatch.setattr(trace._reader, "_on_speech_created", boom)
    alice = Alice()
    async with traced(models(), alice, trace) as (session, _):
        result: RunResult[None] = await session.run(user_input="hello there")
        reply = result.expect.contains_message(role="assistant").event().item
        assert reply.text_content == 'You are Alice. You said: "hello there".'
        recorded = len(trace)

        # the context-edit wrapper is the trace's too: its failure stays out of the caller
        with monkeypatch.context() as patched:
            patched.setattr(trace._reader, "context_edited", boom)
            edited = with_system_message(alice, "Be brief.")
            await alice.update_chat_ctx(edited)
            assert alice.chat_ctx.items[-1].id == edited.items[-1].id
        # and so is making the event, later: a failure there takes the event's place
        with monkeypatch.context() as patched:
            patched.setattr(reading, "describe_item", boom)
            edited = with_system_message(alice, "Be briefer.")
            await alice.update_chat_ctx(edited)
            assert alice.chat_ctx.items[-1].id == edited.items[-1].id
            made = trace.events_since(recorded)

    errors = trace.of_kind("error")
    assert errors and {e.data["type"] for e in errors} == {"TraceError"}
    assert all("boom" in e.data["message"] for e in errors)
    # the speeches, then the context-edit wrapper, then the context edit's event
    assert len([e for e in made if e.kind == "error"]) == 2
    assert len(errors) > 2
    assert not trace.of_kind("context_changed")
    assert {e.data["phase"] for e in trace.of_kind("agent_message")} == {"turn"}  # unknown
    assert [e.data["text"] for e in trace.of_kind("user_message")] == ["hello there"]
    assert trace.events[-1].kind == "closed"


def with_system_message(agent: Agent, text: str) -> llm.ChatContext:
    """A copy of ``agent``'s chat context with a system message added."""
    edited = agent.chat_ctx.copy()
    edited.add_message(role="system", content=text)
    return edited


async def test_a_response_livekit_cancels_itself_is_no_error(emulator: Emulator) -> None:
    # a barge-in: livekit cancels the model's response itself; the model reports it cancelled
    # (as it does a cancel of its own, which is an error), and the trace tells the two apart
    # a reply long enough to cut, whose end (response.done) comes after livekit moved on
    url = emulator.base_url(token_ms=40, rtt_ms=100)
    model = openai.realtime.RealtimeModel(base_url=url, api_key="x", modalities=["text"])
    reported_cancelled = asyncio.Event()

    def on_metrics(metrics: object) -> None:
        if getattr(metrics, "cancelled", False):
            reported_cancelled.set()

    try:
        async with traced(model, Brisk()) as (session, trace):
            activity = session._activity
            assert activity is not None and activity.realtime_llm_session is not None
            activity.realtime_llm_session.on("metrics_collected", on_metrics)
            turn: asyncio.Future[Any] = asyncio.ensure_future(session.run(user_input="hello there"))
            await recorded_where(
                trace, lambda e: e.kind == "agent_state" and e.data["new"] == "speaking", 2
            )
            session.interrupt()
            with contextlib.suppress(Exception):
                await turn
            await asyncio.wait_for(reported_cancelled.wait(), 10)  # a bound on failure
    finally:
        await model.aclose()

    assert [e.data["type"] for e in trace.of_kind("error")] == []


# -- 10. detach ---------------------------------------------------------------------------


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_a_realtime_sync_that_times_out_is_recorded_as_an_error(
    emulator: Emulator,
) -> None:
    # livekit only logs a tool result whose ack never came; the trace must show it
    async with (
        late_tool_results(emulator, 6000) as model,
        traced(model, Alice()) as (session, trace),
    ):
        await session.run(user_input="transfer to bob")
        errors = trace.of_kind("error")
        assert [e.data["message"] for e in errors] == [
            "realtime context sync failed: update_chat_ctx timed out."
        ]
        assert errors[0].data["recoverable"] is True
        kinds = [e.kind for e in trace.events if e.kind in ("tool_output", "error", "handoff")]
        assert kinds[-3:] == ["tool_output", "error", "handoff"]  # the handoff waited for it


async def test_detach_stops_recording_and_restores_what_it_wrapped(models: MakeModel) -> None:
    alice = Alice()
    model = models()
    async with traced(model, alice) as (session, trace):
        await session.run(user_input="hello there")
        rt_session = session._activity._rt_session if session._activity else None
        assert rt_session is not None
        # wrapped while traced
        assert "update_chat_ctx" in vars(alice) and "session" in vars(model)
        assert "update_chat_ctx" in vars(rt_session)
        # and both emitters are tapped (listened to through their emit)
        assert "emit" in vars(session) and "emit" in vars(rt_session)

        trace.detach()
        assert "emit" not in vars(session) and "emit" not in vars(rt_session)
        assert "update_chat_ctx" not in vars(alice)
        assert alice.update_chat_ctx.__func__ is Agent.update_chat_ctx  # type: ignore[attr-defined]
        assert "session" not in vars(model) and "update_chat_ctx" not in vars(rt_session)
        recorded = trace.events

        await session.run(user_input="anyone there")
        edited = alice.chat_ctx.copy()
        edited.add_message(role="system", content="Be brief.")
        await alice.update_chat_ctx(edited)
        trace.detach()  # twice is harmless

    assert trace.events == recorded
    assert "anyone there" in [m.text_content for m in session.history.messages()]


async def test_problems_since_makes_no_event_unless_one_may_be_a_problem(
    models: MakeModel,
) -> None:
    """The runner asks after every turn: a turn without trouble leaves the events to be made
    off the session's path; an error since the mark is found, one before it is not."""
    async with traced(models(), Alice()) as (session, trace):
        trace.record_failure("an earlier failure")
        start = trace.now()
        await session.run(user_input="hello there")
        waiting = len(trace._recorder._pending)
        assert waiting > 0
        assert trace.problems_since(start, "Alice") == []
        assert len(trace._recorder._pending) == waiting  # nothing was made

        trace._record("error", dict(recorder_module.failure(ValueError("later"))), "Alice")
        problems = trace.problems_since(start, "Alice")
        assert [e.data["message"] for e in problems] == ["trace failed: ValueError('later')"]
        assert not trace._recorder._pending
        assert trace.problems_since(trace.now(), "Alice") == []


@pytest.mark.parametrize("first_out", ["first in", "last in"])
async def test_two_traces_on_one_session_each_record_until_detached(
    models: MakeModel, first_out: str
) -> None:
    """Each trace hears every event while attached, whichever leaves first; the session's
    and the realtime session's ``emit`` are their own again once both have left."""
    earlier, later = Trace(), Trace()
    async with traced(models(), Alice(), earlier) as (session, _):
        later.attach(session)
        await session.run(user_input="hello there")
        rt_session = session._activity._rt_session if session._activity else None
        assert rt_session is not None
        leaving, staying = (earlier, later) if first_out == "first in" else (later, earlier)
        for trace in (earlier, later):
            assert [e.data["text"] for e in trace.of_kind("user_message")] == ["hello there"]
            reply = trace.of_kind("agent_message")[-1].data["text"]
            assert reply == 'You are Alice. You said: "hello there".'

        leaving.detach()
        left_with = len(leaving)
        await session.run(user_input="anyone there")
        assert "emit" in vars(session) and "emit" in vars(rt_session)  # still heard
        assert len(leaving) == left_with
        heard = [e.data["text"] for e in staying.of_kind("user_message")]
        assert heard == ["hello there", "anyone there"]

        staying.detach()
        assert "emit" not in vars(session) and "emit" not in vars(rt_session)


# -- 11. what the model has ---------------------------------------------------------------


class Brisk(Alice):
    """Alice without a goodbye: her handoff tool's output is the last item she sends."""

    async def on_exit(self) -> None:
        pass


class Greeting(Bob):
    """Bob greeting with a model reply, which the model appends to its conversation."""

    async def on_enter(self) -> None:
        self.session.generate_reply()


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_a_tool_result_acked_after_the_handoff_parts_the_models_conversation(
    emulator: Emulator,
) -> None:
    """The tool result's ack comes after livekit's 5 s timeout: the reused session's model then
    holds the caller's later words where livekit never put them, and answers past them."""
    alice = Brisk(lambda alice: Greeting(back=alice, chat_ctx=alice.chat_ctx.copy()))
    async with (
        late_tool_results(emulator, 6000) as model,
        traced(model, alice, parts=True) as (session, trace),
    ):
        await session.run(user_input="transfer to bob")
        # the caller answers Bob's greeting after the late ack has come in, as one would
        await model_receives_output(session, trace.of_kind("tool_output")[-1].data["call_id"])
        ignored: list[RunResult[None]] = [
            await session.run(user_input=text) for text in ("transfer to alice", "hi")
        ]

        replies = [r.expect.contains_message(role="assistant").event().item for r in ignored]
        assert [r.text_content for r in replies] == ["You are Bob. How can I help you?"] * 2
        assert [e.data["name"] for e in trace.of_kind("tool_call")] == ["transfer_to_bob"]
        assert [e.data["to"] for e in trace.of_kind("handoff")] == ["Brisk", "Greeting"]

        # the model's side: the caller's words sit before Bob's greeting, so its
        # conversation always ends with Bob speaking, never with the caller
        server = emulator.conversations()[-1]
        said = [(i["role"], i["text"]) for i in server if i["type"] == "message"]
        assert said[-3:] == [
            ("assistant", "You are Bob. Done."),  # his greeting, after the late output
            ("assistant", "You are Bob. How can I help you?"),
            ("assistant", "You are Bob. How can I help you?"),
        ]
        assert ("user", "transfer to alice") in said[:-3]

        # the trace: Bob's side parted once his reply went in before the caller's words
        # (all the plugin sees of the server's order), and stayed apart: one record.
        # Alice's context is not compared once her tool has handed off: Bob's replaces it
        (bob_parted,) = trace.of_kind("context_diverged")
        assert bob_parted.agent == "Greeting"
        bob = bob_parted.data
        assert (bob["agent"], bob["missing"], bob["extra"], bob["order"]) == (
            "Greeting",
            [],
            [],
            True,
        )
        words, reply = trace.of_kind("user_message")[-2], replies[0]
        livekit, model_side = ([i["id"] for i in bob[side]] for side in ("livekit", "model"))
        assert livekit[-2:] == [words.data["item_id"], reply.id]
        assert model_side.index(reply.id) < model_side.index(words.data["item_id"])
        assert bob_parted.t > words.t
        assert not trace.of_kind("context_converged")


@pytest.mark.slow  # livekit's 5 s ack wait runs out
async def test_a_late_ack_parts_the_two_sides_until_it_comes_and_each_parting_is_recorded_once(
    emulator: Emulator,
) -> None:
    # held past livekit's 5 s timeout by half a second: each tool result is late, then heals
    async with (
        late_tool_results(emulator, 5500) as model,
        traced(model, Brisk(), parts=True) as (session, trace),
    ):
        for city in ("Oslo", "Paris"):
            parted_before = trace.of_kind("context_diverged")
            await session.run(user_input=f"get weather city={city}")
            output = trace.of_kind("tool_output")[-1]
            parted = trace.of_kind("context_diverged")[-1]
            assert parted.t > output.t and parted.data["extra"] == []
            assert [i.get("call_id") for i in parted.data["missing"]] == [output.data["call_id"]]
            await session.run(user_input="hello")  # while apart: not recorded again
            await recorded(trace, "context_converged", count=len(parted_before) + 1)
        kinds = [e.kind for e in trace.events if e.kind.startswith("context_")]
        assert kinds == ["context_diverged", "context_converged"] * 2
        assert all(e.agent == "Brisk" for e in trace.of_kind("context_converged"))


async def recorded(trace: Trace, kind: str, count: int) -> None:
    """Until the trace holds ``count`` events of ``kind``."""
    await recorded_where(trace, lambda event: event.kind == kind, count)


async def recorded_where(
    trace: Trace, matches: Callable[[TraceEvent], bool], count: int = 1
) -> None:
    """Until the trace holds ``count`` events that match."""
    more = asyncio.Event()
    unsubscribe = trace.subscribe(lambda event: more.set())
    try:
        while len([e for e in trace.events if matches(e)]) < count:
            more.clear()
            await asyncio.wait_for(more.wait(), 10)  # a bound on failure, not a sync
    finally:
        unsubscribe()


async def model_receives_output(session: AgentSession[None], call_id: str) -> None:
    """Until the realtime plugin's view of the model's conversation holds ``call_id``'s output."""
    assert session._activity is not None and session._activity._rt_session is not None
    rt_session = session._activity._rt_session
    arrived = asyncio.Event()

    def on_item(event: llm.RemoteItemAddedEvent) -> None:
        if isinstance(event.item, llm.FunctionCallOutput) and event.item.call_id == call_id:
            arrived.set()

    rt_session.on("remote_item_added", on_item)
    try:
        await asyncio.wait_for(arrived.wait(), 10)  # a bound on failure, not a sync
    finally:
        rt_session.off("remote_item_added", on_item)


def test_a_refused_session_update_stands_until_one_setting_the_same_is_accepted() -> None:
    """The OpenAI protocol as the plugin emits it: each session.update is answered in order by
    session.updated, or by an error naming its event_id."""
    protocol = RealtimeProtocol()
    handlers = protocol.handlers()
    sending, received = (
        handlers["openai_client_event_queued"],
        handlers["openai_server_event_received"],
    )

    def update(event_id: str, **settings: object) -> None:
        sending({"type": "session.update", "event_id": event_id,
                 "session": {"type": "realtime", **settings}})  # fmt: skip

    received({"type": "session.created", "event_id": "e0", "session": {"id": "sess_1"}})
    update("u1", instructions="You are Ada.", output_modalities=["text"])
    update("u2", tools=[{"type": "function", "name": "get_weather"}])
    sending({"type": "response.create", "event_id": "r1"})
    refusal = {"type": "invalid_request_error", "message": "no", "event_id": "u1"}
    received({"type": "error", "event_id": "e1", "error": refusal})
    received({"type": "session.updated", "event_id": "e2", "session": {}})  # u2's answer
    assert (protocol.session_id, list(protocol.lacking)) == (
        "sess_1",
        ["instructions", "output_modalities"],
    )
    assert protocol.refused == {"u1": ("instructions", "output_modalities")}
    update("u3", instructions="You are Ada, briefly.")  # the agent's update_instructions
    received({"type": "session.updated", "event_id": "e3", "session": {}})
    assert list(protocol.lacking) == ["output_modalities"]
    # another error (not an update's) changes nothing
    received({"type": "error", "event_id": "e4", "error": {**refusal, "event_id": "r1"}})
    assert list(protocol.lacking) == ["output_modalities"]


def test_a_model_server_without_a_conversation_is_refused_naming_the_fix() -> None:
    with pytest.raises(TypeError, match=r"needs an object with conversation\(session_id\)"):
        Trace(model_server="http://127.0.0.1:8000")  # type: ignore[arg-type]


def test_the_old_model_truth_names_still_work_and_say_what_to_use_instead() -> None:
    """ "truth" is the network's ground truth; the model's conversation comes from its server:
    ``model_truth=``, ``Trace.model_truth`` and ``ModelTruth`` still work for one release."""
    import notebook_agents.trace as trace_package
    from notebook_agents.runner._model_server import InProcessEmulators

    server = InProcessEmulators()
    with pytest.warns(DeprecationWarning, match=r"use Trace\(model_server=\.\.\.\)") as w:
        trace = Trace(model_truth=server)
    assert w[0].filename == __file__
    assert trace.model_server is server
    with pytest.warns(DeprecationWarning, match=r"use Trace\.model_server"):
        assert trace.model_truth is server
    with pytest.warns(DeprecationWarning, match=r"use notebook_agents\.trace\.ModelServer"):
        assert trace_package.ModelTruth is trace_package.ModelServer


def test_a_foreign_reader_records_into_the_trace_it_is_attached_to() -> None:
    """Issue 31: the trace takes any ``ForeignReader`` (``attach_reader``), so it imports no
    framework's adapter; a reader records into one trace, and a trace has one reader."""

    class Announcer(ForeignReader):
        def attach(self, agent: str) -> None:
            self.agent = agent
            self._capture("agent_state", {"old": "initializing", "new": "listening"})

    trace = Trace()
    reader = trace.attach_reader(Announcer())
    reader.attach("Greeter")
    (event,) = trace.events
    assert (event.kind, event.agent, event.data["new"]) == ("agent_state", "Greeter", "listening")
    with pytest.raises(RuntimeError, match="already attached"):
        trace.attach_reader(Announcer())
    with pytest.raises(RuntimeError, match="already records a trace"):
        Trace().attach_reader(reader)
    with pytest.raises(RuntimeError, match=r"trace\.attach_reader\(reader\)"):
        Announcer().attach("Greeter")
