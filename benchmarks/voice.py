"""A caller's wait in a voice session, offline, and what an open microphone costs.

For each RTT and each pipeline the Concierge is asked "hello there" by a synthesized caller
``--turns`` times after a warm-up turn; the wait is from the end of the caller's speech, where
livekit's VAD placed it (``stopped_speaking_at``, as ``lk.e2e_latency`` counts), to the reply's
first audio (``TraceAnalysis.of(trace).speech``'s ``first_audio_s``); under it, the median of
each phase the caller waited on (``turn_phases``), and what none explains.

- cascaded (silero VAD, ``openai.STT``, ``openai.LLM``, ``openai.TTS`` on the emulator): each
  request answers ``http_first_byte_s`` after it was sent on a warm connection; livekit
  transcribes and starts the reply while it waits out its end-of-turn delay, so only the
  speech request is on the caller's path: a step in RTT costs one ``http_first_byte_s`` step.
- realtime (the model hears with its server VAD and speaks): the end of speech is the
  server's ``speech_stopped``, which crosses the network as the first audio does, so the
  truth is ``created_ms + first_token_ms`` whatever the RTT.

Then the CPU of a session while its microphone streams silence for ``--idle-s`` seconds
(VAD running, no turn), as a share of one core.

    .venv/bin/python benchmarks/voice.py --turns 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections import defaultdict

import numpy as np
from livekit.agents import NOT_GIVEN, Agent, AgentServer, AgentSession, JobContext, NotGivenOr
from livekit.plugins import openai, silero

from notebook_agents import Emulator, LatencyModel, NotebookRunner, RunnerError, TraceAnalysis
from notebook_agents.analysis import Breakdown, turn_phases
from notebook_agents.speech import SAMPLE_RATE, synthesize

RTTS_MS = (0, 20, 100)
PIPELINES = ("cascaded", "realtime")


def voice_server(
    base_url: str,
    pipeline: str = "cascaded",
    instructions: str = "You are the Concierge.",
    aec_warmup_duration: NotGivenOr[float | None] = NOT_GIVEN,
) -> AgentServer:
    """A voice agent, every model the emulator at ``base_url``; the emulator's replies begin
    with the first sentence of its ``instructions``; ``aec_warmup_duration`` livekit's (None
    lets the caller speak over the agent's first 3 s, as benchmarks/ears.py does)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = (
            AgentSession(
                vad=silero.VAD.load(),
                stt=openai.STT(base_url=base_url, api_key="bench"),
                llm=openai.LLM(base_url=base_url, api_key="bench"),
                tts=openai.TTS(base_url=base_url, api_key="bench"),
                aec_warmup_duration=aec_warmup_duration,
            )
            if pipeline == "cascaded"
            else AgentSession(
                llm=openai.realtime.RealtimeModel(base_url=base_url, api_key="bench"),
                aec_warmup_duration=aec_warmup_duration,
            )
        )
        await session.start(agent=Agent(instructions=instructions), room=ctx.room)

    return server


def truth_s(pipeline: str, latency: LatencyModel) -> float:
    """What the latency model puts on the caller's path, by pipeline (see above)."""
    if pipeline == "cascaded":
        return latency.http_first_byte_s(new_connection=False)
    return (latency.created_ms + latency.first_token_ms) / 1000.0


async def waits(
    pipeline: str, rtt_ms: float, turns: int
) -> tuple[list[float], list[Breakdown], float]:
    """The caller's waits over ``turns`` turns after a warm-up, each split into phases, and
    the network's share of the wait by the latency model."""
    latency = LatencyModel(rtt_ms=rtt_ms)
    caller = synthesize("hello there")
    with Emulator(latency=latency) as emulator:
        runner = NotebookRunner(voice_server(emulator.base_url(), pipeline), audio=True).start()
        try:
            await runner.ready()
            for _ in range(turns + 1):
                await runner.send_audio(caller)
        finally:
            runner.stop()
    speech = TraceAnalysis.of(runner.trace).speech
    answers = [
        s.first_audio_s for s in speech if s.speaker == "agent" and s.first_audio_s is not None
    ]
    return answers[1:], turn_phases(runner.trace)[1:], truth_s(pipeline, latency)


def phase_medians(breakdowns: list[Breakdown]) -> str:
    """``name ms`` of each phase the caller waited on, medians over the turns, in order."""
    taken: defaultdict[str, list[float]] = defaultdict(list)
    for b in breakdowns:
        for p in b.phases:
            if p.critical:
                taken[p.name].append(p.seconds)
        taken["unexplained"].append(b.unexplained)
    return ", ".join(f"{name} {statistics.median(s) * 1000:.0f}" for name, s in taken.items())


async def open_mic_cpu(seconds: float) -> float:
    """The process's CPU, in cores, while the session's microphone streams silence."""
    with Emulator() as emulator:
        runner = NotebookRunner(voice_server(emulator.base_url()), audio=True).start()
        try:
            await runner.ready()
            cpu, wall = time.process_time(), time.perf_counter()
            # silence is no turn: send_audio gives up after the timeout, as intended
            with contextlib.suppress(RunnerError):
                await runner.send_audio(np.zeros(SAMPLE_RATE, np.int16), timeout=seconds)
            return (time.process_time() - cpu) / (time.perf_counter() - wall)
        finally:
            runner.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=10.0)
    args = parser.parse_args()
    for pipeline in PIPELINES:
        baseline: tuple[float, float] | None = None
        for rtt_ms in RTTS_MS:
            measured, phases, truth = await waits(pipeline, rtt_ms, args.turns)
            median = statistics.median(measured)
            baseline = baseline or (median, truth)
            print(
                f"{pipeline:<8} RTT {rtt_ms:>3} ms: end of speech -> first audio median "
                f"{median * 1000:5.0f} ms over {len(measured)} turns, "
                f"{(median - baseline[0]) * 1000:+4.0f} ms vs RTT 0 "
                f"(truth {(truth - baseline[1]) * 1000:+4.0f} ms)"
            )
            print(f"    phases, median ms: {phase_medians(phases)}")
    cores = await open_mic_cpu(args.idle_s)
    print(f"open microphone, silence for {args.idle_s:.0f} s: {cores * 100:.1f}% of a core")


if __name__ == "__main__":
    asyncio.run(main())
