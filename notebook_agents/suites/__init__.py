"""Scenario suites: scripted conversations with livekit's expectations, run offline against
an ``AgentServer`` or the runners a function makes (a fresh session each), as a table in a
notebook and as tests under pytest; a call held in the notebook written as one
(``to_scenario``)."""

from .agent_names import AgentNames
from .expectations import Expectation, ExpectationError
from .recording import ScenarioSourceError, to_scenario
from .results import CallEnd, Outcome, ScenarioResult, SimulatedCall, SuiteResult
from .run import SuiteArgumentError, SuiteRun, run_scenario, run_suite
from .simulated_caller import CallerError
from .suite_file import (
    ScenarioSuite,
    ScriptedScenario,
    SuiteFileError,
    Turn,
    UnknownScenarioError,
    add_missing_ids,
    load_suite,
)

__all__ = [
    "AgentNames",
    "CallEnd",
    "CallerError",
    "Expectation",
    "ExpectationError",
    "Outcome",
    "ScenarioResult",
    "ScenarioSourceError",
    "ScenarioSuite",
    "ScriptedScenario",
    "SimulatedCall",
    "SuiteArgumentError",
    "SuiteFileError",
    "SuiteResult",
    "SuiteRun",
    "Turn",
    "UnknownScenarioError",
    "add_missing_ids",
    "load_suite",
    "run_scenario",
    "run_suite",
    "to_scenario",
]
