"""Soak: N start -> turn -> stop cycles of one agent in one real ipykernel, and what is left.

The agent is production-style (a realtime model per job) against the emulator, which runs in
a process of its own so that only the runner, the trace and livekit count; ``--emulator
kernel`` runs it in the kernel, as the notebooks do, so that what it keeps of each connection
counts too. ``--spoken`` makes each turn a spoken one (``send_audio``, the model hears and
speaks) instead of a typed one. ``--suite`` runs the cycles as scenarios instead, in suites of
``--every`` scenarios (each scenario on a runner of its own), each suite's result dropped, and
then reports what one kept result holds.

After a warm-up (the first ~100 jobs grow RSS by ~2.5 MB while livekit's lazy parts, the
protobuf and line caches and the allocator's arenas fill; flat after that), every ``--every``
cycles it reports the kernel's threads, open fds, sockets, asyncio tasks, the call records
on livekit's cached offline room and RSS (after a full GC and ``malloc_trim``: memory still
held, not freed heap pages glibc has yet to return). The goal: 500 cycles grow RSS < 2 MB.

    .venv/bin/python benchmarks/soak.py --cycles 500
    .venv/bin/python benchmarks/soak.py --cycles 500 --emulator kernel
    .venv/bin/python benchmarks/soak.py --cycles 200 --spoken
    .venv/bin/python benchmarks/soak.py --cycles 1000 --suite
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.kernel import Kernel

SETUP = """
import asyncio, ctypes, gc, threading
import psutil
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from notebook_agents import NotebookRunner
from notebook_agents import _livekit_internals as livekit
from notebook_agents.emulator import Emulator
from notebook_agents.emulator.process import emulator_process
from notebook_agents.emulator.server import base_url
from notebook_agents.speech import synthesize

server = AgentServer()
"""

# the emulator in a process of its own: its connection log is not the runner's memory
IN_PROCESS = """
emulator = emulator_process(validate=False)
EMULATOR_URL = base_url(await emulator.__aenter__())
"""
IN_KERNEL = """
in_kernel = Emulator().start()
EMULATOR_URL = in_kernel.base_url()
"""

TYPED = """
async def turn(runner):
    assert await runner.send_text("hello") == 'You are Ada. You said: "hello".'
"""
SPOKEN = """
HELLO = synthesize("hello there")

async def turn(runner):
    assert await runner.send_audio(HELLO) == 'You are Ada. You said: "hello there".'
"""

CYCLES = """

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=EMULATOR_URL, api_key="soak")
    session = AgentSession(llm=model)
    await session.start(agent=Agent(instructions="You are Ada."), room=ctx.room)

async def cycles(n, audio):
    for _ in range(n):
        runner = NotebookRunner(server, audio=audio).start()
        await runner.ready()
        await turn(runner)
        runner.stop()

_libc = ctypes.CDLL("libc.so.6")
_me = psutil.Process()

def held():
    gc.collect()
    _libc.malloc_trim(0)
    return dict(
        threads=threading.active_count(),
        fds=_me.num_fds(),
        sockets=len(_me.net_connections(kind="all")),
        tasks=len(asyncio.all_tasks()),
        room_calls=livekit.mock_room_call_records(),
        rss=_me.memory_info().rss,
    )
"""

SUITE = """
import os, tempfile
from notebook_agents.suites import load_suite, run_suite

def many_scenarios(n):
    scenario = (
        "  - label: hello {}\\n    turns:\\n      - user: hello\\n        expect:\\n"
        "          - next_event().is_message(role='assistant')\\n"
    )
    text = "name: soak\\nscenarios:\\n" + "".join(scenario.format(i) for i in range(n))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        return load_suite(f.name)
    finally:
        os.unlink(f.name)

async def suite(n):
    result = await run_suite(many_scenarios(n), server)
    assert result.passed, result.counts()
    return result
"""

COLUMNS = ("threads", "fds", "sockets", "tasks", "room_calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=500, help="measured cycles (default 500)")
    parser.add_argument("--every", type=int, default=100, help="report every N (default 100)")
    parser.add_argument(
        "--warmup", type=int, default=100, help="cycles before the baseline (default 100)"
    )
    parser.add_argument(
        "--emulator",
        choices=("process", "kernel"),
        default="process",
        help="where the emulator runs: its own process (default), or the kernel as in notebooks",
    )
    parser.add_argument("--spoken", action="store_true", help="spoken turns, not typed ones")
    parser.add_argument(
        "--suite", action="store_true", help="--cycles scenarios (typed turns) in suites of --every"
    )
    args = parser.parse_args()
    if args.suite:
        _soak_suite(args.cycles, args.every, args.warmup)
        return
    in_kernel = args.emulator == "kernel"
    setup = SETUP + (IN_KERNEL if in_kernel else IN_PROCESS) + (SPOKEN if args.spoken else TYPED)
    run = f"await cycles({{}}, audio={args.spoken})"

    with Kernel() as kernel:
        kernel.run_ok(setup + CYCLES, timeout=120)
        kernel.run_ok(run.format(args.warmup), timeout=3600)
        base = kernel.eval("held()")
        print(
            f"{'cycles':>7} "
            + " ".join(f"{c:>10}" for c in COLUMNS)
            + f" {'RSS MB':>9} {'ΔRSS MB':>8}"
        )
        print(_row(0, base, base))
        done, started = 0, time.perf_counter()
        while done < args.cycles:
            batch = min(args.every, args.cycles - done)
            kernel.run_ok(run.format(batch), timeout=3600)
            done += batch
            print(_row(done, kernel.eval("held()"), base), flush=True)
        elapsed = time.perf_counter() - started
        end = kernel.eval("held()")
        kernel.run_ok(
            "in_kernel.stop()" if in_kernel else "await emulator.__aexit__(None, None, None)"
        )
    growth = (end["rss"] - base["rss"]) / 2**20
    per_500 = growth * 500 / args.cycles
    print(
        f"{args.cycles} cycles in {elapsed:.1f} s ({elapsed / args.cycles * 1e3:.0f} ms each); "
        f"RSS grew {growth:+.2f} MB ({per_500:+.2f} MB per 500 cycles; goal < 2 MB: "
        f"{'met' if per_500 < 2 else 'NOT met'})"
    )


def _soak_suite(scenarios: int, every: int, warmup: int) -> None:
    """Suites of ``every`` scenarios each, each result dropped, until ``scenarios`` ran: what
    is left; then one suite kept: what its result holds."""
    with Kernel() as kernel:
        kernel.run_ok(SETUP + IN_PROCESS + TYPED + CYCLES + SUITE, timeout=120)
        kernel.run_ok(f"await suite({warmup})\nNone", timeout=3600)
        base = kernel.eval("held()")
        print(f"{'scenarios':>9} " + " ".join(f"{c:>10}" for c in COLUMNS) + " RSS MB  ΔRSS MB")
        print(_row(0, base, base))
        done, started = 0, time.perf_counter()
        while done < scenarios:
            batch = min(every, scenarios - done)
            kernel.run_ok(f"await suite({batch})\nNone", timeout=3600)
            done += batch
            print(_row(done, kernel.eval("held()"), base), flush=True)
        elapsed = time.perf_counter() - started
        dropped = kernel.eval("held()")
        kernel.run_ok(f"kept = await suite({every})", timeout=3600)
        held = kernel.eval("held()")
        kernel.run_ok("del kept\nawait emulator.__aexit__(None, None, None)")
    left = (dropped["rss"] - base["rss"]) / 2**20
    holds = (held["rss"] - dropped["rss"]) / every / 2**10
    print(
        f"{scenarios} scenarios in {elapsed:.1f} s; RSS left once each suite's result is "
        f"dropped {left:+.2f} MB ({left * 500 / scenarios:+.2f} MB per 500 scenarios); a kept "
        f"result holds {holds:.1f} KB a scenario"
    )


def _row(cycles: int, state: dict[str, int], base: dict[str, int]) -> str:
    counts = " ".join(f"{state[c]:>10}" for c in COLUMNS)
    rss, grown = state["rss"] / 2**20, (state["rss"] - base["rss"]) / 2**20
    return f"{cycles:>7} {counts} {rss:>9.1f} {grown:>+8.2f}"


if __name__ == "__main__":
    main()
