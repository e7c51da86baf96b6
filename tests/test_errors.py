"""One root under every error the package defines: ``except NotebookAgentsError`` catches what
any part of it raises, and each error keeps the builtin base callers catch it by."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import socket
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from livekit.agents import AgentServer, JobContext

import notebook_agents
from notebook_agents import (
    Emulator,
    LatencyModel,
    NotebookAgentsError,
    NotebookRunner,
    Trace,
    load_suite,
)
from notebook_agents.bench import BenchmarkResult
from notebook_agents.speech.wav import wav_bytes, wav_samples
from notebook_agents.teaching import check

VIDEOSDK = "notebook_agents.videosdk"
"""an extra the main environment lacks: tests/videosdk/test_videosdk_errors.py walks it there"""


def package_modules(
    package: types.ModuleType, leave_out: str | None = None
) -> Iterator[types.ModuleType]:
    """``package`` and every module under it but the subpackage ``leave_out``, imported (an
    import that fails fails the walk)."""

    def not_importable(name: str) -> None:
        if name != leave_out:
            raise ImportError(f"{name} does not import")

    yield package
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.", not_importable):
        if leave_out is None or not f"{info.name}.".startswith(f"{leave_out}."):
            yield importlib.import_module(info.name)


def exceptions_defined(module: types.ModuleType) -> Iterator[type[BaseException]]:
    """Every exception class ``module`` defines, nested ones too; warnings are not errors."""
    found, seen = [v for v in vars(module).values() if inspect.isclass(v)], set()
    while found:
        cls = found.pop()
        if cls.__module__ != module.__name__ or cls in seen:
            continue
        seen.add(cls)
        found.extend(v for v in vars(cls).values() if inspect.isclass(v))
        if issubclass(cls, BaseException) and not issubclass(cls, Warning):
            yield cls


def test_every_exception_the_package_defines_derives_from_the_root() -> None:
    defined = {
        cls
        for module in package_modules(notebook_agents, VIDEOSDK)
        for cls in exceptions_defined(module)
    }
    outside = sorted(_dotted(cls) for cls in defined if not issubclass(cls, NotebookAgentsError))
    assert outside == [], "derive these from notebook_agents.NotebookAgentsError"
    # a walk that silently found nothing would pass the line above
    assert {"RunnerError", "SuiteFileError", "ParameterError", "ResultsFileError"} <= {
        cls.__name__ for cls in defined
    }


def _dotted(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _server() -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        raise AssertionError("never started")

    return server


def _suite_file(tmp_path: Path) -> Path:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - label: a\n    turns: hello\n")
    return path


def _results_file(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_text("session,context\nreused,copied\n")
    return path


def _trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "call.jsonl"
    path.write_text('{"format": "someone-elses.log/1"}\n')
    return path


def _taken_port_emulator() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        Emulator(port=holder.getsockname()[1]).start()


CASES: dict[str, tuple[Callable[[Path], object], str, type[Exception]]] = {
    "a runner asked to take a turn before it started": (
        lambda _: NotebookRunner(_server()).send_text("hi"),
        "RunnerError",
        RuntimeError,
    ),
    "audio a runner cannot take": (
        lambda _: NotebookRunner(_server()).send_audio(np.array(["words, not sound"])),
        "AudioError",
        ValueError,
    ),
    "something a runner cannot run": (
        lambda _: NotebookRunner(AgentServer()),
        "RunnerError",
        RuntimeError,
    ),
    "a scenarios file that cannot run": (
        lambda tmp_path: load_suite(_suite_file(tmp_path)),
        "SuiteFileError",
        ValueError,
    ),
    "a latency the emulator cannot take": (
        lambda _: LatencyModel(rtt_ms=-1),
        "ParameterError",
        ValueError,
    ),
    "an emulator that cannot start": (
        lambda _: _taken_port_emulator(),
        "EmulatorError",
        RuntimeError,
    ),
    "a trace file that is not one": (
        lambda tmp_path: Trace.load(_trace_file(tmp_path)),
        "TraceFileError",
        ValueError,
    ),
    "a benchmark results file that is not one": (
        lambda tmp_path: BenchmarkResult.load_json(_results_file(tmp_path)),
        "ResultsFileError",
        ValueError,
    ),
    "a WAV file cut inside its header": (
        lambda _: wav_samples(wav_bytes(np.zeros(10, np.int16), 16000)[:20]),
        "WavCutShort",
        Exception,
    ),
    "an exercise not answered yet": (
        lambda _: check(False, "call runner.start()"),
        "NotYet",
        AssertionError,
    ),
}


@pytest.mark.parametrize("case", CASES)
async def test_the_root_catches_each_areas_errors_and_they_keep_their_builtin_base(
    case: str, tmp_path: Path
) -> None:
    act, error, builtin = CASES[case]
    with pytest.raises(NotebookAgentsError) as raised:
        outcome = act(tmp_path)
        if inspect.isawaitable(outcome):
            await outcome
    assert type(raised.value).__name__ == error
    assert isinstance(raised.value, builtin)
