"""The emulator as its own process, for benchmarks: the client keeps a core to itself."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .errors import EmulatorError

_STOP_TIMEOUT_S = 10.0
"""how long the process has to clean up before it is killed"""


@asynccontextmanager
async def emulator_process(*, validate: bool = True) -> AsyncIterator[str]:
    """Start ``python -m notebook_agents emulator --port 0``; yields its ``http://127.0.0.1:PORT``.

    On exit the process is told to stop by closing its standard input (killed by its PID if it
    has not within 10 s); it also exits by itself if its parent dies.
    """
    args = ["-m", "notebook_agents", "emulator", "--port", "0", "--until-stdin-closes"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        *([] if validate else ["--no-validate"]),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        url = (await asyncio.wait_for(process.stdout.readline(), 30)).decode().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise EmulatorError(f"the emulator process did not start (it printed {url!r})")
        yield url
    finally:
        if process.returncode is None:
            # it stops and cleans up (removes the Gemini CA file) once its stdin closes; a
            # signal could be ignored (SIGINT, in a job a script starts in the background)
            # or end it before any cleanup (SIGTERM)
            assert process.stdin is not None
            process.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), _STOP_TIMEOUT_S)
            if process.returncode is None:
                process.kill()
                await process.wait()
