"""AgentProcess: an agent script run as it is, in another process, driven from the notebook.

The script runs under livekit's console transport (``python -m livekit.agents console
agent.py --connect-addr HOST:PORT``): its session reports over livekit's ``lk.agent.session``
protocol (``SessionHost``), and the notebook drives it with livekit's own client
(``RemoteSession``). The agent dials, so the notebook listens (127.0.0.1, a free port) and
stops listening once it has dialed. Audio is turned off (``update_io``; with it on, a typed
turn's reply waits on a speaker nobody plays and is lost). The reports fill a ``Trace`` as an
in-kernel session's do; turns return livekit's ``RunResult`` built from what the agent reports.
The connection lives on a thread and loop of its own, as the notebook runner's server does.

A script this starts runs through two small modules of ours: ``_agent_launcher`` (the process
never outlives the kernel) and ``_livekit_console`` (``python -m livekit.agents`` with livekit's
spans sent to a receiver here, so the trace splits its turns and handoffs into phases as a
kernel session's). An agent started by hand from the printed command sends no spans.

The greeting (what the agent says on its own as its session starts, its ``on_enter`` reply)
is awaited before a turn, as the notebook runner does: livekit's ``run_input`` interrupts only
speech already playing, so a turn sent while a realtime greeting is still being generated goes
unanswered. The protocol says nothing while a realtime reply is generated, so the greeting is
over once the agent has reported a reply and is ``listening`` again; an agent that does not
greet says so with ``greets=False`` (nothing to wait for).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import io
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from aiohttp import web
from google.protobuf.message import DecodeError
from livekit.agents import Agent, RunResult, llm
from livekit.agents import __version__ as LIVEKIT_VERSION
from livekit.agents.voice.remote_session import RemoteSession
from livekit.protocol.agent_pb import agent_session as agent_pb
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from typing_extensions import Self

from .. import _livekit_internals as livekit
from ..emulator.server import PLACEHOLDER_KEY
from ..trace import Trace, TraceEvent
from ..trace.otlp import spans_of_otlp
from ..trace.remote_items import chat_item, chat_items
from ._core import RunnerCore, RunnerState, fails_turn, reply_text
from ._livekit_console import SPANS_PATH
from .errors import RunnerError, TurnError

if TYPE_CHECKING:
    from ..emulator import Emulator

HOST = "127.0.0.1"
_LAUNCHER = str(Path(__file__).with_name("_agent_launcher.py"))
_CONSOLE = str(Path(__file__).with_name("_livekit_console.py"))
_OTLP_ACCEPTED = ExportTraceServiceResponse().SerializeToString()
_OUTPUT_LINES = 15
"""how much of the agent's output an error quotes: its last lines (but DEBUG's and blank ones)"""
_OUTPUT_LINE_CHARS = 300
"""how much of one output line an error quotes (the rest is said to be cut): at most
``_OUTPUT_LINES`` of these, whatever the agent printed"""
_REPR_CHARS = 200
"""how much of the failure a ``repr`` quotes (its first line)"""
_EXIT_AFTER_HANG_UP_S = 2.0
"""how long a hang-up waits for the agent's process to exit, to say why by its exit"""
_DEBUG_LINE = re.compile(r"^\d\d:\d\d:\d\d(?:\.\d+)? DEBUG ")
"""a DEBUG record of livekit's console logging (time, level, logger, message)"""
_MAKES_SERVER = re.compile(r"\bAgentServer\(")
"""a script that makes an ``AgentServer``, which livekit's console runs"""
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
"""a terminal's control sequence (ECMA-48 CSI: colours, cursor moves)"""


class RemoteAgent(Agent):
    """An agent of the other process, in a ``RunResult``'s handoff: the protocol reports only
    its ``id`` (livekit's default is the class name in snake_case)."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(instructions="", id=agent_id)

    def __repr__(self) -> str:
        return f"RemoteAgent({self.id!r})"


class AgentProcess(RunnerCore[RemoteSession]):
    """An agent script, unchanged, in another process; typed turns and its trace from here.

    ::

        agent = AgentProcess("agent.py", emulator=emu).start()
        await agent.ready()
        result = await agent.run("hello")
        result.expect.next_event().is_message(role="assistant")
        agent.stop()

    ``emulator=`` points the script's models at it (``OPENAI_BASE_URL``/``OPENAI_API_KEY``,
    which livekit's OpenAI plugin reads, ``LIVEKIT_INFERENCE_URL`` for LiveKit Inference's
    LLM, and ``GOOGLE_GEMINI_BASE_URL``/``SSL_CERT_FILE``/``GOOGLE_API_KEY`` for the google
    plugin's Gemini Live: ``GeminiEndpoint.environment()``). Without a script, ``start()``
    listens and prints the command that attaches an agent started by hand. ``stop()`` ends
    only the process this started. ``greets=False`` for an agent that says nothing until
    spoken to (turns wait for its greeting otherwise).
    """

    agent_base: ClassVar[type[Any]] = Agent
    """its agents are livekit's (a ``RunResult``'s handoffs name them as ``RemoteAgent``)"""
    noun = "AgentProcess"
    handle = "agent"
    failed_as = "the connection to the agent failed"

    def __init__(
        self,
        script: str | os.PathLike[str] | None = None,
        *,
        emulator: Emulator | None = None,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        greets: bool = True,
    ) -> None:
        self.script = Path(script) if script is not None else None
        if self.script is not None and not self.script.is_file():
            raise RunnerError(
                f"no agent script at {self.script} (from {Path.cwd()}): give the path of the "
                "file that defines your AgentServer"
            )
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.python = python or sys.executable
        self.trace = Trace()
        self.address: tuple[str, int] | None = None
        """where the notebook listens for the agent to dial (until it has)"""
        self.process: subprocess.Popen[bytes] | None = None
        """the process this started (None when attaching to one started by hand)"""
        self._lifeline: io.FileIO | None = None
        """the only write end of the pipe whose closing ends the agent's process group"""
        self.session: RemoteSession | None = None
        self.greets = greets
        self._greeting: RunResult[None] | None = None
        """what the agent said on its own as it started, once it is over"""
        self._greeting_items: list[llm.ChatItem] = []
        self._agent_state = "initializing"
        self._emulator = emulator
        self._given_env = dict(env or {})
        self._emulator_env: dict[str, str] = {}
        """where the emulator is, read at start (it may have moved since)"""
        self._output: IO[bytes] | None = None
        """what the process prints, in a file already unlinked: nothing is left behind"""
        self._kept_output = ""
        self._listener: socket.socket | None = None
        self._spans_listener: socket.socket | None = None
        """where the script's process sends livekit's spans (``_livekit_console``)"""
        self._span_receiver: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._agents: dict[str, RemoteAgent] = {}
        self._stopping = False
        self._connecting: asyncio.Task[None] | None = None
        self._exited: asyncio.Future[int] | None = None  # on the connection's loop
        self._hanging_up: asyncio.Task[None] | None = None
        """finds out why the agent hung up (did its process exit?)"""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Listen, start the script (or print how to), and return at once; ``ready()`` waits
        for it to dial."""
        if not self._admit_start():
            return self
        try:
            self._listener = socket.create_server((HOST, 0))
            self.address = (HOST, self._listener.getsockname()[1])
            if self.script is not None:
                self._spans_listener = socket.create_server((HOST, 0))
                self._spawn()
            else:
                print(f"Start your agent with:\n  {self.command()}")
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._serve, name="notebook-agents-process", daemon=True
            )
            self._thread.start()
            if self._spans_listener is not None:
                asyncio.run_coroutine_threadsafe(self._receive_spans(), self._loop)
            asyncio.run_coroutine_threadsafe(self._connect(), self._loop)
        except BaseException:
            self.stop()
            raise
        return self

    def _refuse_start(self) -> None:
        if self._emulator is not None:  # stopped since (it raises so), or moved
            self._emulator_env = _emulator_env(self._emulator)

    def command(self, script: str | None = None) -> str:
        """The shell command that starts ``script`` attached to this notebook, as printed: this
        environment's Python, and with an emulator its endpoints and placeholder keys (never a
        key of yours). Without ``script``: this one's, else the one script in the current folder
        that makes an ``AgentServer``, else ``agent.py`` for yours."""
        if self.address is None:
            raise RunnerError("command() needs a started AgentProcess: call start() first")
        shown = self._emulator_env.items()
        prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in shown)
        where = f"{self.address[0]}:{self.address[1]}"
        target = shlex.quote(str(script or self.script or _agent_script_here()))
        python = shlex.quote(self.python)
        return f"{prefix}{python} -m livekit.agents console {target} --connect-addr {where}"

    async def ready(self, timeout: float | None = None) -> Self:
        """Wait until the agent has dialed and answers; raise why it did not (stopped then).
        Dialing and answering each have ``start_timeout``; ``timeout`` bounds the whole wait.

        Returns this ``AgentProcess``: livekit's ``RemoteSession`` (``agent.session``) lives on
        the connection's own loop; talk to it through ``run``, ``send_text`` and ``history``."""
        if self.state is RunnerState.NEW:
            raise RunnerError("ready() needs a started AgentProcess: call start() first")
        connected = asyncio.wrap_future(self._ready)
        # an outcome after a timeout here is read: no "exception was never retrieved"
        connected.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            await asyncio.wait_for(asyncio.shield(connected), timeout)
            return self
        except asyncio.TimeoutError:
            error = RunnerError(f"the agent did not answer within {timeout:.0f} s")
            self._fail(error)
            self.stop()
            raise error from None
        except RunnerError:
            self.stop()
            raise

    def stop(self) -> None:
        """Hang up, end the process this started (by its PID: SIGTERM, SIGKILL after
        ``stop_timeout``) and stop listening; safe to call again."""
        if self.state in (RunnerState.NEW, RunnerState.STOPPED) or self._stopping:
            return
        self._stopping = True
        self.state = RunnerState.STOPPING
        self._fail(RunnerError(self._stopped_message()))
        loop, thread = self._loop, self._thread
        try:
            if loop is not None and thread is not None and thread.is_alive():
                closing = asyncio.run_coroutine_threadsafe(self._hang_up(), loop)
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    closing.result(self.stop_timeout)
        finally:
            self._end_process()
            for listener in (self._listener, self._spans_listener):
                if listener is not None:  # (closed already once served)
                    listener.close()
            if loop is not None and thread is not None:
                with contextlib.suppress(RuntimeError):  # its loop already stopped
                    loop.call_soon_threadsafe(loop.stop)
                thread.join(self.stop_timeout)
            self.trace.detach()
            if self._output is not None:
                self._kept_output = self.output  # all of it, once the file is gone
                self._output.close()
                self._output = None
            self.state = RunnerState.STOPPED
            self._unregister()

    def __repr__(self) -> str:
        what = str(self.script) if self.script is not None else "attached"
        pid = f" pid={self.process.pid}" if self.process is not None else ""
        why = ""
        if self.failure is not None:  # its first line: the rest quotes the agent's output
            first_line = str(self.failure).split("\n", 1)[0].rstrip(":")
            why = f": {_cut(first_line, _REPR_CHARS)}"
        return f"<AgentProcess {self.state.value} {what}{pid}{why}>"

    @property
    def output(self) -> str:
        """What the process this started has printed so far (stdout and stderr), also after
        ``stop()``."""
        output = self._output
        try:
            if output is None:
                return self._kept_output
            printed = os.pread(output.fileno(), os.fstat(output.fileno()).st_size, 0)
        except ValueError:  # stop() closed it just now, having kept all of it
            return self._kept_output
        # livekit's console logging colours its lines even into a file
        return _ANSI_ESCAPE.sub("", printed.decode(errors="replace"))

    # -- turns -----------------------------------------------------------------------------

    async def run(
        self, user_input: str, *, output_type: type[Any] | None = None, timeout: float = 30.0
    ) -> RunResult[Any]:
        """One typed user turn: livekit's ``RunResult`` of it, built from the events the agent
        reports (``result.expect`` checks them as in a livekit eval). Raises ``TurnError``
        when the turn went wrong, ``RunnerError`` when the agent cannot take turns."""
        if output_type is not None:
            raise RunnerError(
                "run(output_type=...) needs the agent in the kernel (NotebookRunner): the "
                "protocol reports a turn's items, not its typed output"
            )
        return await super().run(user_input, timeout=timeout)

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        started = self.trace.now()
        try:
            reply = await self._turn(text, timeout)
        except RunnerError:
            raise
        except RuntimeError as e:  # what the agent reported (its session's run raised)
            self._require_turns("the turn")
            raise TurnError("", self._turn_errors(started, None, spoken=False), e) from e
        result = livekit.reported_run_result(text, chat_items(reply.items), self._agent)
        if errors := self._turn_errors(started, None, spoken=False):
            raise TurnError(reply_text(result), errors)
        return result

    def _late(self, timeout: float, started: float) -> Callable[[], str]:
        def why() -> str:
            if self._greeting is None:
                return self._not_greeted(timeout)
            return f"the agent did not answer within {timeout:.0f} s"

        return why

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]:
        """What the agent said on its own as its session started (its ``on_enter`` reply),
        once said: livekit's ``RunResult`` built from what it reported, as ``run``'s are (the
        first agent's handoff, then its reply), for ``expect``."""
        if self._greeting is None:
            said = self._in_job(self._greeting_over(), "greeting()")
            late = functools.partial(self._not_greeted, timeout)
            await self._from_job(said, "greeting()", timeout, "the greeting itself goes on", late)
            self._require_turns("greeting()")  # the connection ended instead
        assert self._greeting is not None
        return self._greeting

    async def history(self) -> list[llm.ChatItem]:
        """The agent's own ``session.history``, as it reports it (``get_chat_history``)."""
        session = self.session
        self._require_turns("history()")
        assert session is not None
        asked = self._in_job(session.get_chat_history(), "history()")
        return chat_items((await asyncio.wrap_future(asked)).items)

    async def _turn(self, text: str, timeout: float) -> agent_pb.SessionResponse.RunInputResponse:
        assert self._turn_lock is not None and self.session is not None
        async with self._turn_lock:  # the agent's AgentSession.run cannot nest
            try:
                await asyncio.wait_for(self._greeting_over(), timeout)
            except asyncio.TimeoutError:
                raise RunnerError(self._not_greeted(timeout)) from None
            try:
                return await self.session.run(text, timeout=timeout)
            except RuntimeError:  # the transport closed: the caller says why, once known
                if self._hanging_up is not None:
                    await self._hanging_up
                raise

    def _not_greeted(self, timeout: float) -> str:
        return (
            f"the agent did not greet within {timeout:.0f} s, and turns wait for its greeting: "
            "if it says nothing until spoken to (no reply in its on_enter), make it "
            "AgentProcess(..., greets=False)"
        )

    def _agent(self, agent_id: str) -> RemoteAgent:
        return self._agents.setdefault(agent_id, RemoteAgent(agent_id))

    # -- the connection, on its own thread -------------------------------------------------

    def _spawn(self) -> None:
        """Start the script through our launcher, which becomes the agent (same PID) and leaves
        a watcher that ends the agent's process group once this kernel has gone, however it
        ended: the watcher holds the read end of a pipe whose write end only this process has
        (``_agent_launcher`` says why this way)."""
        assert self.address is not None and self.script is not None
        # closed by stop(), after the process is gone
        self._output = tempfile.TemporaryFile(prefix="agent-process-")  # noqa: SIM115
        where = f"{self.address[0]}:{self.address[1]}"
        assert self._spans_listener is not None
        spans_to = f"{HOST}:{self._spans_listener.getsockname()[1]}"
        # `python -m livekit.agents console`, its spans sent here
        agent = [self.python, _CONSOLE, spans_to, "console", str(self.script)]
        lifeline, kept = os.pipe()  # neither inheritable: only the launcher gets its end
        launcher = [sys.executable, "-I", "-S", _LAUNCHER, str(lifeline)]
        # unbuffered: an error quotes what it printed up to then
        env = {"PYTHONUNBUFFERED": "1", **os.environ, **self._emulator_env, **self._given_env}
        try:
            self.process = subprocess.Popen(
                [*launcher, *agent, "--connect-addr", where],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._output,
                stderr=subprocess.STDOUT,
                pass_fds=(lifeline,),
                # its own session and group, which the watcher ends; and a kernel interrupt
                # (SIGINT to the kernel's group) is not the agent's
                start_new_session=True,
            )
        except BaseException:
            os.close(kept)
            raise
        else:
            self._lifeline = io.FileIO(kept, "w")
        finally:
            os.close(lifeline)

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
        self._exited = self._exit_of_process()
        try:
            reader, writer = await self._dialed(self._exited)
            transport = livekit.accepted_transport(reader, writer, self._hung_up_soon)
            self.session = remote = RemoteSession(transport)
            self.trace.attach_remote(remote)  # before the first report is read
            self.trace.subscribe(self._on_reported_problem)  # delivered on this loop
            remote.on("conversation_item_added", self._on_greeting_item)
            remote.on("agent_state_changed", self._on_greeting_state)
            await remote.start()
            await self._handshake(remote)
            if not self.greets:
                # reports arrive in order: the start's (its first handoff) came before these
                self._greeting_said()
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
        self._span_receiver = receiver = web.AppRunner(app, access_log=None)
        await receiver.setup()
        await web.SockSite(receiver, self._spans_listener).start()

    async def _on_spans(self, request: web.Request) -> web.Response:
        try:
            spans = spans_of_otlp(await request.read(), self.trace.started_at)
        except DecodeError:
            raise web.HTTPBadRequest(text="send an OTLP ExportTraceServiceRequest") from None
        for span in spans:
            self.trace._add_span(span)
        return web.Response(body=_OTLP_ACCEPTED, content_type="application/x-protobuf")

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
                f"fix what its output says and {self.start_again}:"
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
        if self._greeting is not None:
            return
        item = chat_item(ev.conversation_item_added.item)
        if item is not None and not isinstance(item, llm.AgentConfigUpdate):
            self._greeting_items.append(item)
        self._greeting_maybe_over()

    def _on_greeting_state(self, ev: agent_pb.AgentSessionEvent) -> None:
        self._agent_state = agent_pb.AgentState.Name(ev.agent_state_changed.new_state)
        self._greeting_maybe_over()

    def _greeting_maybe_over(self) -> None:
        """Over once the agent has replied and is listening again (not still speaking, nor
        thinking: a tool its reply called runs)."""
        replied = any(
            isinstance(i, llm.ChatMessage) and i.role == "assistant" for i in self._greeting_items
        )
        if self.greets and replied and self._agent_state == "AS_LISTENING":
            self._greeting_said()

    def _greeting_said(self) -> None:
        if self._greeting is None:
            items = self._greeting_items
            self._greeting = livekit.reported_run_result(None, items, self._agent)
        super()._greeting_said()

    def _exit_of_process(self) -> asyncio.Future[int] | None:
        """The process's exit code, once it has exited, waited for on a daemon thread: an
        executor's worker blocked in ``wait()`` would hold the interpreter's exit (it joins
        them before running ``atexit``, which stops the agent) for as long as the agent runs."""
        process = self.process
        if process is None:
            return None
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[int] = loop.create_future()

        def wait() -> None:
            code = process.wait()
            with contextlib.suppress(RuntimeError):  # the loop has stopped: nobody waits
                loop.call_soon_threadsafe(exited.set_result, code)

        threading.Thread(target=wait, name="notebook-agents-process-exit", daemon=True).start()
        return exited

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
        for it. The agent's output (quoted) has the error's cause in livekit's words."""
        data = event.data
        if (
            self._greeting is not None
            or event.kind != "error"
            or data["recoverable"]
            or not fails_turn(event, spoken=False)
        ):
            return
        what = _FAILING_PARTS.get(data["source"], "session")
        self._gone(f"the agent's {what} failed before it greeted ({data['type']}, not recoverable)")

    def _gone(self, why: str, *, quote_output: bool = True) -> None:
        if self._stopping or self.state not in (RunnerState.STARTING, RunnerState.RUNNING):
            return
        tail = self._output_tail() if self.process is not None and quote_output else ""
        if self.state is RunnerState.STARTING:
            self._fail(RunnerError(f"{why} before it was ready" + (f":\n{tail}" if tail else "")))
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

    def _end_process(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()  # by PID: livekit's console shuts down on SIGTERM
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._lifeline is not None:
            self._lifeline.close()  # the watcher ends what the agent left (idempotent)

    def _output_tail(self) -> str:
        """The end of what the agent printed, as errors quote it: its last lines but blank and
        DEBUG ones (livekit's console logs at DEBUG), each cut to a readable length."""
        lines = [
            line
            for line in self.output.splitlines()
            if line.strip() and not _DEBUG_LINE.match(line)
        ]
        quoted = [_cut(line, _OUTPUT_LINE_CHARS) for line in lines[-_OUTPUT_LINES:]]
        return "\n".join(quoted) if quoted else "(no output)"


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


def _emulator_env(emulator: Emulator) -> dict[str, str]:
    """What points a script's models at ``emulator``: its endpoints, and placeholders whatever
    keys this kernel holds (none of them goes to the emulator)."""
    url = emulator.base_url()
    return {
        **emulator.openai_environment(),
        # LiveKit Inference: its LLM speaks chat completions, its STT and TTS the emulator serves;
        # its clients sign with these
        "LIVEKIT_INFERENCE_URL": url,
        "LIVEKIT_API_KEY": "notebook-agents",
        "LIVEKIT_API_SECRET": PLACEHOLDER_KEY,
        **_gemini_env(emulator),
    }


def _gemini_env(emulator: Emulator) -> dict[str, str]:
    """Gemini Live's variables (google-genai's base URL, the emulator's CA, a placeholder key),
    or none where the emulator cannot serve Gemini (no gemini extra: no Gemini script runs)."""
    from ..emulator import EmulatorError  # loaded already: the emulator is running

    try:
        return emulator.gemini.environment()
    except EmulatorError:
        return {}


_FAILING_PARTS = {
    "realtime": "realtime model",
    "llm": "LLM",
    "stt": "speech recognition",
    "tts": "speech synthesis",
}
"""an error's source in the trace, as a failure names it"""


def _exit_reason(code: int) -> str:
    """How the agent's process ended, as its exit status says (negative: the signal)."""
    if code >= 0:
        return f"the agent process exited with code {code}"
    try:
        return f"the agent process was killed ({signal.Signals(-code).name})"
    except ValueError:
        return f"the agent process was killed (signal {-code})"


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, saying how much more was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters cut)"


def _agent_script_here() -> str:
    """The script the printed command names: the one Python file in the current folder that
    makes an ``AgentServer`` (livekit's console runs it), else ``agent.py``, for yours."""
    found = []
    for path in sorted(Path.cwd().glob("*.py")):
        with contextlib.suppress(OSError):
            if _MAKES_SERVER.search(path.read_text(errors="replace")):
                found.append(path.name)
    return found[0] if len(found) == 1 else "agent.py"
