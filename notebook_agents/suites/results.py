"""What a suite run gives: a verdict per scenario (livekit's ``SimulationVerdict``), the first
failing expectation, the time it took and its ``Trace``: plain data, shown as a table in a
notebook by the view named for it (``SuiteView``, in ``_displays``).

A scenario run k times (``repeat``) is one result holding its k runs: it passed if every run
passed (pass^k), it passed at k (``pass_at_k``) if one did, and it is flaky if some did and
some did not.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from livekit.agents import RunResult
from livekit.agents.evals import JudgmentResult
from livekit.agents.simulation import SimulationVerdict

from .._displays import mimebundle_of, view_of
from ..trace import Trace
from .suite_file import UnknownScenarioError


class Outcome(str, enum.Enum):
    """How a scenario came out; only ``passed`` is a pass."""

    PASSED = "passed"
    FAILED = "failed"
    """an expectation did not hold, or the server's ``on_simulation_end`` vetoed the run"""
    ERROR = "error"
    """the agent could not run the scenario (it failed to start, a turn went wrong)"""
    NOT_RUNNABLE = "not runnable"
    """nothing here can play or judge it (a simulated user, a judge model, spoken turns in a
    real room): ``reason`` says"""


class CallEnd(str, enum.Enum):
    """How a simulated call ended: LiveKit's simulator's end reasons (its
    ``SimulationRun.JobMetrics.EndReason``) that a call played here can have."""

    SCENARIO_COMPLETED = "scenario completed"
    """the caller ended it (``end_call``): the conversation reached its natural end"""
    AGENT_ENDED = "agent ended"
    """the agent ended it: its session closed on its own (livekit's ``EndCallTool``)"""
    TURN_LIMIT = "turn limit"
    """the caller had spoken ``max_turns`` times and would have gone on"""


@dataclass
class SimulatedCall:
    """A scenario with only ``instructions`` played by a simulated caller: what was said, how
    it ended, and the judge's verdict on its ``agent_expectations``."""

    lines: list[tuple[Literal["agent", "caller"], str]] = field(default_factory=list)
    """who said what, in order (the agent's greeting first, if it greets)"""
    ended: CallEnd | None = None
    """how it ended (None: it did not, the call went wrong)"""
    judgment: JudgmentResult | None = None
    """livekit's judgment of the whole call against ``agent_expectations``"""

    @property
    def transcript(self) -> str:
        """The call as text, a line per turn: ``caller: ...`` / ``agent: ...``."""
        return "\n".join(f"{who}: {text}" for who, text in self.lines)


@dataclass
class ScenarioResult:
    """One scenario's run: its outcome and why, its timing, its turns and its trace."""

    label: str
    outcome: Outcome
    reason: str = ""
    """why it did not pass: the failing expectation and livekit's message, the error, or
    what it needs to run; "" when it passed"""
    expectation: str = ""
    """the first expectation that failed, as written"""
    turn: int | None = None
    """the index of the turn it failed in"""
    seconds: float = 0.0
    """wall time, the agent's start and stop included"""
    trace: Trace | None = None
    """every event of the scenario's session, for the views (None if it never ran)"""
    results: list[RunResult[Any]] = field(default_factory=list)
    """livekit's ``RunResult`` of each turn that ran"""
    simulator_verdict: SimulationVerdict | None = None
    """the suite's verdict, given to the server's ``on_simulation_end`` as the simulator's"""
    user_verdict: SimulationVerdict | None = None
    """the veto ``on_simulation_end`` set with ``ctx.fail``, if it did"""
    call: SimulatedCall | None = None
    """the simulated caller's call, for a scenario with only ``instructions``"""
    runs: list[ScenarioResult] = field(default_factory=list)
    """each run of a scenario run more than once (``repeat``), in the order they began; this
    result is then the first of them that did not pass (its outcome, reason, turn, trace),
    else the first, and its ``seconds`` theirs in all. [] for a scenario run once"""

    @classmethod
    def of_runs(cls, runs: list[ScenarioResult]) -> ScenarioResult:
        """One scenario's result from its ``runs`` (see ``runs``): a single run is its own,
        and runs that could not run are one not runnable (nothing was repeated)."""
        if len(runs) == 1 or all(run.outcome is Outcome.NOT_RUNNABLE for run in runs):
            return runs[0]
        shown = next((run for run in runs if not run.passed), runs[0])
        return dataclasses.replace(shown, runs=list(runs), seconds=sum(run.seconds for run in runs))

    @property
    def passed(self) -> bool:
        """It passed, every run of it when it ran more than once (pass^k)."""
        return self.outcome is Outcome.PASSED

    @property
    def repeats(self) -> int:
        """How many times it ran (k)."""
        return len(self.runs) or 1

    @property
    def passes(self) -> int:
        """How many of its runs passed."""
        return sum(run.passed for run in self.runs) if self.runs else int(self.passed)

    @property
    def pass_at_k(self) -> bool:
        """At least one of its k runs passed (pass@k; with k = 1, that it passed)."""
        return self.passes > 0

    @property
    def flaky(self) -> bool:
        """Some of its runs passed and some did not: the same scenario, two verdicts."""
        return 0 < self.passes < self.repeats

    @property
    def repetition(self) -> str:
        """Its runs as the table says them, ``"4/5 passed · flaky"``; "" when it ran once."""
        if not self.runs:
            return ""
        return f"{self.passes}/{self.repeats} passed" + (" · flaky" if self.flaky else "")

    @property
    def verdict(self) -> SimulationVerdict:
        """The effective verdict, as livekit's: the suite's AND ``on_simulation_end``'s."""
        return SimulationVerdict(success=self.passed, reason=self.reason)

    def row(self) -> dict[str, Any]:
        """The table's row: plain values, as the widget shows them."""
        return {
            "label": self.label,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "expectation": self.expectation,
            "turn": self.turn,
            "seconds": round(self.seconds, 3),
            "runs": self.repetition,
            "flaky": self.flaky,
        }


@dataclass
class SuiteResult:
    """Each scenario's result, in the file's order; ``result["label"]`` finds one."""

    name: str
    scenarios: list[ScenarioResult] = field(default_factory=list)

    def __getitem__(self, label: str) -> ScenarioResult:
        for scenario in self.scenarios:
            if scenario.label == label:
                return scenario
        labels = [s.label for s in self.scenarios]
        raise UnknownScenarioError(f"no scenario labelled {label!r}; there are {labels}")

    def __iter__(self) -> Iterator[ScenarioResult]:
        return iter(self.scenarios)

    def __len__(self) -> int:
        return len(self.scenarios)

    @property
    def passed(self) -> bool:
        """Every scenario passed, each of its runs (a scenario that could not run is no
        pass)."""
        return bool(self.scenarios) and all(s.passed for s in self.scenarios)

    @property
    def flaky(self) -> list[ScenarioResult]:
        """The scenarios some runs of which passed and some did not, in the file's order."""
        return [s for s in self.scenarios if s.flaky]

    @property
    def repeated(self) -> bool:
        """Whether any scenario ran more than once (the table then says how each did)."""
        return any(s.runs for s in self.scenarios)

    def counts(self) -> dict[str, int]:
        """How many scenarios came out each way."""
        counts = {outcome.value: 0 for outcome in Outcome}
        for scenario in self.scenarios:
            counts[scenario.outcome.value] += 1
        return counts

    def summary(self) -> str:
        """Its name and how many scenarios came out each way (and were flaky), as the table,
        its picture and its text head it: ``"Booking: 1 passed, 1 error (1 flaky)"``."""
        counts = ", ".join(f"{n} {what}" for what, n in self.counts().items() if n)
        flaky = f" ({len(self.flaky)} flaky)" if self.flaky else ""
        return f"{self.name}: {counts or 'no scenarios'}{flaky}"

    def view(self) -> Any:
        """The table widget, a row per scenario; clicking a row shows its timeline
        (``notebook_agents.views.SuiteView``, registered for it)."""
        return view_of(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return mimebundle_of(self, **kwargs)

    def __repr__(self) -> str:
        lines = [self.summary()]
        for s in self.scenarios:
            runs = f", {s.repetition}" if s.runs else ""
            why = f": {s.reason.splitlines()[0]}" if s.reason else ""
            lines.append(f"  {s.outcome.value:<12} {s.label} ({s.seconds:.2f} s{runs}){why}")
        return "\n".join(lines)
