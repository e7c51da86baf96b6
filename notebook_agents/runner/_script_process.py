"""An ``AgentProcess``'s script process: started through our launcher (it never outlives the
kernel), what it prints (kept, quoted by errors), its exit, and its end (by its PID).
"""

from __future__ import annotations

import asyncio
import contextlib
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
from pathlib import Path
from typing import IO, TYPE_CHECKING

from livekit.agents.voice.remote_session import RemoteSession

from ..emulator.server import PLACEHOLDER_KEY
from ._core import RunnerCore
from .errors import RunnerError

if TYPE_CHECKING:
    from ..emulator import Emulator

HOST = "127.0.0.1"
_LAUNCHER = str(Path(__file__).with_name("_agent_launcher.py"))
_CONSOLE = str(Path(__file__).with_name("_livekit_console.py"))
_OUTPUT_LINES = 15
"""how much of the agent's output an error quotes: its last lines (but DEBUG's and blank ones)"""
_OUTPUT_LINE_CHARS = 300
"""how much of one output line an error quotes (the rest is said to be cut): at most
``_OUTPUT_LINES`` of these, whatever the agent printed"""
_REPR_CHARS = 200
"""how much of the failure a ``repr`` quotes (its first line)"""
_DEBUG_LINE = re.compile(r"^\d\d:\d\d:\d\d(?:\.\d+)? DEBUG ")
"""a DEBUG record of livekit's console logging (time, level, logger, message)"""
_MAKES_SERVER = re.compile(r"\bAgentServer\(")
"""a script that makes an ``AgentServer``, which livekit's console runs"""
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
"""a terminal's control sequence (ECMA-48 CSI: colours, cursor moves)"""


class ScriptProcess(RunnerCore[RemoteSession]):
    """The agent's script in a process of its own (none when attaching to one started by
    hand), and the sockets it dials."""

    def _init_script_process(
        self,
        script: Path | None,
        emulator: Emulator | None,
        env: dict[str, str],
        python: str | None,
    ) -> None:
        self.script = script
        self.python = python or sys.executable
        self.address: tuple[str, int] | None = None
        """where the notebook listens for the agent to dial (until it has)"""
        self.process: subprocess.Popen[bytes] | None = None
        """the process this started (None when attaching to one started by hand)"""
        self._lifeline: io.FileIO | None = None
        """the only write end of the pipe whose closing ends the agent's process group"""
        self._emulator = emulator
        self._given_env = env
        self._emulator_env: dict[str, str] = {}
        """where the emulator is, read at start (it may have moved since)"""
        self._output: IO[bytes] | None = None
        """what the process prints, in a file already unlinked: nothing is left behind"""
        self._kept_output = ""
        self._listener: socket.socket | None = None
        self._spans_listener: socket.socket | None = None
        """where the script's process sends livekit's spans (``_livekit_console``)"""

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
