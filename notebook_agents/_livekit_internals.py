"""Every reach into livekit-agents' private names, one named function each.

The runner, the trace, the session hook and the benchmark need these and livekit has no
public way to do them; each function says why. The few the trace calls inside every livekit
event are C callables (``operator.attrgetter``, a bound ``ContextVar.get``): no Python frame.
A new livekit that renames one breaks here, loudly: ``PRIVATE_NAMES`` lists them and a test
checks each exists on the installed version.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import operator
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from types import TracebackType
from typing import Any, NamedTuple
from unittest import mock

from livekit import rtc
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    ConversationItemAddedEvent,
    RunEvent,
    RunResult,
    SpeechCreatedEvent,
    UserStateChangedEvent,
    llm,
)
from livekit.agents.evals import Evaluator
from livekit.agents.evals import judge as evals_judge
from livekit.agents.ipc import mock_room
from livekit.agents.job import JobContext, get_job_context
from livekit.agents.simulation import SimulationContext, SimulationRun, SimulationVerdict
from livekit.agents.telemetry import loop_monitor
from livekit.agents.telemetry import traces as telemetry_traces
from livekit.agents.types import NOT_GIVEN
from livekit.agents.voice import agent_activity, room_io, run_result, tool_executor
from livekit.agents.voice.remote_session import TcpSessionTransport
from livekit.agents.voice.speech_handle import SpeechHandle
from livekit.protocol.agent_pb import agent_session as agent_pb
from livekit.rtc import _ffi_client as rtc_ffi_client
from opentelemetry import trace as trace_api

SERVER_OPTIONS = (
    "_job_executor_type",
    "_num_idle_processes",
    "_host",
    "_port",
    "_load_fnc",
    "_entrypoint_fnc",
    "_ws_url",
    "_api_key",
    "_api_secret",
)
"""the ``AgentServer`` attributes the runner sets for a notebook and puts back after"""

PRIVATE_NAMES: dict[Any, tuple[str, ...]] = {
    AgentServer: (
        *SERVER_OPTIONS,
        "_worker_token",
        "_deployment",
        "_prometheus_multiproc_dir",
        "_closed",
        "_lock",
    ),
    Agent: ("_chat_ctx", "_activity"),
    AgentSession: ("_closing_task", "_global_run_state", "_activity", "_update_activity_atask"),
    agent_activity.AgentActivity: ("_on_exit_task",),
    agent_activity: ("_AgentActivityContextVar", "_SpeechHandleContextVar", "_OnEnterContextVar"),
    room_io.RoomOptions: ("_ensure_options",),
    llm.RealtimeSession: ("_update_session",),
    mock_room: ("create_mock_room",),
    RunResult: ("_watch_handle", "_item_added", "_agent_handoff", "_mark_done", "_handles"),
    run_result.RunAssert: ("_raise_with_debug_info", "_events_list"),
    run_result: ("_MockToolsContextVar", "_SessionMockTools"),
    TcpSessionTransport: ("_reader", "_writer", "_loop"),
    tool_executor: ("_RunningTasks",),
    tool_executor._RunningTask: ("exe_task", "ctx"),
    JobContext: ("_simulation_end_fnc",),
    SimulationContext: ("_begin_finalize", "_dispatch"),
    evals_judge: ("_LLMJudge",),
    telemetry_traces._DynamicTracer: ("_tracer_provider",),
    loop_monitor.EventLoopMonitor: ("_sample_loop_thread",),
    rtc_ffi_client: ("FfiClient",),
    rtc_ffi_client.FfiClient: ("instance",),
}
"""class or module -> the private names used here, checked against the installed livekit"""
RUN_WRITES_ENV = {
    "LIVEKIT_URL": "_ws_url",
    "LIVEKIT_API_KEY": "_api_key",
    "LIVEKIT_API_SECRET": "_api_secret",
    "LIVEKIT_WORKER_TOKEN": "_worker_token",
    "LIVEKIT_AGENT_DEPLOYMENT": "_deployment",
    "PROMETHEUS_MULTIPROC_DIR": "_prometheus_multiproc_dir",
}
"""environment variables ``AgentServer.run`` sets for the whole process, each from the
server attribute named (when that is not empty)"""
MOCK_ROOM_NAME = "console"
"""the name livekit pins on its cached offline room; a job outside a runner keeps it"""


# -- the server ----------------------------------------------------------------------------


def server_options(server: AgentServer) -> dict[str, Any]:
    """The options the runner changes, to put back with ``restore_server_options``."""
    return {name: getattr(server, name) for name in SERVER_OPTIONS}


def restore_server_options(server: AgentServer, saved: dict[str, Any]) -> None:
    for name, value in saved.items():
        setattr(server, name, value)


def run_environment() -> dict[str, str | None]:
    """The variables ``run`` overwrites, as ``os.environ`` has them now."""
    return {name: os.environ.get(name) for name in RUN_WRITES_ENV}


def environment_run_writes(server: AgentServer) -> dict[str, str]:
    """What ``run`` will write into ``os.environ`` for ``server``, as configured now: the
    values that tell livekit's writes apart from what the user set."""
    written = {name: getattr(server, attribute) for name, attribute in RUN_WRITES_ENV.items()}
    return {name: value for name, value in written.items() if value}


def restore_environment(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def serve_on_loopback(server: AgentServer) -> None:
    """HTTP on 127.0.0.1, port 0: host and port have no public setter after construction."""
    server._host, server._port = "127.0.0.1", 0


def entrypoint_of(server: AgentServer) -> Any:
    """The ``@server.rtc_session()`` function: only the decorator sets it publicly."""
    return server._entrypoint_fnc


def set_entrypoint(server: AgentServer, entrypoint: Any) -> None:
    """Swap the entrypoint (the runner observes the job through a wrapper)."""
    server._entrypoint_fnc = entrypoint


def server_running(server: AgentServer) -> bool:
    """Whether ``server.run`` is live: livekit exposes no public flag for it."""
    return not server._closed


def renew_server_lock(server: AgentServer) -> None:
    """``run`` takes a lock made by an earlier run, bound to that run's (closed) loop."""
    server._lock = asyncio.Lock()


# -- simulations ---------------------------------------------------------------------------


def simulation_end_callback(ctx: JobContext) -> Callable[[SimulationContext], Any] | None:
    """The server's ``on_simulation_end``: livekit hands it to the job's context privately
    (for its ``SessionHost`` to call when LiveKit's simulator finalizes a run)."""
    callback: Callable[[SimulationContext], Any] | None = ctx._simulation_end_fnc
    return callback


def finalize_simulation(simulation: SimulationContext, verdict: SimulationVerdict) -> None:
    """Give ``simulation`` the simulator's verdict before ``on_simulation_end`` reads it, as
    livekit's ``SessionHost`` does on a ``finalize_simulation`` request (remote_session.py):
    a suite's verdict is its simulator's."""
    run = SimulationRun(id=simulation._dispatch.simulation_run_id)
    simulation._begin_finalize(simulator_verdict=verdict, run=run)


def criteria_judge(criteria: str, *, name: str) -> Evaluator:
    """livekit's LLM judge of a whole conversation against ``criteria``: what LiveKit's
    simulator does with a scenario's ``agent_expectations``. livekit's public judges
    (``accuracy_judge``, ``tool_use_judge``, ...) are this class, each with criteria of its
    own; the class taking criteria one writes is private."""
    judge: Evaluator = evals_judge._LLMJudge(instructions=criteria, name=name)
    return judge


# -- the session ---------------------------------------------------------------------------


def closing_task(session: AgentSession[Any]) -> asyncio.Task[None] | None:
    """The task closing ``session`` after an unrecoverable error, if one runs.

    livekit decides to close in ``_on_error`` (after emitting the error) and emits no event
    for it; when that close raises (a realtime model that cannot reconnect), ``close`` is
    never emitted at all.
    """
    task: asyncio.Task[None] | None = session._closing_task
    return task


def forget_stale_run(session: AgentSession[Any]) -> None:
    """Drop a run that ``session.run`` registered but that will not finish: never started,
    or given up from the notebook (timed out, interrupted).

    When generating the reply raises (an agent without an LLM, say), or a run is given up
    before its speeches end, livekit leaves it open and refuses every later turn as "nested
    runs".
    """
    stale = session._global_run_state
    if stale is not None and not stale.done():
        session._global_run_state = None


def run_speeches(run: RunResult[Any]) -> list[SpeechHandle]:
    """The speeches ``run`` watches (a typed turn's replies): to cut them when the turn is
    given up. livekit keeps them only in the run (``session.run`` returns no handle)."""
    return [handle for handle in run._handles if isinstance(handle, SpeechHandle)]


def capture_start(session: AgentSession[Any]) -> RunResult[Any]:
    """The run ``session.start(capture_run=True)`` returns (the greeting: ``on_enter``'s
    speech and what joins it), captured without making ``start`` wait for it.

    livekit's ``capture_run`` registers a run as the session's current one before the agent
    enters (its ``on_enter`` and speeches join it) and then makes ``start`` await it: the
    entrypoint's code after ``start`` would wait for the greeting, and a failed greeting would
    fail the start. Registering it alone keeps ``start`` as the entrypoint wrote it.
    """
    run: RunResult[Any] = RunResult(output_type=None)
    session._global_run_state = run
    return run


def release_run(session: AgentSession[Any], run: RunResult[Any]) -> None:
    """New speeches stop joining ``run`` (it still ends when those it watches do): a session
    has one current run, and ``session.run`` refuses another while it is open."""
    if session._global_run_state is run:
        session._global_run_state = None


def end_unanswered_run(run: RunResult[Any]) -> None:
    """End a spoken turn's ``run`` that nothing will answer: livekit called the caller's
    barge-in a false interruption, so no reply joins it. livekit ends a run only when a speech
    it watches ends; this one watches none, and awaited it would never end."""
    run._mark_done()


def failed_expectation(tb: TracebackType | None) -> tuple[list[RunEvent], int | None] | None:
    """The events an ``expect`` chain checked and the index it failed at, if ``tb`` is of
    an ``AssertionError`` livekit's ``RunAssert`` raised: the error carries them only as text
    (reprs), and a notebook shows them readably, each placed on the trace."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is run_result.RunAssert._raise_with_debug_info.__code__:
            marked = frame.f_locals.get("marker_index")
            return frame.f_locals["self"]._events_list, marked
        tb = tb.tb_next
    return None


class SpokenTurnCapture(NamedTuple):
    """A spoken turn's run, as ``capture_spoken_turn`` registers it."""

    run: RunResult[Any]
    speeches: list[SpeechHandle]
    """the speeches the run watches: the turn's replies, to cut if the turn is given up"""
    stop: Callable[[], None]
    """stops capturing and forgets the run if it is still open"""


def capture_spoken_turn(session: AgentSession[Any]) -> SpokenTurnCapture:
    """A run that collects the next spoken turn's replies as ``session.run`` collects a typed
    one's.

    ``session.run`` takes text only; a turn heard from audio starts its reply on its own, so the
    run is registered as the session's current one (tool replies and handoffs then join it, as
    in a text run) and each speech created meanwhile is watched by it. Only once the caller is
    heard in this turn (the user starts speaking, or their words arrive): a reply still coming
    for an earlier turn that was given up is not this turn's; nor, once a later turn's capture
    has begun (a caller speaking over this one's reply), is a reply to that one.
    """
    run: RunResult[Any] = RunResult(output_type=None, session=session)
    speeches: list[SpeechHandle] = []
    heard = False

    def begin() -> None:
        nonlocal heard
        if not heard:
            heard = True
            session._global_run_state = run

    def on_user_state(event: UserStateChangedEvent) -> None:
        if event.new_state == "speaking":
            begin()

    def on_item(event: ConversationItemAddedEvent) -> None:
        if getattr(event.item, "role", None) == "user":
            begin()

    def watch(event: SpeechCreatedEvent) -> None:
        # a later turn's capture took the session over (a barge-in over this one's reply)
        if heard and session._global_run_state is run:
            run._watch_handle(event.speech_handle)
            speeches.append(event.speech_handle)

    listeners: dict[Any, Callable[[Any], None]] = {
        "user_state_changed": on_user_state,
        "user_input_transcribed": lambda _: begin(),
        "conversation_item_added": on_item,
        "speech_created": watch,
    }
    for name, listener in listeners.items():
        session.on(name, listener)
    if session.user_state == "speaking":
        begin()

    def stop() -> None:
        for name, listener in listeners.items():
            session.off(name, listener)
        if session._global_run_state is run and not run.done():
            session._global_run_state = None

    return SpokenTurnCapture(run, speeches, stop)


current_activity: Callable[[AgentSession[Any]], agent_activity.AgentActivity | None] = (
    operator.attrgetter("_activity")
)
"""The running agent's activity: its realtime session and model, which handoffs swap. A C
getter, no Python call: the trace reads it in every session event it captures."""


activity_of_this_task: Callable[[], agent_activity.AgentActivity | None] = functools.partial(
    agent_activity._AgentActivityContextVar.get, None
)
"""The activity the running task belongs to: during a handoff the old agent may still speak
(``on_exit``) after the session moved on. (C calls only: the trace asks on every speech.)"""


on_enter_of_this_task: Callable[[], Any] = functools.partial(
    agent_activity._OnEnterContextVar.get, None
)
"""The ``on_enter`` the running task runs, if it is one (its ``.agent`` says whose). (C calls
only: the trace asks on every speech.)"""


on_exit_task: Callable[[agent_activity.AgentActivity], asyncio.Task[Any] | None] = (
    operator.attrgetter("_on_exit_task")
)
"""The task running ``activity``'s ``on_exit``, if one runs: a speech made in it is the old
agent's goodbye. (A C getter: the trace asks on every speech.)"""


speech_of_this_task: Callable[[], SpeechHandle | None] = functools.partial(
    agent_activity._SpeechHandleContextVar.get, None
)
"""The speech the running task generates (what a message added now belongs to). (C calls
only: the trace asks on every message.)"""


def tool_task(session: AgentSession[Any], call_id: str) -> asyncio.Task[Any] | None:
    """The task running ``session``'s tool call ``call_id``, while it runs.

    livekit reports a tool that raised only as ``str(exception)`` (``ToolCallEnded.message``)
    and a log line, and tells the model "An internal error occurred"; the task's result is
    the exception itself, which the trace records. livekit registers the task just before it
    announces the call (``tool_call_started``) and drops it just before announcing its end.
    """
    running = tool_executor._RunningTasks.get(session, {}).get(call_id)
    return running.exe_task if running is not None else None


def tool_tasks(
    session: AgentSession[Any], of_speeches: Collection[SpeechHandle] | None = None
) -> list[asyncio.Task[Any]]:
    """The tasks running ``session``'s tool calls (those ``of_speeches`` made, if given).

    livekit cancels a running tool only when the tool is marked cancellable: interrupting its
    speech leaves it running, and closing the session awaits it (for up to 60 s, livekit's
    ``_SESSION_ACLOSE_TIMEOUT``). A turn given up and a stop (which does not drain) end them
    by cancelling these tasks, as livekit's own ``cancel_all`` does.
    """
    running = tool_executor._RunningTasks.get(session, {}).values()
    return [
        task.exe_task
        for task in running
        if of_speeches is None or task.ctx.speech_handle in of_speeches
    ]


def room_options(kwargs: dict[str, Any]) -> room_io.RoomOptions:
    """``session.start``'s room options however given (the new ``room_options=`` or the
    deprecated input/output pair), as livekit itself merges them; pops them from ``kwargs``."""
    return room_io.RoomOptions._ensure_options(
        kwargs.pop("room_options", NOT_GIVEN),
        room_input_options=kwargs.pop("room_input_options", NOT_GIVEN),
        room_output_options=kwargs.pop("room_output_options", NOT_GIVEN),
    )


# -- the realtime session (the benchmark times what upstream's own test times) -------------


async def update_session(rt: llm.RealtimeSession[Any], **changes: Any) -> None:
    """What a handoff on a reused session does: instructions, context and tools in one
    update; upstream's handoff benchmark times exactly this."""
    await rt._update_session(**changes)


def set_context_before_start(agent: Agent, chat_ctx: llm.ChatContext) -> None:
    """Give an agent not yet started ``chat_ctx``, as ``Agent.update_chat_ctx`` does then: that
    is a coroutine, and the bench applies a handoff's context mode inside livekit's synchronous
    ``AgentSession.update_agent``, where the agent A's tool returned is about to start."""
    if agent._activity is not None:
        # livekit's own precondition: it refuses to start a running agent with a RuntimeError
        raise RuntimeError("the agent is already running: its context is its activity's")
    agent._chat_ctx = chat_ctx.copy(tools=agent.tools)


def wrap_update_session(rt: llm.RealtimeSession[Any], wrap: Any) -> None:
    """Replace ``rt``'s session update by ``wrap(original)``, to time each handoff's."""
    rt._update_session = wrap(rt._update_session)  # type: ignore[method-assign]


# -- the offline room ----------------------------------------------------------------------


def start_ffi() -> None:
    """Start livekit's FFI (its native side: audio frames, resamplers, rooms) now, if not yet.

    It registers its disposal with ``atexit`` at its first use, which a session's start makes:
    a runner's stop at exit, registered before that, ran after the disposal, and the session
    it stopped pushed audio to resamplers already gone ("PushSoxResampler ... handle not
    found", a kernel shut down with a call up). Started first, the stop registered after it
    runs before it (``atexit`` runs the last registered first)."""
    rtc_ffi_client.FfiClient.instance  # noqa: B018 (creating it is the point)


def name_mock_room_by_job() -> None:
    """Make the cached offline room's ``name`` its job's room name (``runner.room_name``).

    livekit gives every offline job one cached mock room named "console"; a property on
    the mock's own class answers per job instead (the job's context is a context variable),
    so concurrent runners each see their own name.
    """
    room_class = type(mock_room.create_mock_room())
    if not isinstance(vars(room_class).get("name"), property):
        room_class.name = property(_job_room_name)


def quiet_mock_room() -> None:
    """Make what livekit's room IO calls on the offline room every turn plain functions.

    The cached room is an autospec mock: each call is checked against the real signature and
    kept, with its arguments, until the runner stops (~33 a turn: transcription streams,
    session messages, the agent's state; ~1 ms a turn). Nothing offline reads them. The room
    answers as before (connected, the writes go nowhere); its local participant is an agent,
    as a real job's is (the mock's kind read as an ingress in livekit's spans).
    """
    room = mock_room.create_mock_room()
    room.isconnected = _connected
    participant = room.local_participant
    participant.kind = rtc.ParticipantKind.PARTICIPANT_KIND_AGENT
    participant.stream_text = _text_to_nobody
    participant.send_bytes = _sent_to_nobody
    participant.set_attributes = _sent_to_nobody


def _connected() -> bool:
    return True


async def _sent_to_nobody(*_: Any, **__: Any) -> None:
    return None


class _TextToNobody:
    """A text stream nobody reads (``rtc.TextStreamWriter``'s calls)."""

    async def write(self, text: str) -> None:
        return None

    async def aclose(self, *, reason: str = "", attributes: dict[str, str] | None = None) -> None:
        return None


async def _text_to_nobody(**_: Any) -> _TextToNobody:
    return _TextToNobody()


def _job_room_name(_room: Any) -> str:
    ctx = get_job_context(required=False)
    return ctx.job.room.name if ctx is not None and ctx.job.room.name else MOCK_ROOM_NAME


def release_mock_room() -> None:
    """Forget the calls recorded on the cached offline room, its participants included.

    Each job adds ~36 call records to it (kept for the process's life); ``reset_mock``
    reaches child mocks but not the participants livekit keeps in a plain dict.
    """
    for part in _mock_room_parts():
        part.reset_mock()


def mock_room_call_records() -> int:
    """How many calls the cached offline room holds (the soak benchmark watches it)."""
    return sum(len(part.mock_calls) for part in _mock_room_parts())


def _mock_room_parts() -> Iterator[mock.NonCallableMock]:
    room = mock_room.create_mock_room()
    yield room
    yield from room.remote_participants.values()


# -- an agent in another process (livekit's lk.agent.session over its TCP console) --------


class _AcceptedTransport(TcpSessionTransport):
    """livekit's TCP session transport over a connection the agent dialed.

    ``TcpSessionTransport`` only dials (``start`` opens the connection), but the console's
    agent dials too (``console --connect-addr``): the notebook listens and hands the accepted
    streams to the transport, whose reader, writer and loop are private. ``closed`` is called
    once the agent's side has hung up (the transport's reads end).
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        closed: Callable[[], None],
    ) -> None:
        host, port = writer.get_extra_info("peername")[:2]
        super().__init__(host, port)
        self._accepted = reader, writer
        self._on_closed = closed

    async def start(self) -> None:
        self._reader, self._writer = self._accepted
        self._loop = asyncio.get_running_loop()

    async def __anext__(self) -> Any:
        try:
            message = await super().__anext__()
        except StopAsyncIteration:
            self._on_closed()
            raise
        if message.HasField("audio_playback_flush"):
            # The agent's speech waits for its console to have played it (cli/tcp_console.py
            # ``_wait_for_playout``): a TTS agent's greeting, spoken before update_io turned
            # audio off, would wait forever. A console that plays nothing has played it all.
            finished = agent_pb.AgentSessionMessage.ConsoleIO.AudioPlaybackFinished()
            await self.send_message(agent_pb.AgentSessionMessage(audio_playback_finished=finished))
        return message


def accepted_transport(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, closed: Callable[[], None]
) -> TcpSessionTransport:
    """livekit's ``TcpSessionTransport`` over a connection the agent dialed (see above)."""
    return _AcceptedTransport(reader, writer, closed)


def reported_run_result(
    user_input: str | None, items: list[llm.ChatItem], agent: Callable[[str], Any]
) -> RunResult[None]:
    """livekit's ``RunResult`` of a turn another process ran, from the items it reported
    (``run_input``'s response: the run's events, encoded; ``user_input`` None for what the
    agent said on its own, as ``start(capture_run=True)`` gives). livekit builds one only around a
    live session; here its events are added as the session adds them (``_item_added``,
    ``_agent_handoff``, ordered by creation time) and it is marked done. ``agent(id)`` gives
    the handoff's agents: the other process reports only their ids.
    """
    result: RunResult[None] = RunResult(user_input=user_input, output_type=None)
    for item in items:
        if isinstance(item, llm.AgentHandoff):
            old = agent(item.old_agent_id) if item.old_agent_id else None
            result._agent_handoff(item=item, old_agent=old, new_agent=agent(item.new_agent_id))
        else:
            result._item_added(item)
    result._mark_done()
    return result


# -- livekit's testing forms ---------------------------------------------------------------

ToolMocks = Mapping[type[Agent], Mapping[str, Callable[..., Any]]]
"""agent class -> tool name -> its mock, as ``mock_tools`` keeps them"""


def scoped_tool_mocks() -> ToolMocks:
    """The mocks ``with mock_tools(Agent, {...}):`` has set where this is called (a cell):
    livekit keeps them in a context variable that the task executing a tool reads, in its own
    context, which is the job's for a turn carried there, not the cell's."""
    mocks: ToolMocks = run_result._MockToolsContextVar.get({})
    return mocks


def enter_tool_mocks(context: contextvars.Context, mocks: ToolMocks) -> None:
    """``context`` (the job's copy a cell's turn is carried in) holds ``mocks`` over its own,
    as ``with mock_tools(...)`` entered there would (livekit's merge: a new dict, the inner
    block's agents over the outer's)."""

    def enter() -> None:
        held = run_result._MockToolsContextVar.get({})
        run_result._MockToolsContextVar.set({**held, **{a: dict(m) for a, m in mocks.items()}})

    context.run(enter)


def session_tool_mocks(session: object) -> ToolMocks:
    """The mocks ``mock_tools(Agent, {...}, session=session)`` has set for ``session``:
    livekit keeps them by session in a private weak mapping."""
    by_session: Any = run_result._SessionMockTools  # keyed by whatever `session=` was given
    mocks: ToolMocks = by_session.get(session, {})
    return mocks


# -- telemetry -----------------------------------------------------------------------------


def collect_no_garbage_while_sampling_stacks() -> None:
    """Have livekit's loop monitor sample a stalled loop's stack with the garbage collector
    paused. It samples with ``sys._current_frames()``, which (CPython 3.11's
    ``_PyThread_CurrentFrames``) holds the interpreter's thread-list lock while it makes frame
    objects; a collection there that frees a ``threading.local`` (google-genai's clients hold
    some, through tenacity) takes that lock again in ``local_clear``, and the process hangs for
    good with the GIL held: a CI run's main suite did, a job's loop stalled under load. One
    sample at a time (the collector's switch is global); idempotent, for the kernel's jobs and
    an ``AgentProcess``'s."""
    monitor: Any = loop_monitor.EventLoopMonitor
    sample = monitor._sample_loop_thread
    if getattr(sample, "collector_paused", False):
        return

    @functools.wraps(sample)
    def sampled(self: loop_monitor.EventLoopMonitor, lag: float) -> Any:
        with _sampling:
            collecting = gc.isenabled()
            gc.disable()
            try:
                return sample(self, lag)
            finally:
                if collecting:
                    gc.enable()

    sampled.collector_paused = True  # type: ignore[attr-defined]
    monitor._sample_loop_thread = sampled


_sampling = threading.Lock()
"""held for one loop monitor's stack sample: another's could switch the collector on in it"""


def livekit_tracer_provider() -> trace_api.TracerProvider:
    """The provider livekit's spans go to: ``set_tracer_provider`` sets it and livekit has no
    getter; until it is called this is OpenTelemetry's global (proxy) provider."""
    return telemetry_traces.tracer._tracer_provider


async def failed_activity_swap(session: AgentSession[Any]) -> BaseException | None:
    """The error of the session's latest activity swap (``update_agent``'s task), once it ends.

    livekit logs a swap that raises and never reads its task's error, so asyncio would report
    it "never retrieved" (in a notebook, red text under the cell): a race case that makes a
    swap fail reads it here, and has it as evidence."""
    task: asyncio.Task[None] | None = session._update_activity_atask
    if task is None:
        return None
    await asyncio.wait([task])
    return None if task.cancelled() else task.exception()
