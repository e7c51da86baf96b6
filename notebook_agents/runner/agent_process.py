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
over once its speeches are done and their words reported; whether it greets at all is found
out (``_remote_greeting``), or said with ``greets=``. An error before or during the greeting
ends it at once: an unrecoverable one fails the call in livekit's words, and ``greeting()``
raises what went wrong as a turn's ``TurnError`` does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from livekit.agents import Agent
from typing_extensions import Self

from .. import _livekit_internals as livekit
from ..trace import Trace
from ._core import RunnerState
from ._remote_turns import RemoteTurns
from ._script_process import _REPR_CHARS, HOST, _cut
from .errors import RunnerError

if TYPE_CHECKING:
    from ..emulator import Emulator

__all__ = ["AgentProcess"]


class AgentProcess(RemoteTurns):
    """An agent script, unchanged, in another process; typed turns and its trace from here.

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
    only the process this started. Turns wait for the agent's greeting, and whether it greets
    is found out (from the speeches its session creates; an agent started by hand, which sends
    no spans, is taken not to greet once it has listened in silence for 2 s): ``greets=True``
    waits for a greeting however long it takes (within a turn's timeout), ``greets=False`` for
    none.
    """

    agent_base: ClassVar[type[Any]] = Agent
    """its agents are livekit's (a ``RunResult``'s handoffs name them as ``RemoteAgent``)"""
    _noun = "AgentProcess"
    _handle = "agent"
    _failed_as = "the connection to the agent failed"
    _mocks_elsewhere = (
        "livekit's mocks cannot reach an agent in another process: mock the tool in its "
        "script (`mock_tools(YourAgent, {...}, session=session)` in its entrypoint), or run "
        "its server in the kernel with NotebookRunner, where `with mock_tools(...)` mocks "
        "the turns inside"
    )

    def __init__(
        self,
        script: str | os.PathLike[str] | None = None,
        *,
        emulator: Emulator | None = None,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        greets: bool | None = None,
    ) -> None:
        script_path = Path(script) if script is not None else None
        if script_path is not None and not script_path.is_file():
            raise RunnerError(
                f"no agent script at {script_path} (from {Path.cwd()}): give the path of the "
                "file that defines your AgentServer"
            )
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.trace = Trace()
        self._init_script_process(script_path, emulator, dict(env or {}), python)
        self._init_remote_connection(greets)

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

    def _mocks_set(self) -> str:
        session = self.session
        if session is not None and any(livekit.session_tool_mocks(session).values()):
            return "`mock_tools(..., session=agent.session)`"
        return super()._mocks_set()

    def __repr__(self) -> str:
        what = str(self.script) if self.script is not None else "attached"
        pid = f" pid={self.process.pid}" if self.process is not None else ""
        why = ""
        if self.failure is not None:  # its first line: the rest quotes the agent's output
            first_line = str(self.failure).split("\n", 1)[0].rstrip(":")
            why = f": {_cut(first_line, _REPR_CHARS)}"
        return f"<AgentProcess {self.state.value} {what}{pid}{why}>"
