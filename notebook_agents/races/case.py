"""A handoff race as a runnable case: the agents it runs, what triggers it, how it is detected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..emulator import LatencyModel, Rule
from ..errors import NotebookAgentsError
from ..trace import Trace
from ..trace.marks import TimelineMark

if TYPE_CHECKING:
    from ._harness import Harness

RaceProvider = Literal["openai", "gemini"]


class RaceProviderError(NotebookAgentsError, ValueError):
    """A race case asked for on a provider it does not run on (``RaceCase.providers``): the
    message says why it runs on those only."""


class RaceMark(TimelineMark):
    """A moment of a run its verdict rests on, marked on the timeline
    (``TimelineView(run.trace, run.latency, marks=run.verdict.marks)``); ``race`` False: what
    shows the race did not happen (the mark's ``problem``)."""

    def __init__(
        self, t: float, agent: str, label: str, detail: str = "", race: bool = True
    ) -> None:
        super().__init__(t, agent, label, detail, race)

    @property
    def race(self) -> bool:
        """True: where the race shows; False: what shows it did not happen"""
        return self.problem


@dataclass(frozen=True)
class RaceVerdict:
    """Whether the race happened in one run, and what in the run shows it."""

    happened: bool
    summary: str
    """one line: what happened (or that it did not)"""
    evidence: tuple[str, ...] = ()
    """the trace's events and spans, the wire's events and livekit's logged problems it read"""
    seqs: tuple[int, ...] = ()
    """the trace events the verdict rests on (``TraceEvent.seq``), to find on the timeline"""
    marks: tuple[RaceMark, ...] = ()
    """where the timeline shows what went wrong (or, not happened, what went right)"""

    def __bool__(self) -> bool:
        return self.happened


@dataclass(frozen=True)
class WireEvent:
    """A client event a realtime session sent, on the trace's clock."""

    t: float
    session: int
    """which realtime session sent it: 0 for the first the run opened, 1 for the next..."""
    type: str
    item_type: str | None = None
    """a ``conversation.item.create``'s item type (``function_call_output``...)"""
    # OpenAI: the client events the plugin queued; Gemini: the client messages the emulator
    # received (``clientContent``, ``toolResponse``...), dated when sent


@dataclass(frozen=True)
class LoggedProblem:
    """A warning or error livekit logged during the run, or an exception a step raised."""

    t: float
    level: str
    message: str


@dataclass
class RaceRun:
    """One run of a race case: its trace (shown by ``TimelineView(run.trace, run.latency,
    marks=run.verdict.marks)``), what else it recorded, and the detector's verdict."""

    case: RaceCase
    triggered: bool
    """False for the control run: the case without what triggers the race"""
    trace: Trace
    latency: LatencyModel
    """the emulator's network for the run: the timeline's handoff phases' truths"""
    settings: dict[str, str]
    """the emulator's per-connection settings the run used (latency and faults)"""
    problems: list[LoggedProblem] = field(default_factory=list)
    wire: list[WireEvent] = field(default_factory=list)
    conversations: list[list[dict[str, Any]]] = field(default_factory=list)
    """each realtime session's conversation as the emulator's model held it, at the end"""
    verdict: RaceVerdict = field(default_factory=lambda: RaceVerdict(False, "not detected yet"))


Scenario = Callable[["Harness"], Awaitable[None]]
Detector = Callable[[RaceRun], RaceVerdict]


@dataclass(frozen=True)
class RaceCase:
    """A handoff race livekit users reported, reproduced offline against the emulator."""

    name: str
    upstream: str
    """where it was reported: ``livekit/agents#4746`` (an issue or pull request)"""
    title: str
    in_livekit_1_8_9: bool
    """whether livekit-agents 1.8.9 still shows it on OpenAI (measured: the tests assert it)"""
    scenario: Scenario
    """runs the case's agents, their classes made as it runs (the package defines no ``Agent``
    class at import: a user's ``Billing`` never meets one of ours); reads
    ``harness.triggered`` for what differs in the control"""
    detect: Detector
    trigger: Mapping[str, float | str] = field(default_factory=dict)
    """emulator settings (latency, faults) applied when triggered; the control runs without"""
    control: str = ""
    """what the control run does instead, in a line"""
    rules: tuple[Rule, ...] = ()
    """reply rules the emulator needs for the case (a model's parallel tool calls...)"""
    providers: tuple[RaceProvider, ...] = ("openai", "gemini")
    """the providers it runs on here"""
    only_because: str = ""
    """why it runs on no other provider (an OpenAI-only fault...)"""
    differs_on: Mapping[RaceProvider, bool] = field(default_factory=dict)
    """a provider whose 1.8.9 outcome is not ``in_livekit_1_8_9`` (measured: the tests assert it)"""

    def happens_on(self, provider: RaceProvider) -> bool:
        """Whether livekit-agents 1.8.9 still shows the race on ``provider``."""
        return self.differs_on.get(provider, self.in_livekit_1_8_9)
