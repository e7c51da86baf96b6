"""What the notebook runner adds to a warm typed turn, against a bare ``AgentSession``.

In one real ipykernel, against one in-process emulator, with the same agent (the realtime
plugin, text): a bare ``AgentSession`` started on the kernel's loop (``session.run``), and a
``NotebookRunner`` (``runner.run``, the same as ``send_text`` without joining the text). Warm
turns, interleaved in rotating order, so the machine's load falls on all alike. The
difference is split into parts, each measured interleaved beside them:

- hop: ``runner.call`` of a no-op (the kernel's loop -> the job's loop and back);
- job session: ``session.run`` run on the job's loop through ``runner.call``, minus the hop and
  the bare turn (the runner's session: its trace, its guard, the job's room and loop);
- trace: a bare session with a ``Trace`` attached (as the runner's), minus the bare turn;
- checks: ``runner.run`` minus ``session.run`` in the job (the turn lock, the greeting's
  wait, the context comparison, ``problems_since``, the failed-expectation memo).

These differences of medians move by a millisecond from run to run on a loaded machine;
then, after the interleaved turns, as many turns again go through the runner with each part
timed where it runs (perf_counter around the trace's handlers and comparisons, the runner's
checks, the turn on the job's loop, the capture of livekit's spans).

Goal: the runner's turn within 1.1x the bare one. The machine's other load moves the figures:
quote one run's, taken while little else runs, with the load average it prints. A fresh
conversation of 30 turns: ``--turns 30``.

    .venv/bin/python benchmarks/runner_overhead.py --turns 102
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

from notebook_agents.bench.stats import summarize

SETUP = """
import asyncio, gc, json, time
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner, Trace
from notebook_agents.runner._model_server import InProcessEmulators

emulator = Emulator().start()
INSTRUCTIONS = "You are Ada."

def model():
    return openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key="bench", modalities=["text"]
    )

server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(llm=model())
    await session.start(agent=Agent(instructions=INSTRUCTIONS), room=ctx.room)

async def started(room=None):
    session = AgentSession(llm=model())
    if room is None:
        await session.start(agent=Agent(instructions=INSTRUCTIONS))
    else:
        await session.start(agent=Agent(instructions=INSTRUCTIONS), room=room)
    return session

runner = NotebookRunner(server).start()
job_session = await runner.ready()
bare = await started()
traced = AgentSession(llm=model())
Trace(model_server=InProcessEmulators()).attach(traced)  # as the runner's trace
await traced.start(agent=Agent(instructions=INSTRUCTIONS))
# a second session of the job, on its loop and its room: the runner neither traces nor
# guards it (it follows the job's first session only)
job_room = await runner.call(started, runner._ctx.room)

async def turn(session):
    await AgentSession.run(session, user_input="hello")

def noop():
    return None

VARIANTS = {
    "bare": lambda: turn(bare),
    "traced": lambda: turn(traced),
    "hop": lambda: runner.call(noop),
    "job_room": lambda: runner.call(turn, job_room),
    "in_job": lambda: runner.call(turn, job_session),
    "runner": lambda: runner.run("hello"),
}
# the runner's session takes two turns a round (in_job, runner): the others take one more,
# untimed, so that every conversation is as long (livekit's work per turn grows with it)
EVEN_UP = (
    lambda: turn(bare), lambda: turn(traced), lambda: runner.call(turn, job_room)
)

async def measure(turns):
    times = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for name in names:  # warm: each path's first turn is not counted
        await VARIANTS[name]()
    for extra in EVEN_UP:
        await extra()
    for i in range(turns):
        gc.collect()
        # each kind in each place of the round as often (the first after gc.collect() is
        # slower): every difference is between kinds that ran in the same places
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            await VARIANTS[name]()
            times[name].append(time.perf_counter() - started)
        for extra in EVEN_UP:
            await extra()
    times["items"] = [len(bare.history.items), len(job_session.history.items)]
    return times
"""

PARTS = """
import collections, functools, statistics
from notebook_agents.trace import livekit_spans, tap

spent = collections.defaultdict(float)

def timed(name, call):
    @functools.wraps(call)
    def timing(*args, **kwargs):
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started
    return timing

def timed_async(name, call):
    @functools.wraps(call)
    async def timing(*args, **kwargs):
        started = time.perf_counter()
        try:
            return await call(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started
    return timing

def timed_tap(self, event, *args):
    self.emit(event, *args)
    started = time.perf_counter()
    for handlers, failed in self.listeners:
        handler = handlers.get(event)
        if handler is not None:
            handler(*args)
    spent[HANDLERS] += time.perf_counter() - started

TURN, HOPS, HANDLERS = "the turn on the job's loop", "the hops (runner.run - the turn)", \
    "the trace's event handlers"
ORDER = [
    "runner.run",
    HOPS,
    TURN,
    "the runner's checks after a turn",
    HANDLERS,
    "the trace's span capture",
    "the trace's check after a sync",
    "the trace's comparison with the model",
    "  of it, reading the emulator's ids",
]

async def parts(turns):
    model_side = runner.trace._reader.model
    model_side.compare = timed(ORDER[7], model_side.compare)
    model_side._server_side = timed(ORDER[8], model_side._server_side)
    model_side.synced = timed(ORDER[6], model_side.synced)
    router = livekit_spans._router
    router.on_start = timed(ORDER[5], router.on_start)
    router.on_end = timed(ORDER[5], router.on_end)
    runner._checked = timed(ORDER[3], runner._checked)
    runner._typed_turn = timed_async(TURN, runner._typed_turn)
    tap._Tap.__call__ = timed_tap
    per_turn = collections.defaultdict(list)
    for _ in range(turns):
        spent.clear()
        started = time.perf_counter()
        await runner.run("hello")
        spent["runner.run"] = time.perf_counter() - started
        spent[HOPS] = spent["runner.run"] - spent[TURN]
        for name in ORDER:
            per_turn[name].append(spent[name])
    return {
        name: [statistics.median(per_turn[name]), statistics.fmean(per_turn[name])]
        for name in ORDER
    }
"""


def run_cell(client: Any, code: str) -> Any:
    """Execute ``code`` and return the JSON its output prints, if any."""
    text: list[str] = []

    def collect(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            text.append(msg["content"]["text"])

    reply = client.execute_interactive(code, timeout=600, output_hook=collect)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply['content'].get('evalue')}")
    return json.loads("".join(text)) if text else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--turns",
        type=int,
        default=102,
        help="timed turns of each kind (default 102: a multiple of the 6 kinds puts each in "
        "each place of a round as often)",
    )
    args = parser.parse_args()

    # the kernel imports this checkout's notebook_agents, as the interpreter running this does
    here = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    load_before = os.getloadavg()
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        run_cell(client, SETUP)
        times = run_cell(client, f"print(json.dumps(await measure({args.turns})))")
        # then, once: each part of the runner's turn timed where it runs (a conversation as
        # long again: the comparisons grow with it)
        run_cell(client, PARTS)
        parts = run_cell(client, f"print(json.dumps(await parts({args.turns})))")
        run_cell(client, "runner.stop()")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

    load_after = os.getloadavg()
    print(
        "load average (1, 5, 15 min) before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
        + f" ({os.cpu_count()} CPUs)"
    )
    items = times.pop("items")
    print(f"conversations of {items[0]} items (bare) and {items[1]} (the runner's) at the end")
    ms = {name: [t * 1e3 for t in values] for name, values in times.items()}
    medians: dict[str, float] = {}
    for name, values in ms.items():
        s = summarize(values)
        assert s is not None
        medians[name] = s.median
        print(
            f"{name:<7} median {s.median:6.2f} ms  IQR {s.q1:6.2f}-{s.q3:6.2f}  "
            f"95% CI {s.ci_low:.2f}-{s.ci_high:.2f}  n={s.n}"
        )
    ratios = [r / b for r, b in zip(ms["runner"], ms["bare"], strict=True)]
    paired = summarize(ratios)
    assert paired is not None
    bare, runner = medians["bare"], medians["runner"]
    print(
        f"\nrunner / bare: {runner / bare:.2f} (ratio of medians); paired median "
        f"{paired.median:.2f} (95% CI {paired.ci_low:.2f}-{paired.ci_high:.2f}); goal <= 1.10"
    )
    # what is left when the job's own parts are taken out: the same turn of the same agent, in
    # the job's room on the job's loop (livekit's room IO included), reached by the same hop
    in_room = medians["job_room"]
    print(
        f"runner / the same session in the job's room (reached by the hop): {runner / in_room:.2f}"
    )
    print(f"the runner's own cost: {runner - bare:+.2f} ms per turn, of which (medians)")
    differences = {
        "hop (kernel loop -> job loop -> back)": medians["hop"],
        "livekit's room IO on the job loop (mock room)": medians["job_room"]
        - medians["hop"]
        - bare,
        "the trace, its model truth (on a bare session)": medians["traced"] - bare,
        "the rest of the job's session (guard, host)": medians["in_job"]
        - medians["job_room"]
        - (medians["traced"] - bare),
        "checks after the turn (runner.run - in job)": runner - medians["in_job"],
    }
    for name, value in differences.items():
        print(f"  {name:<44} {value:+6.2f} ms")
    print(f"\n{args.turns} more turns through the runner, each part timed where it runs:")
    print(f"  {'(per turn)':<52} {'median':>8} {'mean':>8}")
    for name, (median, mean) in parts.items():
        print(f"  {name:<52} {median * 1e3:5.3f} ms {mean * 1e3:5.3f} ms")


if __name__ == "__main__":
    main()
