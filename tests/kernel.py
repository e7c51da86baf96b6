"""A real ipykernel for tests: run cells, start one without waiting, interrupt, shut down.

The kernel is this venv's python (a kernel spec written to a temporary directory, so no
installed spec or PATH lookup decides which interpreter runs), bound to 127.0.0.1, started
offline (no LiveKit credentials in its environment). Only the kernel this helper started is
ever signalled or shut down, through its own ``KernelManager``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from typing_extensions import Self

KERNEL_NAME = "notebook-agents-test"
REPO = Path(__file__).resolve().parents[1]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
OFFLINE_ENV_DROP = ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "OPENAI_API_KEY")


class KernelTimeout(AssertionError):
    """A cell did not finish (or show the awaited output) in time."""


class CellError(AssertionError):
    """A cell raised; the message carries the kernel's traceback."""


@dataclass
class Cell:
    """One execute request and everything the kernel sent back for it."""

    msg_id: str
    code: str
    stdout: str = ""
    stderr: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    result: str | None = None  # the last expression's text/plain, if any
    error: dict[str, Any] | None = None  # ename, evalue, traceback
    status: str | None = None  # the execute_reply's status: ok | error | aborted
    idle: bool = False
    reply: bool = False

    @property
    def done(self) -> bool:
        return self.idle and self.reply

    @property
    def traceback(self) -> str:
        if self.error is None:
            return ""
        return _ANSI.sub("", "\n".join(self.error.get("traceback", [])))


class Kernel:
    """A started ipykernel; ``run`` executes a cell and collects its iopub messages."""

    def __init__(self, cwd: str | None = None, env: dict[str, str] | None = None) -> None:
        self._spec_dir = tempfile.TemporaryDirectory(prefix="nbagents-kernelspec-")
        self._write_spec(Path(self._spec_dir.name))
        specs = KernelSpecManager(kernel_dirs=[self._spec_dir.name], ensure_native_kernel=False)
        self.manager = KernelManager(
            kernel_name=KERNEL_NAME, kernel_spec_manager=specs, ip="127.0.0.1"
        )
        self._cells: dict[str, Cell] = {}
        kernel_env = {k: v for k, v in (env or os.environ).items() if k not in OFFLINE_ENV_DROP}
        kernel_env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy's frozen-modules notice
        # the package is imported from this checkout (as the notebooks next to it do), unless
        # PYTHONPATH names another copy first
        paths = [*filter(None, [kernel_env.get("PYTHONPATH")]), str(REPO)]
        kernel_env["PYTHONPATH"] = os.pathsep.join(paths)
        try:
            self.manager.start_kernel(env=kernel_env, cwd=cwd or self._spec_dir.name)
            # made after start: it needs the kernel's ports
            self.client: BlockingKernelClient = self.manager.client()
            self.client.start_channels()
            self.client.wait_for_ready(timeout=60)
        except BaseException:
            self.shutdown()
            raise

    @staticmethod
    def _write_spec(root: Path) -> None:
        spec = root / KERNEL_NAME
        spec.mkdir()
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec_json = {"argv": argv, "display_name": "notebook-agents tests", "language": "python"}
        (spec / "kernel.json").write_text(json.dumps(spec_json))

    # -- cells -----------------------------------------------------------------------------

    def submit(self, code: str, cell_id: str | None = None) -> Cell:
        """Send a cell and return at once (the cell may still be queued or running).

        ``cell_id`` names the notebook cell, as JupyterLab does in the request's metadata.
        """
        content = dict(code=code, silent=False, store_history=False, user_expressions={},
                       allow_stdin=False, stop_on_error=True)  # fmt: skip
        request = self.client.session.msg("execute_request", content)
        if cell_id is not None:
            request["metadata"]["cellId"] = cell_id
        self.client.shell_channel.send(request)
        msg_id: str = request["header"]["msg_id"]
        cell = Cell(msg_id, code)
        self._cells[msg_id] = cell
        return cell

    def wait(self, cell: Cell, timeout: float = 30.0) -> Cell:
        """Collect ``cell``'s messages until the kernel is idle after it and has replied."""
        self.wait_until(lambda: cell.done, timeout, f"cell did not finish:\n{cell.code}")
        return cell

    def wait_output(self, cell: Cell, text: str, timeout: float = 30.0) -> None:
        """Wait until ``cell`` has printed ``text`` (to know it is running, not queued)."""
        self.wait_until(
            lambda: text in cell.stdout or cell.done, timeout, f"no {text!r} from:\n{cell.code}"
        )
        if text not in cell.stdout:
            raise CellError(f"cell finished without printing {text!r}:\n{cell.traceback}")

    def run(self, code: str, timeout: float = 30.0, cell_id: str | None = None) -> Cell:
        """Execute a cell and wait for it; errors are returned in ``Cell.error``, not raised."""
        return self.wait(self.submit(code, cell_id), timeout)

    def run_ok(self, code: str, timeout: float = 30.0, cell_id: str | None = None) -> Cell:
        """Execute a cell that must succeed; its traceback is the failure message otherwise."""
        cell = self.run(code, timeout, cell_id)
        if cell.error is not None or cell.status != "ok":
            raise CellError(f"cell failed ({cell.status}):\n{code}\n{cell.traceback}")
        return cell

    def eval(self, expression: str, timeout: float = 30.0) -> Any:
        """The JSON value of ``expression`` evaluated in the kernel (a cell of its own)."""
        cell = self.run_ok(f"__import__('json').dumps({expression})", timeout)
        assert cell.result is not None, f"no value from {expression!r}"
        return json.loads(ast.literal_eval(cell.result))

    # -- the kernel process ----------------------------------------------------------------

    def interrupt(self) -> None:
        # jupyter_client signals the kernel's process group: make sure it is the kernel's own
        assert os.getpgid(self.pid) == self.pid != os.getpgrp()
        self.manager.interrupt_kernel()

    def is_alive(self) -> bool:
        return bool(self.manager.is_alive())

    @property
    def pid(self) -> int:
        provisioner = self.manager.provisioner
        assert provisioner is not None and provisioner.process is not None  # type: ignore[attr-defined]
        return int(provisioner.process.pid)  # type: ignore[attr-defined]

    def shutdown(self) -> None:
        client = getattr(self, "client", None)  # None if the kernel never started
        if client is not None:
            with contextlib.suppress(Exception):  # channels may be half-closed
                client.stop_channels()
        if self.manager.has_kernel:
            self.manager.shutdown_kernel(now=False)
        self._spec_dir.cleanup()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()

    # -- messages --------------------------------------------------------------------------

    def wait_until(
        self, condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.5
    ) -> None:
        """Handle kernel messages until ``condition()`` holds, checking at least every ``poll``."""
        deadline = time.monotonic() + timeout
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                alive = self.is_alive()
                raise KernelTimeout(f"{what}\n(after {timeout:.0f} s; kernel alive: {alive})")
            self._pump(min(left, poll))

    def _pump(self, timeout: float) -> None:
        """Handle what arrives on iopub or shell, waiting up to ``timeout`` for either."""
        shell, iopub = self.client.shell_channel, self.client.iopub_channel
        poller = zmq.Poller()
        poller.register(shell.socket, zmq.POLLIN)
        poller.register(iopub.socket, zmq.POLLIN)
        ready = dict(poller.poll(int(timeout * 1000)))
        if shell.socket in ready:
            self._on_shell(shell.get_msg(timeout=0))
        if iopub.socket in ready:
            self._on_iopub(iopub.get_msg(timeout=0))

    def _on_shell(self, message: dict[str, Any]) -> None:
        cell = self._cells.get(message["parent_header"].get("msg_id", ""))
        if cell is not None and message["msg_type"] == "execute_reply":
            cell.status = message["content"]["status"]
            cell.reply = True

    def _on_iopub(self, message: dict[str, Any]) -> None:
        cell = self._cells.get(message["parent_header"].get("msg_id", ""))
        if cell is None:
            return
        kind, content = message["msg_type"], message["content"]
        if kind == "status":
            cell.idle = content["execution_state"] == "idle"
            return
        if kind == "execute_input":
            return
        cell.outputs.append({"msg_type": kind, **content})
        if kind == "stream":
            if content["name"] == "stdout":
                cell.stdout += content["text"]
            else:
                cell.stderr += content["text"]
        elif kind == "execute_result":
            cell.result = content["data"].get("text/plain")
        elif kind == "error":
            cell.error = content
