"""The kernel's loop waiting on the runners' threads, and the loops the runners made.

A cell awaiting work on a runner's thread must stay interruptible. In an async cell ipykernel
cancels the cell from its SIGINT handler, which runs only when the kernel's main thread runs
Python: a loop asleep in ``select`` wakes for no signal (the signal may land on any thread,
and ipykernel sets no wakeup fd), so the interrupt waited for the await to end on its own
(ipykernel 7.4, CONTEXT.md §7): a turn's timeout, or never. ``wait_awake`` wakes the loop
meanwhile.

A runner's job runs on a loop of its own, on a thread of its own; asyncio loops may be closed
only from the main thread here, and only once they have stopped. A stopped runner retires its
loop; the next stop from the main thread closes every retired loop that is done (one still
running, a job that would not stop, is left to end with the kernel).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

WAKE_S = 0.25
"""how often a loop awaiting a runner's thread wakes: how late a kernel interrupt lands. Each
wake takes the GIL from the job's thread for a moment: at 0.1 s, on a loaded machine, the
first job's start (pydantic building its schemas) was seen to stall past livekit's 100 ms
loop report (3 runs in 7), never at 0.25 s."""

_retired: list[asyncio.AbstractEventLoop] = []


async def wait_awake(future: concurrent.futures.Future[Any], timeout: float | None) -> bool:
    """Wait until ``future`` (set on another thread) is done, or ``timeout`` seconds pass;
    whether it is done (its outcome is read from ``future``). It is never cancelled here;
    the caller's own cancel (the cell interrupted) raises ``CancelledError`` at once, even as
    ``future`` completes (never lost to a result arriving in the same moment, as
    ``asyncio.wait_for`` loses it before 3.12)."""
    loop = asyncio.get_running_loop()
    done = asyncio.wrap_future(future)
    done.add_done_callback(_read_here)
    deadline = None if timeout is None else loop.time() + timeout
    while not done.done():
        left = WAKE_S if deadline is None else min(WAKE_S, deadline - loop.time())
        if left <= 0:
            return False
        # asyncio.wait cancels nothing it waits on, and times out without raising
        await asyncio.wait({done}, timeout=left)
    return True


def _read_here(done: asyncio.Future[Any]) -> None:
    """The outcome is read from the thread's future: asyncio need not report this copy's
    exception as never retrieved."""
    if not done.cancelled():
        done.exception()


def retire(loop: asyncio.AbstractEventLoop) -> None:
    """``loop`` is the runner's and will run no more: close it when that is allowed."""
    _retired.append(loop)


def close_retired() -> None:
    """Close each retired loop that has stopped, if called from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return
    for loop in list(_retired):
        if not loop.is_running():
            loop.close()
            _retired.remove(loop)
