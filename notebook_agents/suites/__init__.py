"""Scenario suites: scripted conversations with livekit's expectations, run offline against
an ``AgentServer`` or the runners a function makes (a fresh session each), as a table in a
notebook and as tests under pytest."""

from .agent_names import AgentNames
from .expectations import Expectation, ExpectationError
from .results import Outcome, ScenarioResult, SuiteResult
from .run import SuiteArgumentError, SuiteRun, run_scenario, run_suite
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
    "Expectation",
    "ExpectationError",
    "Outcome",
    "ScenarioResult",
    "ScenarioSuite",
    "ScriptedScenario",
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
]
