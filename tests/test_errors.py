"""One root under every error the package raises: ``except NotebookAgentsError`` catches what
any part of it raises, and each error keeps the builtin base callers catch it by."""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import pkgutil
import re
import socket
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from livekit.agents import AgentServer, AgentSession, JobContext

import notebook_agents
from notebook_agents import (
    Emulator,
    LatencyModel,
    NotebookAgentsError,
    NotebookRunner,
    ReplyContext,
    ReplyRules,
    TimelineView,
    Trace,
    VerdictReply,
    WaterfallView,
    load_suite,
    run_benchmark,
)
from notebook_agents.analysis import handoff_phases
from notebook_agents.bench import BenchmarkConfig, BenchmarkResult, YourAgents
from notebook_agents.bench import cli as bench_cli
from notebook_agents.bench.your_agents import make_agent
from notebook_agents.emulator import Turn
from notebook_agents.races import RACES, run_race
from notebook_agents.speech import transcribe
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


class Allowed(NamedTuple):
    """A builtin exception the package may raise as it is: where, which, and why."""

    file: str
    function: str
    """the qualified name of the function raising it"""
    exception: str
    reason: str


ALLOWED_BUILTIN_RAISES = [
    Allowed(
        "notebook_agents/__init__.py",
        "__getattr__",
        "AttributeError",
        "a module's __getattr__ answers an unknown name as Python expects (hasattr, import)",
    ),
    Allowed(
        "notebook_agents/speech/__init__.py",
        "__getattr__",
        "AttributeError",
        "a module's __getattr__ answers an unknown name as Python expects (hasattr, import)",
    ),
    Allowed(
        "notebook_agents/runner/__init__.py",
        "__getattr__",
        "AttributeError",
        "a module's __getattr__ answers an unknown name as Python expects (hasattr, import)",
    ),
    Allowed(
        "notebook_agents/suites/expectations.py",
        "Expectation.check",
        "AssertionError",
        "a failed expectation is livekit's AssertionError, re-worded to name both classes",
    ),
    Allowed(
        "notebook_agents/suites/recording.py",
        "_no_constant",
        "ValueError",
        "control flow: json's parse_constant refusing NaN/Infinity, caught by the caller beside it",
    ),
    Allowed(
        "notebook_agents/views/_scenario_saving.py",
        "SavesScenarios._call_to_save",
        "NotImplementedError",
        "abstract: each view saving scenarios says which call it writes",
    ),
    Allowed(
        "notebook_agents/_deprecated.py",
        "moved_names.__getattr__",
        "AttributeError",
        "a module's __getattr__ answers an unknown name as Python expects (hasattr, import)",
    ),
    Allowed(
        "notebook_agents/runner/_carried_llm.py",
        "CarriedStream.__anext__",
        "StopAsyncIteration",
        "the end of an async iterator, as the protocol says",
    ),
    Allowed(
        "notebook_agents/emulator/replies.py",
        "_evaluate",
        "ValueError",
        "not arithmetic: control flow, caught by the arithmetic rule, which then does not answer",
    ),
    Allowed(
        "notebook_agents/emulator/replies.py",
        "ReplyRules.reply",
        "AssertionError",
        "an invariant: the echo rule, last, always answers",
    ),
    Allowed(
        "notebook_agents/runner/_spoken_turn.py",
        "SpokenTurn.outcome",
        "TimeoutError",
        "control flow: the voice turn catches it and raises the RunnerError saying why",
    ),
    Allowed(
        "notebook_agents/_displays.py",
        "view_of",
        "LookupError",
        "a result type with no view registered is the package's bug (the message names the "
        "file to register it in); mimebundle_of catches it to show the text instead",
    ),
    Allowed(
        "notebook_agents/runner/_core.py",
        "RunnerCore._carry",
        "RuntimeError",
        "control flow: _in_job turns it into the RunnerError naming the fix",
    ),
    Allowed(
        "notebook_agents/_livekit_internals.py",
        "set_context_before_start",
        "RuntimeError",
        "a precondition livekit has too: the bench sets the context of the agent handed to "
        "before it starts, and livekit refuses to start a running agent with a RuntimeError",
    ),
    Allowed(
        "notebook_agents/races/_harness.py",
        "Harness.session",
        "RuntimeError",
        "the harness is private to the package's own race cases: a case reading the session "
        "before starting it is the package's bug",
    ),
    Allowed(
        "notebook_agents/views/_assets.py",
        "asset",
        "FileNotFoundError",
        "a front-end file missing from the installed package is a broken install or build",
    ),
    *(
        Allowed(file, function, "NotImplementedError", "an adapter's method its class must define")
        for file, function in (
            ("notebook_agents/_lifecycle.py", "StartStop.start"),
            ("notebook_agents/_lifecycle.py", "StartStop.stop"),
            ("notebook_agents/runner/_core.py", "RunnerCore._typed_turn"),
            ("notebook_agents/runner/_job_observer.py", "JobObserver._carried_run"),
            ("notebook_agents/runner/_job_observer.py", "JobObserver._attach_voice"),
            ("notebook_agents/runner/_server_thread.py", "ServerThread._observed"),
            ("notebook_agents/runner/_server_thread.py", "ServerThread._give_up_in_job"),
            ("notebook_agents/runner/_server_thread.py", "ServerThread._release_job"),
            ("notebook_agents/views/_stream.py", "TraceFedView._take"),
            ("notebook_agents/views/_stream.py", "TraceFedView._flush"),
            ("notebook_agents/views/_stream.py", "TraceStreamView._record"),
        )
    ),
]
"""every builtin exception the package raises itself: internal control flow, protocols, and
invariants only a bug in the package reaches; anything raised at a caller derives from the
root"""

PACKAGE_SOURCES = [
    *sorted(Path(notebook_agents.__file__).parent.rglob("*.py")),
    Path(notebook_agents.__file__).parents[1] / "pytest_notebook_agents.py",
]
BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


class Raised(NamedTuple):
    file: str
    line: int
    function: str
    exception: str


def builtin_raises(path: Path) -> Iterator[Raised]:
    """Each ``raise`` in ``path`` of a builtin exception (``raise ValueError(...)``, ``raise
    KeyError``, ``raise asyncio.TimeoutError()``), with the function raising it."""
    file = path.relative_to(PACKAGE_SOURCES[-1].parent).as_posix()

    def walk(node: ast.AST, where: tuple[str, ...]) -> Iterator[Raised]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from walk(child, (*where, child.name))
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                raised = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                name = _builtin_exception(raised)
                if name is not None:
                    yield Raised(file, child.lineno, ".".join(where), name)
            yield from walk(child, where)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), ())


def _builtin_exception(node: ast.expr) -> str | None:
    """The builtin exception ``node`` names: a builtin's name, or a standard module's alias of
    one (``asyncio.TimeoutError`` is ``TimeoutError``)."""
    if isinstance(node, ast.Name):
        return node.id if node.id in BUILTIN_EXCEPTIONS else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id not in sys.stdlib_module_names:
            return None
        found = getattr(importlib.import_module(node.value.id), node.attr, None)
        if isinstance(found, type) and found.__name__ in BUILTIN_EXCEPTIONS:
            return found.__name__ if getattr(builtins, found.__name__) is found else None
    return None


def test_the_package_raises_no_builtin_exception_at_a_caller() -> None:
    found = [raised for path in PACKAGE_SOURCES for raised in builtin_raises(path)]
    allowed = {(a.file, a.function, a.exception) for a in ALLOWED_BUILTIN_RAISES}
    outside = [
        f"{r.file}:{r.line}: raise {r.exception} in {r.function or 'the module'}"
        for r in found
        if (r.file, r.function, r.exception) not in allowed
    ]
    assert outside == [], (
        "raise an error deriving from NotebookAgentsError (keeping this builtin as a base), "
        "or add it to ALLOWED_BUILTIN_RAISES with the reason it stays builtin"
    )
    stale = allowed - {(r.file, r.function, r.exception) for r in found}
    assert stale == set(), "these no longer raise it: take them off ALLOWED_BUILTIN_RAISES"
    # a walk that silently found nothing would pass the lines above
    assert len(found) >= len(ALLOWED_BUILTIN_RAISES)


def test_each_allowed_builtin_raise_says_why() -> None:
    for allowed in ALLOWED_BUILTIN_RAISES:
        assert allowed.reason.strip(), allowed


ERRORS_PAGE = Path(notebook_agents.__file__).parents[1] / "docs" / "reference" / "errors.md"


def test_the_errors_page_lists_every_error_the_package_exports() -> None:
    exported = {
        value
        for module in package_modules(notebook_agents, VIDEOSDK)
        if not any(part.startswith("_") for part in module.__name__.split("."))
        for value in (getattr(module, name) for name in getattr(module, "__all__", ()))
        if inspect.isclass(value) and issubclass(value, NotebookAgentsError)
    }
    page = ERRORS_PAGE.read_text(encoding="utf-8")
    # a row of the table links it, or the page shows it whole (the root)
    listed = set(re.findall(r"^\| \[(\w+)\]", page, re.MULTILINE))
    listed |= set(re.findall(r"^::: [\w.]+\.(\w+)$", page, re.MULTILINE))
    unlisted = sorted(_dotted(cls) for cls in exported if cls.__name__ not in listed)
    assert unlisted == [], "add a row for each to docs/reference/errors.md"
    assert len(exported) > 20  # the walk found the package's errors


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


def _bench_command_line(*flags: str) -> BenchmarkConfig:
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    return bench_cli.config_from_args(parser.parse_args(flags))


def _a_suites_unknown_label(tmp_path: Path) -> object:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - label: greeting\n    turns:\n      - user: hello\n")
    return load_suite(path)["farewell"]


async def _a_trace_attached_twice(_: Path) -> None:
    session: AgentSession[None] = AgentSession()
    Trace(session).attach(session)


def _a_rule_answering_a_verdict_to_the_agent(_: Path) -> object:
    def always_pass(ctx: ReplyContext) -> VerdictReply:
        return VerdictReply("pass")

    return ReplyRules([always_pass]).reply(ReplyContext("", [Turn("user", "hi")]))


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
    "a barge-in cue that is no moment of a reply": (
        lambda _: NotebookRunner(_server()).send_audio(np.zeros(160, np.int16), at=-1),
        "CueError",
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
    "a runner given something it cannot run": (
        lambda _: NotebookRunner(print),  # type: ignore[arg-type]
        "EntrypointError",
        TypeError,
    ),
    "a bench command line with a bad flag": (
        lambda _: _bench_command_line("--level", "galaxy"),
        "BenchmarkConfigError",
        ValueError,
    ),
    "a benchmark whose parts do not go together": (
        lambda _: run_benchmark(BenchmarkConfig(providers=["gemini"], levels=["session"])),
        "BenchmarkConfigError",
        ValueError,
    ),
    "your agents' factory making no Agent": (
        lambda _: make_agent(YourAgents(lambda: None, trigger="transfer me")),  # type: ignore[arg-type, return-value]
        "YourAgentsError",
        TypeError,
    ),
    "a view given the wrong source": (
        lambda _: TimelineView(NotebookRunner(_server())),  # type: ignore[arg-type]
        "ViewSourceError",
        TypeError,
    ),
    "a view asked for a wait it has not seen": (
        lambda _: WaterfallView(Trace()).to_figure(wait=3),
        "ViewArgumentError",
        ValueError,
    ),
    "a Trace attached twice": (_a_trace_attached_twice, "TraceAttachError", RuntimeError),
    "a Trace given a model server that is none": (
        lambda _: Trace(model_server=object()),  # type: ignore[arg-type]
        "TraceArgumentError",
        TypeError,
    ),
    "an OTLP endpoint that is no URL": (
        lambda _: Trace().send_otlp("localhost:4318"),
        "OTLPEndpointError",
        ValueError,
    ),
    "a latency that is no LatencyModel": (
        lambda _: handoff_phases(Trace(), latency=20),  # type: ignore[arg-type]
        "LatencyArgumentError",
        TypeError,
    ),
    "a suite's unknown label": (_a_suites_unknown_label, "UnknownScenarioError", KeyError),
    "a race on a provider it does not run on": (
        lambda _: run_race(RACES["late_tool_ack"], provider="gemini"),
        "RaceProviderError",
        ValueError,
    ),
    "a reply built wrong": (
        lambda _: VerdictReply("yes"),  # type: ignore[arg-type]
        "ReplyError",
        ValueError,
    ),
    "a reply rule answering with the wrong kind of reply": (
        _a_rule_answering_a_verdict_to_the_agent,
        "ReplyRuleError",
        TypeError,
    ),
    "audio heard at no rate": (
        lambda _: transcribe(np.zeros(160, np.int16), 0),
        "SampleRateError",
        ValueError,
    ),
    "tool names given as one string": (
        lambda _: transcribe(np.zeros(160, np.int16), 16000, "transfer_to_billing"),
        "VocabularyError",
        TypeError,
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
