"""What a ``Trace`` costs per event, measured on a real session (goal: <= 10 µs per callback).

Runs real text turns through the real LiveKit realtime plugin against the in-process
emulator: an ``on_enter`` greeting, a reply, a tool with its reply, a handoff A -> B, a turn
with B and a context edit. Every place the session's thread calls the trace is timed (livekit's
session and realtime-session events: the guard, the handler and the capture; the context-edit
and sync wrappers; the comparison with the model's side between turns), bare and with a
subscriber on another thread's loop (a notebook view). The events are made later, when the
trace is flushed: that cost is timed too, and reported apart with where it ran. The trace's
own time per round (capturing and making) closes the report.

End to end, each iteration runs a round without a trace and rounds with a trace attached (not
instrumented): read only after the round, asked after each turn what the notebook runner asks
(its errors and a divergence: events are made only if one may be there), and with a
subscriber on another thread's loop (a view: the events are made at each delivery),
interleaved in alternating order; the paired differences of wall time and of the process's CPU
time (the emulator runs in it too, alike in both), as fractions of an untraced round with a
bootstrap 95% CI of their median, are the trace's cost to the session. The machine's other
load moves them by about a percent from run to run: quote one run's figures together.

    .venv/bin/python benchmarks/trace_overhead.py --rounds 200
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from livekit.agents import Agent, AgentSession, function_tool
from livekit.plugins import openai

from notebook_agents.bench.stats import summarize
from notebook_agents.emulator import Emulator
from notebook_agents.trace import Trace, TraceEvent, agent_label

TURNS = ("hello there", "get weather city=Paris", "please transfer to bob", "what is 2 plus 3")

Samples = dict[str, list[tuple[float, float]]]
"""callback name -> (wall, thread CPU) seconds per call"""


class Bob(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Bob. You handle billing.")

    async def on_enter(self) -> None:
        await self.session.say("Bob here.")


class Alice(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Alice. You greet callers.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def get_weather(self, city: str) -> str:
        """Look up the weather in a city."""
        return f"sunny in {city}"

    @function_tool
    async def transfer_to_bob(self) -> Agent:
        """Hand the caller to Bob for billing questions."""
        return Bob()


def _timed(name: str, callback: Callable[[Any], None], samples: Samples) -> Callable[[Any], None]:
    def timed(event: Any) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        callback(event)
        samples[name].append((time.perf_counter() - started, time.thread_time() - cpu))
        started, cpu = time.perf_counter(), time.thread_time()
        _empty(event)
        samples[EMPTY].append((time.perf_counter() - started, time.thread_time() - cpu))

    return timed


def _empty(event: Any) -> None:
    pass


VARIANTS = (
    ("none", "no trace"),
    ("unread", "a trace, read after the round (a saved call, the bench)"),
    ("read", "a trace read after each turn (as the notebook runner)"),
    ("subscribed", "a trace, a subscriber on another loop (a view)"),
)
"""the end-to-end rounds: name, what it stands for"""
NEWLY_TIMED = ("realtime metrics_collected", "realtime remote_item_added", "sync_check")
"""the trace's callbacks on the realtime session and its sync check, timed since the split"""
EMPTY = "(an empty callback)"
"""the timing's own cost: not counted in the totals"""


def _time_callbacks(trace: Trace, samples: Samples) -> None:
    """Swap each callback the trace registered for a timed one around it (the trace reads its
    tables of handlers at each event)."""
    reader = trace._reader
    for name, callback in reader._handlers.items():
        reader._handlers[name] = _timed(name, callback, samples)
    # the realtime sessions' events: listened to when a session is made, from this dict
    for event, handler in reader.realtime_handlers.items():
        reader.realtime_handlers[event] = _timed(f"realtime {event}", handler, samples)
    # context edits and syncs reach the trace through its wrappers, and comparisons of
    # livekit's context with the model's run between turns from the loop: not the emitter
    _time_method(reader, "context_edited", "context_edit", samples)
    _time_method(reader.model, "synced", "sync_check", samples)
    _time_method(reader.model, "_compare_if_settled", "compare_with_model", samples)


def _time_method(owner: object, method: str, name: str, samples: Samples) -> None:
    """Replace ``owner.method`` (an instance override) by one timed as ``name``."""
    original: Callable[..., None] = getattr(owner, method)

    def timed(*args: Any) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        original(*args)
        samples[name].append((time.perf_counter() - started, time.thread_time() - cpu))

    setattr(owner, method, timed)


async def one_round(
    emulator: Emulator, trace: Trace | None, samples: Samples | None, *, read: bool = False
) -> tuple[float, float]:
    """One conversation; returns its wall time and the process's CPU time in seconds. With
    ``samples``, the trace's callbacks are timed into them; with ``read``, the trace is asked
    after each turn what the notebook runner asks (the turn's errors, a divergence)."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key="benchmark", modalities=["text"]
    )
    session: AgentSession[None] = AgentSession(
        llm=model, vad=None, turn_handling={"turn_detection": "manual"}
    )
    if trace is not None:
        trace.attach(session)
        if samples is not None:
            _time_callbacks(trace, samples)
    # every round starts from a collected heap: the collections its own garbage triggers are
    # its cost, not those the rounds before it left due
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        await session.start(Alice())
        for text in TURNS:
            turn_started = trace.now() if trace is not None else 0.0
            await session.run(user_input=text)
            if read and trace is not None:  # what the notebook runner asks after each turn
                trace.compare_contexts()
                trace.problems_since(turn_started, agent_label(session.current_agent))
        agent = session.current_agent
        edited = agent.chat_ctx.copy()
        edited.add_message(role="system", content="Be brief.")
        await agent.update_chat_ctx(edited)
    finally:
        await session.aclose()
        await model.aclose()
    return time.perf_counter() - started, time.process_time() - cpu


class _LoopThread:
    """A notebook kernel's loop stand-in: subscribers are delivered to it across threads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def subscribe(self, trace: Trace, callback: Callable[[TraceEvent], None]) -> None:
        async def subscribe() -> None:
            trace.subscribe(callback)

        asyncio.run_coroutine_threadsafe(subscribe(), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:8.2f}"


def report(title: str, samples: Samples, recorded: int, rounds: int) -> float:
    """Per callback: wall time (what the session waits) and the thread's CPU time (what the
    trace itself spends; wall also holds any GIL hand-over to other threads). Returns the
    callbacks' wall time per round, the timing's own cost taken out."""
    empty = samples.pop(EMPTY, [])
    calls = [sample for values in samples.values() for sample in values]
    print(f"\n{title}: {len(calls)} callbacks, {recorded} trace events")
    print(
        f"  {'callback':<24} {'calls':>6} {'wall µs':>8} {'p95':>8} {'cpu µs':>8}  (medians)"
        f" {'total ms':>9}"
    )
    # what this script timed before the trace captured cheaply (livekit's session events,
    # context edits, comparisons with the model), for a like-for-like median
    before = [s for name, values in samples.items() if name not in NEWLY_TIMED for s in values]
    rows = [
        *sorted(samples.items()),
        ("all callbacks", calls),
        ("  the points timed before", before),
        (EMPTY, empty),
    ]
    for name, values in rows:
        wall = sorted(w for w, _ in values)
        p95 = wall[int(0.95 * (len(wall) - 1))]
        cpu = statistics.median(c for _, c in values)
        total = sum(wall) * 1e3
        print(
            f"  {name:<24} {len(values):>6} {_us(statistics.median(wall))} {_us(p95)} {_us(cpu)}"
            f"  {total:9.2f}"
        )
    wall_total = sum(w for w, _ in calls) / recorded
    cpu_total = sum(c for _, c in calls) / recorded
    print(
        f"  all trace time / recorded events (mean): wall {_us(wall_total).strip()} µs, "
        f"cpu {_us(cpu_total).strip()} µs"
    )
    timing = statistics.median(w for w, _ in empty) if empty else 0.0
    return (sum(w for w, _ in calls) - len(calls) * timing) / rounds


def report_made(
    title: str, flushes: list[tuple[float, float]], recorded: int, rounds: int
) -> float:
    """The events' making, off the session's callbacks: all flushes' time per event. Returns
    the making's wall time per round."""
    wall = sum(w for w, _ in flushes) / recorded
    cpu = sum(c for _, c in flushes) / recorded
    print(
        f"  making the events ({title}): {len(flushes)} flushes, per event (mean) "
        f"wall {_us(wall).strip()} µs, cpu {_us(cpu).strip()} µs"
    )
    return sum(w for w, _ in flushes) / rounds


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    samples: dict[str, Samples] = {"bare": defaultdict(list), "subscribed": defaultdict(list)}
    flushes: dict[str, Samples] = {"bare": defaultdict(list), "subscribed": defaultdict(list)}
    recorded = {"bare": 0, "subscribed": 0}
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in VARIANTS}
    kernel = _LoopThread()
    delivered: list[TraceEvent] = []
    try:
        with Emulator() as emulator:
            await one_round(emulator, Trace(), defaultdict(list))  # warm-up, discarded
            await one_round(emulator, None, None)
            for index in range(args.rounds):
                timed = {"bare": Trace(), "subscribed": Trace()}
                for name, trace in timed.items():
                    _time_method(trace._recorder, "flush", "flush", flushes[name])
                kernel.subscribe(timed["subscribed"], delivered.append)
                watched = Trace()
                kernel.subscribe(watched, lambda event: None)
                # alternate the order, so drift in the machine hits each alike
                order: list[tuple[str, Trace | None]] = [
                    ("none", None),
                    ("unread", Trace()),
                    ("read", Trace()),
                    ("subscribed", watched),
                    ("timed bare", timed["bare"]),
                    ("timed subscribed", timed["subscribed"]),
                ]
                if index % 2:
                    order.reverse()
                for name, current in order:
                    if name.startswith("timed "):
                        kind = name.removeprefix("timed ")
                        await one_round(emulator, current, samples[kind])
                        recorded[kind] += len(timed[kind])  # (after the round: flushes the rest)
                    else:
                        read = name == "read"
                        rounds[name].append(await one_round(emulator, current, None, read=read))
    finally:
        kernel.close()

    captured = report(
        "trace callbacks, no subscriber", samples["bare"], recorded["bare"], args.rounds
    )
    made = report_made(
        "after each round, on the session's thread",
        flushes["bare"]["flush"],
        recorded["bare"],
        args.rounds,
    )
    report(
        "trace callbacks, one subscriber on another thread's loop",
        samples["subscribed"],
        recorded["subscribed"],
        args.rounds,
    )
    report_made(
        "at the kicks, on the session's loop",
        flushes["subscribed"]["flush"],
        recorded["subscribed"],
        args.rounds,
    )
    print(f"  (the subscriber received {len(delivered)} events)")

    print(f"\nend to end, {args.rounds} rounds of {len(TURNS)} turns each way, interleaved:")
    for measure, title in ((0, "wall"), (1, "process CPU")):
        none = statistics.median(r[measure] for r in rounds["none"])
        print(f"  {title}: median round without trace {none * 1e3:.2f} ms")
        for name, variant in VARIANTS[1:]:
            pairs = zip(rounds[name], rounds["none"], strict=True)
            difference = summarize([(r[measure] - o[measure]) / none for r, o in pairs])
            assert difference is not None
            print(
                f"    {variant:<52} median paired difference {difference.median:+.1%} "
                f"(95% CI {difference.ci_low:+.1%} to {difference.ci_high:+.1%})"
            )
    none = statistics.median(r[0] for r in rounds["none"])
    print(
        f"\nthe trace's own time per round (timed, no subscriber): capturing "
        f"{captured * 1e3:.3f} ms + making the events {made * 1e3:.3f} ms = "
        f"{(captured + made) / none:.1%} of an untraced round's wall time"
    )


if __name__ == "__main__":
    asyncio.run(main())
