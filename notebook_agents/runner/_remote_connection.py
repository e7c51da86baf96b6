"""An ``AgentProcess``'s connection, on a thread and loop of its own: the agent dials (the
notebook listens on 127.0.0.1 until it has), answers livekit's ``lk.agent.session`` protocol
(``RemoteSession``), reports its session (into the trace) and sends livekit's spans; its
greeting is found out from both (``_remote_greeting``), and its end (a hang-up, its process's
exit, an unrecoverable error before it greeted) says why, in livekit's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import signal
import threading
from typing import Any

from aiohttp import web
from google.protobuf.message import DecodeError
from livekit.agents import Agent, RunResult, llm
from livekit.agents import __version__ as LIVEKIT_VERSION
from livekit.agents.voice.remote_session import RemoteSession
from livekit.protocol.agent_pb import agent_session as agent_pb
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from .. import _livekit_internals as livekit
from ..trace import TraceEvent
from ..trace.otlp import spans_of_otlp
from ..trace.remote import RemoteReader, reported_error_text
from ..trace.remote_items import chat_item
from ._core import RunnerState, fails_turn
from ._livekit_console import AGENTS_PATH, MARKS_SCOPE, SPANS_PATH
from ._remote_greeting import GreetingWatch
from ._script_process import ScriptProcess, _exit_reason
from .errors import RunnerError

_OTLP_ACCEPTED = ExportTraceServiceResponse().SerializeToString()
_EXIT_AFTER_HANG_UP_S = 2.0
"""how long a hang-up waits for the agent's process to exit, to say why by its exit"""


@functools.cache
def remote_agent_class() -> type[Agent]:
    """``RemoteAgent``, made on first use: the package defines no ``Agent`` class at import,
    so a user's agents never meet one of ours by name."""

    class RemoteAgent(Agent):
        """An agent of the other process, in a ``RunResult``'s handoff: the protocol reports
        only its ``id`` (livekit's default is the class name in snake_case)."""

        def __init__(self, agent_id: str) -> None:
            super().__init__(instructions="", id=agent_id)

        def __repr__(self) -> str:
            return f"RemoteAgent({self.id!r})"

    RemoteAgent.__module__, RemoteAgent.__qualname__ = "notebook_agents.runner", "RemoteAgent"
    return RemoteAgent


class RemoteConnection(ScriptProcess):
    """The connection to the agent, its reports (the greeting among them) and its end."""

    def _init_remote_connection(self, greets: bool | None) -> None:
        self.session: RemoteSession | None = None
        self.greets = greets
        """True: wait for a greeting; False: none to wait for; None: found out"""
        self._agent_classes: dict[str, str] = {}
        """each agent's class (``module:qualname``) by its id, as the agent's process says"""
        # attached now: a span may tell of a hook that raised before the agent has dialed
        self._reader = self.trace.attach_reader(RemoteReader(self._agent_classes))
        self._greeting: RunResult[None] | None = None
        """what the agent said on its own as it started, once it is over"""
        self._greeting_ended_at = 0.0
        """when it was over, on the trace's clock"""
        self._greeting_watch = GreetingWatch(greets, self._greeting_said)
        self._span_receiver: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._agents: dict[str, Agent] = {}
        self._stopping = False
        self._connecting: asyncio.Task[None] | None = None
        self._exited: asyncio.Future[int] | None = None  # on the connection's loop
        self._hanging_up: asyncio.Task[None] | None = None
        """finds out why the agent hung up (did its process exit?)"""

    def _serve(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _connect(self) -> None:
        self._connecting = asyncio.current_task()
        self._job_began()
        self.trace.subscribe(self._on_reported_problem)  # delivered on this loop
        self._exited = self._exit_of_process()
        try:
            reader, writer = await self._dialed(self._exited)
            transport = livekit.accepted_transport(reader, writer, self._hung_up_soon)
            self.session = remote = RemoteSession(transport)
            self._reader.attach(remote)  # before the first report is read
            remote.on("conversation_item_added", self._on_greeting_item)
            remote.on("agent_state_changed", self._on_greeting_state)
            await remote.start()
            await self._handshake(remote)
            if self.greets is False:
                # reports arrive in order: the start's (its first handoff) came before these
                self._greeting_watch.end()
        except Exception as e:
            self._fail(e)
            # nothing half-started is left, even if nobody awaits ready()
            if self.session is not None:
                await self.session.aclose()
            await asyncio.get_running_loop().run_in_executor(None, self._end_process)
            return
        self._became_ready(remote)

    async def _receive_spans(self) -> None:
        """Take livekit's spans from the script's process into the trace, as the notebook
        runner captures the kernel's: its turns and handoffs split into phases."""
        assert self._spans_listener is not None
        app = web.Application()
        app.router.add_post(SPANS_PATH, self._on_spans)
        app.router.add_post(AGENTS_PATH, self._on_agent_class)
        self._span_receiver = receiver = web.AppRunner(app, access_log=None)
        await receiver.setup()
        await web.SockSite(receiver, self._spans_listener).start()

    async def _on_spans(self, request: web.Request) -> web.Response:
        try:
            spans = spans_of_otlp(await request.read(), self.trace.started_at)
        except DecodeError:
            raise web.HTTPBadRequest(text="send an OTLP ExportTraceServiceRequest") from None
        for span in spans:
            if span.scope != MARKS_SCOPE:  # the marks are for the greeting's watch only
                self.trace._add_span(span)
                self._reader.span_ended(span)
            self._greeting_watch.span_ended(span)
        return web.Response(body=_OTLP_ACCEPTED, content_type="application/x-protobuf")

    async def _on_agent_class(self, request: web.Request) -> web.Response:
        """An agent's class, as it starts (``_livekit_console``): the trace names it so."""
        try:
            said = json.loads(await request.read())
        except ValueError:
            said = None
        if not (
            isinstance(said, dict)
            and isinstance(said.get("id"), str)
            and isinstance(said.get("class"), str)
        ):
            raise web.HTTPBadRequest(text='send {"id": "...", "class": "module:qualname"}')
        self._agent_classes[said["id"]] = said["class"]
        return web.Response()

    async def _dialed(
        self, exited: asyncio.Future[int] | None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The agent's connection: the first to dial; then nothing listens any more."""
        assert self._listener is not None
        loop = asyncio.get_running_loop()
        dialed: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]
        dialed = loop.create_future()

        def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if dialed.done():
                writer.close()
            else:
                dialed.set_result((reader, writer))

        server = await asyncio.start_server(accept, sock=self._listener)
        waits: set[asyncio.Future[Any]] = {dialed}
        if exited is not None:
            waits.add(exited)
        try:
            done, _ = await asyncio.wait(
                waits, timeout=self.start_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            server.close()  # closes the listening socket too
            self._listener = None
        if dialed in done:
            if exited is not None:
                exited.add_done_callback(self._process_exited)
            return dialed.result()
        if exited is not None and exited in done:
            raise RunnerError(
                f"{_exit_reason(exited.result())} before it dialed the notebook; "
                f"fix what its output says and {self._start_again}:"
                f"\n{self._output_tail()}"
            )
        if self.process is not None:
            raise RunnerError(
                f"the agent process did not dial the notebook within {self.start_timeout:.0f} s: "
                "it dials when its session starts; does its entrypoint call "
                f"`await session.start(...)`? Its output:\n{self._output_tail()}"
            )
        raise RunnerError(
            f"no agent dialed within {self.start_timeout:g} s. Check the output of the command "
            "you started it with: a crash there (such as a missing API key) means it never "
            f"dials. Start it with\n  {self.command()}"
        )

    async def _handshake(self, remote: RemoteSession) -> None:
        """The agent answers, speaks a protocol we know, and its audio is off."""
        try:
            await remote.wait_for_ready(timeout=self.start_timeout)
            info = await remote.get_framework_info()
        except (TimeoutError, RuntimeError) as e:
            raise RunnerError(
                f"the process that dialed does not answer livekit's lk.agent.session protocol "
                f"({e}): start the agent with `python -m livekit.agents console`"
            ) from None
        _check_protocol(info.sdk, info.sdk_version)
        await remote.update_io(input_audio_enabled=False, output_audio_enabled=False)

    # -- the greeting, from the reports -----------------------------------------------------

    def _on_greeting_item(self, ev: agent_pb.AgentSessionEvent) -> None:
        item = chat_item(ev.conversation_item_added.item)
        if item is not None and not isinstance(item, llm.AgentConfigUpdate):
            self._greeting_watch.item_added(item)

    def _on_greeting_state(self, ev: agent_pb.AgentSessionEvent) -> None:
        state = agent_pb.AgentState.Name(ev.agent_state_changed.new_state)
        self._greeting_watch.state_changed(state.removeprefix("AS_").lower())

    def _greeting_said(self) -> None:
        if self._greeting is None:
            items = self._greeting_watch.items
            self._greeting = livekit.reported_run_result(None, items, self._agent)
            self._greeting_ended_at = self.trace.now()
        super()._greeting_said()

    # -- its end -----------------------------------------------------------------------------

    def _process_exited(self, exited: asyncio.Future[int]) -> None:
        """A process that exits ends the call (its state says so, and its trace). Killed with
        SIGKILL, nothing it printed says why: none of it is quoted."""
        code = exited.result()
        self._gone(_exit_reason(code), quote_output=code != -signal.SIGKILL)

    def _hung_up_soon(self) -> None:
        """The agent hung up. A process that dies hangs up as it goes: its exit, if it comes
        soon, says why; else it closed the connection and runs on."""
        if self._stopping:
            return
        exited = self._exited
        if exited is None:
            self._gone("the agent closed the connection")
            return
        self._hanging_up = asyncio.get_running_loop().create_task(self._why_hung_up(exited))

    async def _why_hung_up(self, exited: asyncio.Future[int]) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), _EXIT_AFTER_HANG_UP_S)
        if not exited.done():  # else its exit has said why
            self._gone("the agent closed the connection (its process runs on)")

    def _on_reported_problem(self, event: TraceEvent) -> None:
        """An unrecoverable error before the greeting: the greeting will not come (livekit
        closes the session at a realtime model's first, and retries no reply), and turns wait
        for it. Said in livekit's words (the exception's), the agent's output quoted after."""
        data = event.data
        if (
            self._greeting is not None
            or event.kind != "error"
            or data["recoverable"]
            or not fails_turn(event, spoken=False)
        ):
            return
        what = _FAILING_PARTS.get(data["source"], "session")
        self._gone(
            f"the agent's {what} failed before it greeted ({data['type']}, not recoverable)",
            said=reported_error_text(data["message"]),
        )

    def _gone(self, why: str, *, quote_output: bool = True, said: str = "") -> None:
        """The call has ended, ``why`` (and what livekit ``said`` of it), the agent's output
        quoted after."""
        if self._stopping or self.state not in (RunnerState.STARTING, RunnerState.RUNNING):
            return
        tail = self._output_tail() if self.process is not None and quote_output else ""
        starting = self.state is RunnerState.STARTING
        if starting:
            why = f"{why} before it was ready"
        if said:
            why = f"{why}: {said}"
        if starting:
            quoted = (f"\n{tail}" if said else f":\n{tail}") if tail else ""
            self._fail(RunnerError(why + quoted))
            return
        if self._end(RunnerState.FAILED, why, tail):
            self.trace.record_closed("error", why)

    async def _hang_up(self) -> None:
        if self._hanging_up is not None:
            self._hanging_up.cancel()  # stopped before the agent's exit said why it hung up
        if self._span_receiver is not None:
            await self._span_receiver.cleanup()
        connecting = self._connecting
        if connecting is not None and not connecting.done():
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await connecting
        if self.session is not None:
            self.trace.record_closed("user_initiated")
            await self.session.aclose()

    def _agent(self, agent_id: str) -> Agent:
        if agent_id not in self._agents:
            self._agents[agent_id] = remote_agent_class()(agent_id)  # type: ignore[call-arg]
        return self._agents[agent_id]


def _check_protocol(sdk: str, version: str) -> None:
    """The agent's livekit speaks the protocol ours does: the Python SDK, same major version."""
    ours = LIVEKIT_VERSION.split(".")
    if sdk != "python" or version.split(".")[0] != ours[0]:
        raise RunnerError(
            f"the agent speaks lk.agent.session as livekit-agents {version or '?'} "
            f"({sdk or 'unknown SDK'}), a protocol version this notebook does not know (it "
            f"speaks livekit-agents {LIVEKIT_VERSION}'s): run the agent with "
            f"livekit-agents~={'.'.join(ours[:2])}.0 in Python"
        )


_FAILING_PARTS = {
    "realtime": "realtime model",
    "llm": "LLM",
    "stt": "speech recognition",
    "tts": "speech synthesis",
}
"""an error's source in the trace, as a failure names it"""
