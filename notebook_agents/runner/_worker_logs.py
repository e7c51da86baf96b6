"""Worker logs for the runner: livekit's records kept for the views, out of the kernel's stderr.

While any runner runs, the ``livekit`` logger stops propagating (its warnings would otherwise
land in whichever cell happens to be executing) and feeds the runners' ``WorkerLogs``; so do
``asyncio``'s reports from the server and job threads (a livekit future whose error nobody
retrieved, say), while the kernel's own asyncio records pass as before. A record goes to the
runner whose server or job thread logged it (several runners may run at once), a record from
elsewhere to every runner. Both loggers are restored as found when the last runner stops; the
root logger is never touched.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from dataclasses import dataclass

_LOGGER = "livekit"
_ASYNCIO = "asyncio"
# the runner's server thread and livekit's THREAD-executor job threads
_AGENT_THREADS = ("notebook-agents-server", "job_thread_runner")
_SECRET_ENV = ("LIVEKIT_API_SECRET", "LIVEKIT_API_KEY", "OPENAI_API_KEY")
# What livekit says that is expected of a notebook, as (logger, message template): the runner
# keeps no idle job thread (``num_idle_processes=0``: one would idle in the kernel for nothing,
# and its replacement after every job too), so livekit's pool warns, for every job, that none
# was warmed while it starts the job's thread as it should. Nothing to act on here.
_EXPECTED = {
    ("livekit.agents", "no warmed process available for job, waiting for one to be created"),
}
_lock = threading.Lock()
_active: list[WorkerLogs] = []
_owners: dict[int, WorkerLogs] = {}
"""thread ident -> the logs of the runner whose server or job thread it is (the latest claim)"""
_saved: tuple[bool, int] | None = None


@dataclass(frozen=True)
class LogLine:
    created: float
    level: str
    logger: str
    message: str

    def __str__(self) -> str:
        return f"{self.level:<7} {self.logger}: {self.message}"


def _deliver(record: logging.LogRecord) -> None:
    if (record.name, record.msg) in _EXPECTED:
        return
    owner = _owners.get(record.thread) if record.thread is not None else None
    for logs in [owner] if owner is not None else list(_active):
        logs.handle(record)


class _Router(logging.Handler):
    """The one handler on the ``livekit`` logger while runners run."""

    def emit(self, record: logging.LogRecord) -> None:
        _deliver(record)


class _FromAgentThreads(logging.Filter):
    """Diverts asyncio's records from the agent threads into the runners' logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.threadName not in _AGENT_THREADS:
            return True
        _deliver(record)
        return False


_router = _Router()
_divert = _FromAgentThreads()


class WorkerLogs(logging.Handler):
    """The latest ``maxlen`` records from livekit's loggers, secrets redacted."""

    def __init__(self, *, level: int = logging.INFO, maxlen: int = 2000) -> None:
        super().__init__(level)
        self.lines: deque[LogLine] = deque(maxlen=maxlen)
        self.secrets: set[str] = {v for k in _SECRET_ENV if len(v := os.environ.get(k, "")) >= 8}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                message += f" ({record.exc_info[1]!r})"
        except Exception:  # a broken log call must not break the agent
            message = str(record.msg)
        for secret in self.secrets:
            message = message.replace(secret, "[redacted]")
        self.lines.append(LogLine(record.created, record.levelname, record.name, message))

    def text(self, min_level: int = logging.INFO, last: int | None = None) -> str:
        """The lines at ``min_level`` or above, one a line; only the ``last`` few if given
        (whole lines: a notebook shows the end of a long log without cutting one)."""
        lines = [str(line) for line in self.lines if logging.getLevelName(line.level) >= min_level]
        return "\n".join(lines[-last:] if last else lines)

    def claim_thread(self) -> None:
        """Records logged on the calling thread (a runner's server or job thread) are this
        runner's from now on."""
        with _lock:
            _owners[threading.get_ident()] = self

    def install(self) -> None:
        global _saved
        logger = logging.getLogger(_LOGGER)
        with _lock:
            if not _active:
                _saved = (logger.propagate, logger.level)
                logger.propagate = False
                logger.addHandler(_router)
                logging.getLogger(_ASYNCIO).addFilter(_divert)
            if logger.getEffectiveLevel() > self.level:
                logger.setLevel(self.level)
            _active.append(self)

    def uninstall(self) -> None:
        global _saved
        logger = logging.getLogger(_LOGGER)
        with _lock:
            if self not in _active:
                return
            _active.remove(self)
            for thread in [t for t, logs in _owners.items() if logs is self]:
                del _owners[thread]
            if not _active and _saved is not None:
                logger.propagate, level = _saved
                logger.setLevel(level)
                logger.removeHandler(_router)
                logging.getLogger(_ASYNCIO).removeFilter(_divert)
                _saved = None
