"""Runs an agent's command so that it cannot outlive the kernel that started it.

    python -I -S _agent_launcher.py LIFELINE_FD COMMAND...

Started by ``AgentProcess`` in a session of its own (it leads its process group), this process
becomes the agent: it execs COMMAND, so the PID the kernel holds is the agent's. Before that it
forks a watcher, which stays in the agent's process group and waits for whichever comes first:

- end of file on LIFELINE_FD, the read end of a pipe whose write end only the kernel holds (not
  inheritable): the kernel has exited, however it ended, SIGKILL included. The watcher sends the
  group SIGTERM (livekit's console shuts down on it), waits for the agent to end, up to
  ``GRACE_S``, then SIGKILLs what is left of the group;
- the agent's exit (stopped by the kernel, or on its own): what is left of its group (the
  processes it started) is SIGKILLed.

Why a watcher process, and not ``prctl(PR_SET_PDEATHSIG)``: that signal fires when the *thread*
that spawned the child exits (a widget callback's thread, a connection's), reaches only the
child (not what the agent starts), is Linux only, and would need a ``preexec_fn``, unsafe in a
kernel that runs threads. The watcher needs no help from the kernel and nothing of the agent.

The watcher signals only its own process group, which it is a member of: while it lives the
group's ID cannot name anyone else's processes, even once the agent's PID is gone. Stdlib only,
run by path with ``-I -S`` (no package import: the watcher stays a bare interpreter).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

GRACE_S = 5.0
"""how long the agent has to shut down on SIGTERM once the kernel has gone"""
_POLL_S = 0.5
"""how often the agent's exit is checked where the system has no process descriptors"""


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(f"usage: {argv[0]} LIFELINE_FD COMMAND...", file=sys.stderr)
        return 2
    lifeline, command = int(argv[1]), argv[2:]
    agent = os.getpid()
    if os.getpgrp() != agent:
        # the watcher signals the whole group: it must be the agent's alone
        print("the agent launcher must lead its process group (start_new_session)", file=sys.stderr)
        return 2
    if os.fork() == 0:
        try:
            _watch(lifeline, agent)
        finally:
            os._exit(0)
    os.close(lifeline)
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"cannot run the agent's command {command[0]!r}: {e}", file=sys.stderr)
        return 127


def _watch(lifeline: int, agent: int) -> None:
    # the group's SIGTERM (and a terminal's SIGINT) is for the agent: blocked here, no handler
    # installed; the watcher ends with the group's SIGKILL
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    os.closerange(0, 3)  # the watcher prints nothing into the agent's output
    exit_fd = _exit_descriptor(agent)
    waits = [lifeline] if exit_fd is None else [lifeline, exit_fd]
    while not _agent_ended(agent, exit_fd, 0):
        ready, _, _ = select.select(waits, [], [], None if exit_fd is not None else _POLL_S)
        if lifeline in ready:  # end of file: nothing is ever written
            os.killpg(agent, signal.SIGTERM)
            _agent_ended(agent, exit_fd, GRACE_S)
            break
    os.killpg(agent, signal.SIGKILL)


def _exit_descriptor(agent: int) -> int | None:
    """A descriptor readable once ``agent`` has exited (Linux 5.3+), else None (poll)."""
    try:
        return os.pidfd_open(agent)
    except (AttributeError, OSError):
        return None


def _agent_ended(agent: int, exit_fd: int | None, timeout: float) -> bool:
    """Whether ``agent`` (the watcher's parent) has exited, waiting up to ``timeout``."""
    if exit_fd is not None:
        return bool(select.select([exit_fd], [], [], timeout)[0])
    deadline = time.monotonic() + timeout
    while os.getppid() == agent:  # its exit makes the watcher someone else's child
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv))
