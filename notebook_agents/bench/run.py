"""Run a benchmark: the grid of levels x RTTs x history lengths x modes, interleaved.

Against the emulator (its own process, so the client keeps a core to itself) every trial has
its ground truth; against a foreign base_url the truth columns stay empty. A warm-up round is
discarded, modes alternate trial by trial, and a trial that fails or times out is recorded with
its reason while the run goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import os
import platform
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any

from ..emulator import EmulatorError, LatencyModel
from ..emulator.process import emulator_process
from ..modes import REALTIME_MODES, ContextMode, SessionMode, mode_label
from .agents_trial import agents_trial
from .bench_pair import bench_pair
from .livekit_warnings import livekit_warned
from .providers import Endpoint, forget_endpoints, provider
from .results import (
    BenchmarkConfig,
    BenchmarkConfigError,
    BenchmarkResult,
    Trial,
)
from .session_trial import session_trial
from .trial import Timings, TrialFailed, TrialSpec
from .your_agents import YourAgents, YourServer

Progress = Callable[[int, int, Trial], None]
"""called after each kept trial with (done, total, trial)"""

_PACKAGES = (
    "notebook-agents",
    "livekit-agents",
    "livekit-plugins-openai",
    "livekit-plugins-google",
    "livekit",
    "openai",
    "google-genai",
)


def modes_for(level: str) -> tuple[tuple[SessionMode, ContextMode], ...]:
    if level == "cascaded":
        return (("none", "copied"), ("none", "empty"))
    return REALTIME_MODES


def plan(config: BenchmarkConfig) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every trial to run, in order, with whether it is kept (False: warm-up)."""
    rtts: list[float | None] = list(config.rtts_ms) if config.target == "emulator" else [None]
    for name, level in ((p, level) for p in config.providers for level in config.levels):
        modes = tuple(
            (session, context)
            for session, context in modes_for(level)
            if config.modes is None or mode_label(session, context) in config.modes
        )
        for rtt in rtts:
            for turns in config.history_turns:
                for round_index in range(-config.warmup, config.trials):
                    # rotate the order each round: no mode always runs first or after another
                    shift = round_index % len(modes)
                    for session, context in modes[shift:] + modes[:shift]:
                        for traced in (False, True) if config.traced else (False,):
                            yield (
                                {
                                    "provider": name,
                                    "level": level,
                                    "session": session,
                                    "context": context,
                                    "rtt_ms": rtt,
                                    "history_turns": turns,
                                    "trial": max(round_index, 0),
                                    "traced": traced,
                                },
                                round_index >= 0,
                            )


async def run_benchmark(
    config: BenchmarkConfig,
    *,
    api_key: str | None = None,
    emulator_query: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> BenchmarkResult:
    """Run ``config``; ``api_key`` for a foreign target (else OPENAI_API_KEY); never stored."""
    started = time.perf_counter()
    result = BenchmarkResult(
        config=config,
        versions=_versions(),
        machine=_machine(),
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    key = api_key or os.environ.get("OPENAI_API_KEY") or "emulator"
    if config.target != "emulator" and key == "emulator":
        raise BenchmarkConfigError(
            "a foreign --base-url needs an API key: pass --api-key or set OPENAI_API_KEY"
        )
    check_runnable(config)
    grid = list(plan(config))
    total = sum(kept for _, kept in grid)
    async with _target(config, key) as endpoint:
        for cell, kept in grid:
            trial = await _one_trial(config, cell, endpoint(cell["rtt_ms"], emulator_query or {}))
            if kept:
                result.trials.append(trial)
                if progress is not None:
                    progress(len(result.trials), total, trial)
    result.duration_s = time.perf_counter() - started
    return result


def check_runnable(config: BenchmarkConfig) -> None:
    """``BenchmarkConfigError``, naming the fix, for a config whose trials cannot run."""
    for name in config.providers:
        entry = provider(name)
        if entry.require is not None:
            try:
                entry.require()
            except EmulatorError as missing:  # before the run: not once per failed trial
                raise BenchmarkConfigError(f"provider {name!r}: {missing}") from None
        if name != "openai" and (config.levels != ["agent"] or config.target != "emulator"):
            raise BenchmarkConfigError(
                f"provider {name!r} runs at the agent level against the emulator: leave levels "
                "as ['agent'] and the target as 'emulator' (the session and cascaded levels, "
                "and --base-url, are OpenAI's)"
            )
    if config.agents is None:
        return
    if not isinstance(config.agents, YourAgents | YourServer):
        raise BenchmarkConfigError(
            f"agents={config.agents!r}: pass YourAgents(A, trigger=...) or "
            "YourServer(server, trigger=...) (a loaded result keeps only their name)"
        )
    if config.levels != ["agent"]:
        raise BenchmarkConfigError(
            "your agents run at the agent level (a full AgentSession): leave levels as ['agent']"
        )
    if config.target != "emulator":
        raise BenchmarkConfigError(
            "your agents run against the emulator only (their truths need it)"
        )


async def _one_trial(config: BenchmarkConfig, cell: dict[str, Any], endpoint: Endpoint) -> Trial:
    trial = Trial(**cell, asked_session=cell["session"], asked_context=cell["context"])
    latency = (
        LatencyModel(rtt_ms=trial.rtt_ms, connect_rtts=config.connect_rtts)
        if trial.rtt_ms is not None
        else None
    )
    spec = TrialSpec(
        level=trial.level,
        session=trial.session,
        context=trial.context,
        history_turns=trial.history_turns,
        endpoint=endpoint,
        model=config.model,
        provider=trial.provider,
        agents=config.agents,
        traced=trial.traced,
        modality=config.modality,
        # a handoff through an AgentSession has phases; upstream's bare session has none
        phases=config.phases and trial.level != "session",
        latency=latency,
    )
    ran = None
    try:
        with livekit_warned() as warned:
            timings = await asyncio.wait_for(run_trial(spec), config.timeout_s)
    except asyncio.TimeoutError:
        trial.ok, trial.error = False, f"timed out after {config.timeout_s:g} s"
    except TrialFailed as e:
        trial.ok, trial.error = False, str(e)
    except Exception as e:  # a broken trial is a data point, not the end of the run
        trial.ok, trial.error = False, f"{type(e).__name__}: {e}"
    else:
        for found in dataclasses.fields(timings):
            if found.name != "ran":
                setattr(trial, found.name, getattr(timings, found.name))
        ran = timings.ran
    trial.livekit_warned = warned
    if ran is not None:  # labelled by what the trace says happened
        trial.session, trial.context, trial.reason = ran.session, ran.context, ran.reason
    if latency is not None and (trial.ok or config.agents is None):
        truth = provider(trial.provider).ground_truth(
            trial.level,
            trial.session,
            trial.context,
            trial.history_turns,
            latency,
            items=ran.items if ran is not None else None,
            tool_reply=ran.tool_reply if ran is not None else None,
        )
        if truth is not None:
            trial.truth_handoff_ms, trial.truth_reply_ms = truth
            if config.modality == "audio" and trial.level != "cascaded":
                # the first audio leaves with the first words, first_token_ms after the reply
                trial.truth_first_audio_ms = trial.truth_reply_ms + latency.first_token_ms
    return trial


@asynccontextmanager
async def _target(
    config: BenchmarkConfig, key: str
) -> AsyncIterator[Callable[[float | None, dict[str, Any]], Endpoint]]:
    """A function giving the endpoint for an RTT: the emulator's (started here) with that
    network and ``query``'s faults, or the foreign target."""
    if config.target != "emulator":
        yield lambda _rtt, _query: Endpoint(config.target, key, emulator=False)
        return
    # no event validation: the benchmark measures the client, not the emulator's checks
    try:
        async with emulator_process(validate=False) as url:

            def endpoint(rtt: float | None, query: dict[str, Any]) -> Endpoint:
                latency = {"rtt_ms": rtt or 0.0, "connect_rtts": config.connect_rtts}
                return Endpoint(url, key, settings={**latency, **query})

            yield endpoint
    finally:
        forget_endpoints()


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _machine() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "system": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpus": os.cpu_count(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


async def run_trial(spec: TrialSpec) -> Timings:
    """Run one trial of ``spec``; raises TrialFailed (or times out in the caller)."""
    if spec.level == "session":
        return await session_trial(spec)
    return await agents_trial(spec, spec.agents or bench_pair(spec.session))
