"""Event loops the runners made, closed only from the kernel's main thread.

A runner's job runs on a loop of its own, on a thread of its own; asyncio loops may be closed
only from the main thread here, and only once they have stopped. A stopped runner retires its
loop; the next stop from the main thread closes every retired loop that is done (one still
running, a job that would not stop, is left to end with the kernel).
"""

from __future__ import annotations

import asyncio
import threading

_retired: list[asyncio.AbstractEventLoop] = []


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
