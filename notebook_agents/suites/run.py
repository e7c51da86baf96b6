"""Run a scenario suite against the user's ``AgentServer`` (or any ``AgentRunner`` a function
makes, e.g. a ``VideoSDKRunner``): each scenario on a fresh runner (a fresh job and session),
its turns through ``runner.run`` / ``run_audio``, its expectations on livekit's ``RunResult``,
then the server's ``on_simulation_end`` as LiveKit's simulator calls it, so the server's own
veto (``ctx.fail``) counts.

A server's job is a simulation job as LiveKit's simulator dispatches one (the
``lk.simulator.dispatch`` attribute), so ``ctx.simulation_context()`` in the entrypoint gives
the scenario and its ``userdata``, e.g. to seed mocks. Those two are livekit's simulator hooks:
a runner a function made runs its own job, and neither applies.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from google.protobuf import json_format
from livekit.agents import Agent, AgentServer, JobContext, RunResult
from livekit.agents.llm import LLM
from livekit.agents.simulation import (
    SimulationContext,
    SimulationDispatch,
    SimulationMode,
    SimulationVerdict,
)
from livekit.agents.types import ATTRIBUTE_SIMULATOR_DISPATCH

from .. import _livekit_internals as livekit
from ..errors import NotebookAgentsError
from ..runner import AgentRunner, NotebookRunner, RunnerError, RunnerState
from ..runner.notebook_runner import Entrypoint
from .agent_names import AgentNames
from .expectations import JUDGE_MODEL, ExpectationError
from .results import Outcome, ScenarioResult, SuiteResult
from .simulated_caller import MAX_TURNS, checked_caller, checked_max_turns, not_simulated, play_call
from .suite_file import ScenarioSuite, ScriptedScenario, Turn, load_suite, repeat_refused

_SIMULATION_END_S = 30.0
"""``on_simulation_end`` gets this long, as a turn does by default"""


ServerSource = AgentServer | Entrypoint | Callable[[], AgentServer | AgentRunner]
"""an ``AgentServer``, its entrypoint, or a function making the server or a runner (a fresh
one, with fresh models, for each scenario): any ``AgentRunner``, e.g. ``lambda:
VideoSDKRunner(entrypoint, emulator=emu)``"""
_SHAPES = (
    "pass the server, its entrypoint, or a function making the server or a fresh runner "
    "(e.g. lambda: VideoSDKRunner(entrypoint)) per scenario"
)


class _TakesBargeIn(Protocol):
    """A runner that takes spoken turns over the agent's reply (``NotebookRunner``): its
    ``run_audio`` takes ``at=`` (``_unspoken`` checks)."""

    async def run_audio(
        self,
        audio: os.PathLike[str],
        rate: int | None = None,
        timeout: float = 30.0,
        *,
        at: float | None = None,
    ) -> RunResult[Any]: ...


@runtime_checkable
class _TakesSpeech(Protocol):
    """A runner that takes spoken turns (``NotebookRunner``, ``VideoSDKRunner``)."""

    async def run_audio(
        self, audio: os.PathLike[str], rate: int | None = None, timeout: float = 30.0
    ) -> RunResult[Any]: ...


async def run_suite(
    suite: ScenarioSuite | str | os.PathLike[str],
    server: ServerSource,
    *,
    judge_llm: LLM[Any] | None = None,
    caller_llm: LLM[Any] | None = None,
    max_turns: int = MAX_TURNS,
    on_result: Callable[[ScenarioResult], object] | None = None,
    repeat: int | None = None,
    concurrency: int = 1,
) -> SuiteResult:
    """Run each scenario of ``suite`` (a scenarios file, or ``load_suite``'s) on a fresh
    session of ``server``; returns their results in the file's order (shown as a table).

    A model made once outside the entrypoint serves one job only (livekit keeps the first
    job's HTTP session in it): pass a function making the server, ``make_server``, and each
    scenario gets its own. A function making a runner (``lambda: VideoSDKRunner(entrypoint,
    emulator=emu)``) runs each scenario on the runner it makes: ``new_agent_type=`` then names
    its framework's agents (``agent_base``), and livekit's simulator hooks (the simulation
    dispatch, ``on_simulation_end``) do not apply.

    ``repeat`` runs every scenario that many times (else each its own ``repeat:``, once by
    default), each run on a fresh agent: a scenario passes if every run did, and says how
    many did and whether it is flaky (``ScenarioResult.passes``, ``.flaky``, ``.pass_at_k``).
    ``concurrency`` runs up to that many at once, each on its own runner and job in this
    process (one at a time by default); it needs a function making the server (or a runner,
    or the entrypoint), since one ``AgentServer`` runs one job here. A scenario's own error
    is its result and the others go on; a mistake of the suite's (a name in the file, what
    ``server`` made) stops the run, as it would one at a time.

    ``judge_llm`` is the model ``judge(llm, intent=...)`` expectations and
    ``agent_expectations`` are judged by. ``caller_llm`` plays the caller of a scenario with
    only ``instructions`` (LiveKit's simulated user; any livekit ``LLM``, e.g. ``openai.LLM(
    model=..., base_url=...)``), at most ``max_turns`` turns of its own, until it ends the call
    (``simulated_caller``). A scenario that needs a model it was not given is ``not
    runnable``, never a pass. ``on_result`` is called with each scenario's result (all its
    runs) as it comes. A ``caller_llm`` or ``max_turns`` that cannot be is a ``CallerError``
    before anything runs.
    """
    loaded = suite if isinstance(suite, ScenarioSuite) else load_suite(suite)
    run = SuiteRun(loaded, repeat=repeat, concurrency=concurrency)
    return await run.every_scenario(
        server,
        judge_llm=judge_llm,
        caller_llm=caller_llm,
        max_turns=max_turns,
        on_result=on_result,
    )


class SuiteArgumentError(NotebookAgentsError, ValueError):
    """``run_suite`` (or ``SuiteRun``) given a ``repeat=`` or ``concurrency=`` it cannot use:
    the message gives the range."""


class SuiteRun:
    """One run of ``suite``: how ``run_suite`` and the pytest plugin both run a scenario, so
    each gives it the same verdict (a simulation job of this run, its ``userdata``, the
    server's ``on_simulation_end``), and the same runs of it (``repeat``) at once
    (``concurrency``)."""

    def __init__(
        self, suite: ScenarioSuite, *, repeat: int | None = None, concurrency: int = 1
    ) -> None:
        if repeat is not None and (why := repeat_refused(repeat)):
            raise SuiteArgumentError(f"repeat= {why}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise SuiteArgumentError(
                f"concurrency= is how many scenarios run at once, a whole number from 1 (e.g. "
                f"2, one per core), not {concurrency!r}"
            )
        self.suite = suite
        self.repeat = repeat
        """runs of every scenario, over each one's ``repeat:`` (None: each its own)"""
        self.concurrency = concurrency
        self.run_id = _new_run_id()
        """the simulation run every scenario's job is dispatched in, as LiveKit's simulator
        names one"""
        self._agents: AgentNames | None = None
        self._serving: set[AgentServer] = set()
        """the servers running a scenario now: one runs one job here"""

    def repeats(self, scenario: ScriptedScenario) -> int:
        """How many times ``scenario`` runs."""
        return self.repeat or scenario.repeat

    async def scenario(
        self,
        scenario: ScriptedScenario,
        server: ServerSource,
        *,
        judge_llm: LLM[Any] | None = None,
        caller_llm: LLM[Any] | None = None,
        max_turns: int = MAX_TURNS,
    ) -> ScenarioResult:
        """``scenario``, each of its runs on what ``server`` makes for it (see
        ``run_suite``), up to ``concurrency`` at once; a ``caller_llm`` or ``max_turns`` that
        cannot be is a ``CallerError`` before anything runs."""
        self._check_source(server)
        calls = _Calls(judge_llm, checked_caller(caller_llm), checked_max_turns(max_turns))
        slots = asyncio.Semaphore(self.concurrency)
        return await self._repeated(scenario, server, calls, slots)

    async def every_scenario(
        self,
        server: ServerSource,
        *,
        judge_llm: LLM[Any] | None = None,
        caller_llm: LLM[Any] | None = None,
        max_turns: int = MAX_TURNS,
        on_result: Callable[[ScenarioResult], object] | None = None,
    ) -> SuiteResult:
        """Every scenario of the suite (see ``run_suite``), up to ``concurrency`` runs at once
        across them, begun in the file's order; their results in that order."""
        self._check_source(server)
        calls = _Calls(judge_llm, checked_caller(caller_llm), checked_max_turns(max_turns))
        slots = asyncio.Semaphore(self.concurrency)  # of this loop: made on it, per call

        async def reported(scenario: ScriptedScenario) -> ScenarioResult:
            result = await self._repeated(scenario, server, calls, slots)
            if on_result is not None:
                on_result(result)
            return result

        done = await _together([reported(scenario) for scenario in self.suite.scenarios])
        return SuiteResult(self.suite.name, done)

    def _check_source(self, server: ServerSource) -> None:
        if isinstance(server, AgentServer) and self.concurrency > 1:
            raise RunnerError(
                f"concurrency={self.concurrency} needs a fresh AgentServer for each scenario "
                "(one server runs one job here): pass the function making it, "
                "run_suite(..., make_server, concurrency=2)"
            )

    async def _repeated(
        self,
        scenario: ScriptedScenario,
        server: ServerSource,
        calls: _Calls,
        slots: asyncio.Semaphore,
    ) -> ScenarioResult:
        async def once() -> ScenarioResult:
            async with slots:  # waiters are woken first come first served: the file's order
                return await self._once(scenario, server, calls)

        runs = await _together([once() for _ in range(self.repeats(scenario))])
        return ScenarioResult.of_runs(runs)

    async def _once(
        self, scenario: ScriptedScenario, server: ServerSource, calls: _Calls
    ) -> ScenarioResult:
        made = _made(server)
        if self._agents is None:  # before anything runs: the first one made says whose agents
            self._agents = _agents_named(self.suite, made)
        serving = made if isinstance(made, AgentServer) else None
        if serving is not None:
            if serving in self._serving:
                raise RunnerError(
                    "the function given as the server returned a server already running "
                    "another scenario (one server runs one job here): make a new AgentServer "
                    "in each call"
                )
            self._serving.add(serving)
        try:
            return await run_scenario(
                scenario,
                made,
                agents=self._agents,
                judge_llm=calls.judge_llm,
                caller_llm=calls.caller_llm,
                max_turns=calls.max_turns,
                run_id=self.run_id,
            )
        finally:
            if serving is not None:
                self._serving.discard(serving)


@dataclass(frozen=True)
class _Calls:
    """The models a scenario's run is given, checked once for all its runs."""

    judge_llm: LLM[Any] | None
    caller_llm: LLM[Any] | None
    max_turns: int


_Done = TypeVar("_Done")


async def _together(runs: list[Coroutine[Any, Any, _Done]]) -> list[_Done]:
    """Each of ``runs`` as a task of this loop; their results in order. The first to raise
    cancels the others (each stops what it started) and its error is raised, as it would have
    been one after another; so does a cancel of the caller."""
    tasks = [asyncio.ensure_future(run) for run in runs]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()  # none if all are done
        await asyncio.gather(*tasks, return_exceptions=True)
    raised = [task for task in tasks if not task.cancelled() and task.exception() is not None]
    if raised:
        raise cast(BaseException, raised[0].exception())
    return [task.result() for task in tasks]


async def run_scenario(
    scenario: ScriptedScenario,
    server: AgentServer | AgentRunner,
    *,
    agents: AgentNames,
    judge_llm: LLM[Any] | None = None,
    caller_llm: LLM[Any] | None = None,
    max_turns: int = MAX_TURNS,
    run_id: str = "",
) -> ScenarioResult:
    """One scenario on a fresh runner of ``server`` (or on ``server``, a runner not started
    yet): started, its turns run and checked (or, with only ``instructions``, its call played
    by ``caller_llm`` and judged), a server's ``on_simulation_end`` called, stopped.
    ``agents`` says what its ``new_agent_type=`` names mean (``_agents_named``); its job is a
    simulation job of the run ``run_id`` (of one of its own if "")."""
    began = time.perf_counter()
    result = ScenarioResult(scenario.label, Outcome.PASSED)
    why_not = _not_runnable(scenario, judge_llm, caller_llm)
    if why_not:
        result.outcome, result.reason = Outcome.NOT_RUNNABLE, why_not
        return result
    spoken = any(turn.spoken for turn in scenario.turns)
    runner = (
        _ScenarioRunner(server, _dispatch(scenario, run_id, spoken), audio=spoken)
        if isinstance(server, AgentServer)
        else server
    )
    why_not = _unspoken(runner, scenario) if spoken else ""
    if why_not:
        result.outcome, result.reason = Outcome.NOT_RUNNABLE, why_not
        return result
    result.trace = runner.trace
    try:
        runner.start()
        await runner.ready()
        if scenario.turns:
            await _play(runner, scenario, result, agents, judge_llm)
        else:  # only `instructions`: checked runnable above, so both models are given
            assert caller_llm is not None and judge_llm is not None
            await play_call(
                runner,
                scenario,
                result,
                caller_llm=caller_llm,
                judge_llm=judge_llm,
                max_turns=max_turns,
            )
        if isinstance(runner, _ScenarioRunner):
            await runner.simulation_end(result)
    except (RunnerError, ExpectationError) as e:
        result.outcome, result.reason = Outcome.ERROR, str(e)
    finally:
        try:
            runner.stop()
        except RunnerError as e:  # a job that would not end: this scenario's error alone
            result.outcome = Outcome.ERROR
            result.reason = "; ".join(filter(None, [result.reason, f"stopping: {e}"]))
        result.seconds = time.perf_counter() - began
    return result


async def _play(
    runner: AgentRunner,
    scenario: ScriptedScenario,
    result: ScenarioResult,
    agents: AgentNames,
    judge_llm: LLM[Any] | None,
) -> None:
    """The turns in order, each checked as it ends; the first failure ends the scenario (a
    failed assert ends a livekit eval). A turn the next one speaks over (its ``at:``) runs
    alongside it, once any greeting is over: the barge-in waits for its reply."""
    turns = scenario.turns
    taking: list[asyncio.Future[RunResult[Any]]] = []  # each turn's, as started
    try:
        for index, turn in enumerate(turns):
            spoken_over = index + 1 < len(turns) and turns[index + 1].at is not None
            if index == len(taking):  # not started beside the turn before
                if spoken_over:
                    await runner.greeting()  # the reply spoken over is this turn's
                taking.append(asyncio.ensure_future(_take(runner, turn)))
            if spoken_over:
                taking.append(asyncio.ensure_future(_take(runner, turns[index + 1])))
            if not await _checked_turn(scenario, index, taking[index], result, agents, judge_llm):
                return
    finally:
        for left in taking:
            left.cancel()
        await asyncio.gather(*taking, return_exceptions=True)


async def _checked_turn(
    scenario: ScriptedScenario,
    index: int,
    taking: asyncio.Future[RunResult[Any]],
    result: ScenarioResult,
    agents: AgentNames,
    judge_llm: LLM[Any] | None,
) -> bool:
    """Turn ``index``'s run (``taking``) checked: whether the scenario goes on."""
    turn = scenario.turns[index]
    try:
        run = await taking
    except RunnerError as e:
        result.outcome, result.turn = Outcome.ERROR, index
        result.reason = f"turn {index} ({turn.said}): {e}"
        return False
    result.results.append(run)
    for number, expectation in enumerate(turn.expect):
        # what its names mean once the turn has run: the classes the scenario ran first
        at = agents.at(scenario, index, number)
        classes = agents.classes(expectation, at, result.results)
        try:
            await expectation.check(run, classes, judge_llm)
        except AssertionError as e:
            result.outcome, result.turn = Outcome.FAILED, index
            result.expectation = expectation.text
            result.reason = f"turn {index} ({turn.said}): {expectation.text}\n{e}"
            return False
    return True


async def _take(runner: AgentRunner, turn: Turn) -> RunResult[Any]:
    if turn.audio is not None and turn.conditions is not None:
        assert isinstance(runner, NotebookRunner)  # else the scenario is not runnable
        return await runner.run_audio(
            turn.audio, timeout=turn.timeout, conditions=turn.conditions, at=turn.at
        )
    if turn.at is not None:
        assert turn.audio is not None  # the file's reader refuses `at:` without `audio:`
        taker = cast(_TakesBargeIn, runner)  # else the scenario is not runnable
        return await taker.run_audio(turn.audio, timeout=turn.timeout, at=turn.at)
    if turn.audio is not None:
        assert isinstance(runner, _TakesSpeech)  # else the scenario is not runnable
        return await runner.run_audio(turn.audio, timeout=turn.timeout)
    assert turn.user is not None
    return await runner.run(turn.user, timeout=turn.timeout)


def _not_runnable(
    scenario: ScriptedScenario, judge_llm: LLM[Any] | None, caller_llm: LLM[Any] | None
) -> str:
    """Why this scenario cannot run here, or ""."""
    if not scenario.turns:
        if scenario.scenario.instructions:
            return not_simulated(scenario, caller_llm, judge_llm)
        return "it has no `turns:`: script what the user says and `expect:` of each turn"
    if not scenario.expectations:
        return "nothing to check: give its turns an `expect:` list"
    if judge_llm is None:
        for expectation in scenario.expectations:
            if expectation.needs_judge:
                return (
                    f"{expectation.text!r} judges with a model: run it with one, "
                    f"run_suite(..., judge_llm=openai.LLM(...)) (the `{JUDGE_MODEL}` it names)"
                )
    return ""


def _unspoken(runner: AgentRunner, scenario: ScriptedScenario) -> str:
    """Why ``runner`` cannot take the scenario's spoken turns, or ""."""
    if not isinstance(runner, NotebookRunner) and any(t.conditions for t in scenario.turns):
        return (
            "its spoken turns cross line conditions (`conditions:`), which a NotebookRunner "
            f"applies; a {type(runner).__name__} does not: run it on a NotebookRunner, or "
            "take `conditions:` off"
        )
    if isinstance(runner, NotebookRunner) and runner.credentials is not None:
        # run_audio's microphone is offline only
        return (
            "its spoken turns play through the offline session's microphone, and with "
            f"{runner.credentials.url_setting} set it would join a real room, where nothing "
            f"says them: {runner.credentials.offline_hint}"
        )
    if not isinstance(runner, _TakesSpeech):
        return (
            "its spoken turns need a runner that takes them (run_audio): "
            f"{type(runner).__name__} takes typed turns only"
        )
    barge_in = any(turn.at is not None for turn in scenario.turns)
    if barge_in and "at" not in inspect.signature(runner.run_audio).parameters:
        return (
            "its `at:` turns speak over the agent's reply, which a NotebookRunner(..., "
            f"audio=True) does: {type(runner).__name__} takes spoken turns only once the "
            "agent is quiet"
        )
    return ""


def _made(source: ServerSource) -> AgentServer | AgentRunner:
    """What a scenario runs on: the server ``source``, or the server or the fresh runner it
    makes."""
    if isinstance(source, AgentServer) or asyncio.iscoroutinefunction(source):
        return NotebookRunner(source).server  # the runner's own check of what it runs
    if callable(source):
        made = cast(Callable[[], object], source)()
        if isinstance(made, AgentRunner):
            if made.state is not RunnerState.NEW:
                raise RunnerError(
                    f"the function given as the server returned a runner that is "
                    f"{made.state.value}: make a fresh runner for each scenario"
                )
            return made
        if not isinstance(made, AgentServer):
            raise RunnerError(
                f"the function given as the server returned {type(made).__name__}, not an "
                f"AgentServer or a runner: {_SHAPES}"
            )
        return NotebookRunner(made).server
    raise RunnerError(
        f"run_suite needs an AgentServer, its entrypoint, or a function making the server or "
        f"a runner, not {type(source).__name__}: {_SHAPES}"
    )


def _agents_named(suite: ScenarioSuite, made: AgentServer | AgentRunner) -> AgentNames:
    """What the suite's ``new_agent_type=`` names mean: livekit's ``Agent``s, or those of
    the framework of the runner ``made`` (its ``agent_base``); checked before anything runs,
    resolved as each expectation is checked."""
    return AgentNames(suite, made.agent_base if isinstance(made, AgentRunner) else Agent)


def _new_run_id() -> str:
    """A simulation run's id: livekit's ``ctx.simulation_context()`` is None without one."""
    return f"notebook-{uuid.uuid4().hex[:8]}"


def _dispatch(scenario: ScriptedScenario, run_id: str, spoken: bool) -> SimulationDispatch:
    """What LiveKit's simulator dispatches a job with: the run (one of its own if ``run_id`` is
    ""), the job and the scenario."""
    run_id = run_id or _new_run_id()
    mode = SimulationMode.SIMULATION_MODE_AUDIO if spoken else SimulationMode.SIMULATION_MODE_TEXT
    return SimulationDispatch(
        simulation_run_id=run_id,
        job_id=f"{run_id}-{uuid.uuid4().hex[:6]}",
        scenario=scenario.scenario,
        mode=mode,
    )


class _ScenarioRunner(NotebookRunner):
    """A runner whose job is a simulation job of one scenario (as LiveKit's simulator
    dispatches it), and which calls the server's ``on_simulation_end`` when it is over."""

    def __init__(self, server: AgentServer, dispatch: SimulationDispatch, **options: Any) -> None:
        super().__init__(server, **options)
        self.dispatch = dispatch

    def _observed(self, entrypoint: Entrypoint) -> Entrypoint:
        attributes = {ATTRIBUTE_SIMULATOR_DISPATCH: json_format.MessageToJson(self.dispatch)}

        @functools.wraps(entrypoint)
        async def simulated(ctx: JobContext) -> None:
            # read lazily by ctx.simulation_context(), as from a job LiveKit dispatched
            ctx.job.attributes.update(attributes)
            await entrypoint(ctx)

        return super()._observed(simulated)

    async def simulation_end(self, result: ScenarioResult) -> None:
        """Hand the suite's verdict to ``on_simulation_end`` as the simulator's; its veto
        fails the scenario (livekit's effective verdict is the AND of both)."""
        verdict = SimulationVerdict(success=result.passed, reason=result.reason)
        result.simulator_verdict = verdict
        ctx = self._ctx
        if ctx is None or livekit.simulation_end_callback(ctx) is None:
            return
        try:
            vetoed = await self._simulation_ended(ctx, verdict)
        except RunnerError:
            raise
        except Exception as e:
            raise RunnerError(f"on_simulation_end raised {e!r}") from e
        result.user_verdict = vetoed
        if vetoed is not None and result.passed:
            result.outcome = Outcome.FAILED
            result.reason = f"on_simulation_end: {vetoed.reason or 'ctx.fail() without a reason'}"

    async def _simulation_ended(
        self, ctx: JobContext, verdict: SimulationVerdict
    ) -> SimulationVerdict | None:
        """``on_simulation_end``'s veto: in the job while it runs; once the agent has hung up
        (livekit's EndCallTool: the runner has ended, or the job, ending, cancelled it) here,
        in the job's context (``get_job_context()`` works in it), as what is sent to a job's
        loop while it closes may never run (a CI run waited its 30 s for it)."""
        late = f"on_simulation_end did not return within {_SIMULATION_END_S:.0f} s"
        try:
            work = self._in_job(_simulation_ended(ctx, verdict), "on_simulation_end")
        except RunnerError:
            if self.state is not RunnerState.ENDED:
                raise
        else:
            waiting = asyncio.wrap_future(work)
            if not (await asyncio.wait({waiting}, timeout=_SIMULATION_END_S))[0]:
                work.cancel()
                raise RunnerError(late)
            if not waiting.cancelled():  # else the job ended with the call under it
                return waiting.result()
        assert self._job_context is not None  # the job began: ctx is its
        here = self._job_context.run(asyncio.ensure_future, _simulation_ended(ctx, verdict))
        try:
            return await asyncio.wait_for(here, _SIMULATION_END_S)
        except asyncio.TimeoutError:
            raise RunnerError(late) from None


async def _simulation_ended(
    ctx: JobContext, verdict: SimulationVerdict
) -> SimulationVerdict | None:
    """In the job, as livekit's ``SessionHost`` finalizes a simulation (or here, once the job
    ended with a call the agent hung up): the callback reads the verdict from the job's
    ``SimulationContext``; returns its veto."""
    simulation: SimulationContext | None = ctx.simulation_context()
    callback = livekit.simulation_end_callback(ctx)
    if simulation is None or callback is None:
        return None
    livekit.finalize_simulation(simulation, verdict)
    returned = callback(simulation)
    if asyncio.iscoroutine(returned):
        await returned
    return simulation.user_verdict
