"""What a suite's ``new_agent_type=`` names mean: the user's classes, looked up, never imported.

A bare name (``Billing``) is the class of that name the scenario's server ran (the agents its
turns so far handed between, and the classes they derive from), else the one the modules
already imported hold (the user's server's and notebook's: ``sys.modules``), the module of the
agents that ran first. The package's own
classes are never candidates. A dotted name (``clinic.Billing``) is looked up in the module
already imported (``sys.modules``): a scenarios file is data, and naming a module never runs
its code. Two candidates neither of which ran, a module not imported, a name nothing defines:
each is a ``SuiteFileError`` naming the file's line and the fix.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import Any

from livekit.agents import Agent, AgentHandoffEvent, RunResult

from .expectations import Expectation, dotted
from .suite_file import ScenarioSuite, ScriptedScenario

_PACKAGE = __name__.split(".")[0]
"""the package's own classes (the race cases', made when run) are never a user's name"""
_NEAR_MISS = 0.8
"""how alike (difflib's ratio) a class's name must be to be suggested for a name"""


class AgentNames:
    """The ``new_agent_type=`` names of ``suite`` and the classes they mean, for agents that
    derive from ``base`` (livekit's ``Agent``, or a runner's ``agent_base``).

    Made before anything runs: a dotted name is looked up then, and a bare name that no class
    has is refused then (``SuiteFileError``). A bare name is resolved as each expectation is
    checked, among the classes its scenario ran so far (``classes``).
    """

    def __init__(self, suite: ScenarioSuite, base: type[Any] = Agent) -> None:
        self.suite = suite
        self.base = base
        self._dotted: dict[str, type[Any]] = {}
        for name, at in _named(suite):  # in the file's order: the first mistake is named
            if "." in name:
                self._dotted[name] = self._imported(name, at)
            elif not self._defined(name):
                raise suite.error(at, self._none_defined(name))

    def classes(
        self,
        expectation: Expectation,
        at: tuple[Any, ...],
        runs: Sequence[RunResult[Any]],
    ) -> dict[str, type[Any]]:
        """The classes ``expectation`` (at ``at`` in the file) names, its scenario having run
        ``runs`` so far (this turn's last)."""
        ran = _ran(runs, self.base)
        return {
            name: self._dotted[name] if name in self._dotted else self._bare(name, at, ran)
            for name in expectation.agent_types
        }

    def at(self, scenario: ScriptedScenario, turn: int, index: int) -> tuple[Any, ...]:
        """Where the ``index``-th expectation of ``scenario``'s ``turn`` is in the file."""
        number = next(i for i, s in enumerate(self.suite.scenarios) if s is scenario)
        return ("scenarios", number, "turns", turn, "expect", index)

    # -- bare names ---------------------------------------------------------------------------

    def _bare(self, name: str, at: tuple[Any, ...], ran: list[type[Any]]) -> type[Any]:
        ran_named = [cls for cls in ran if cls.__name__ == name]
        if len(ran_named) == 1:
            return ran_named[0]
        if ran_named:
            raise self.suite.error(
                at,
                f"new_agent_type={name} names {len(ran_named)} classes and this scenario ran "
                f"each: {_listed(ran_named)}; write the one you mean with its module, e.g. "
                f"new_agent_type={_example(ran_named)}",
            )
        imported = [cls for cls in self._users() if cls.__name__ == name and _reachable(cls)]
        # several: the one the module of the agents that ran holds (the server's own module,
        # beside another version of it still imported) is the one meant
        homes = {cls.__module__ for cls in ran}
        at_home = [cls for cls in imported if cls.__module__ in homes]
        if len(imported) == 1 or len(at_home) == 1:
            return imported[0] if len(imported) == 1 else at_home[0]
        if imported:
            raise self.suite.error(
                at,
                f"new_agent_type={name} names {len(imported)} classes and none of them ran in "
                f"this scenario: {_listed(imported)}; write the one you mean with its module, "
                f"e.g. new_agent_type={_example(imported)}",
            )
        # a class made in a function (a server's own): any of that name will do, since none
        # of them ran, the expectation fails with livekit's own message
        made = [cls for cls in self._users() if cls.__name__ == name]
        if not made:
            raise self.suite.error(at, self._none_defined(name))
        return made[-1]

    def _defined(self, name: str) -> bool:
        return any(cls.__name__ == name for cls in self._users())

    def _users(self) -> Iterator[type[Any]]:
        """The classes deriving from ``base`` (itself included) but the package's own."""
        return (cls for cls in _subclasses(self.base) if not _ours(cls))

    def _none_defined(self, name: str) -> str:
        near = _did_you_mean(name, [cls.__name__ for cls in self._users()])
        return (
            f"new_agent_type={name}: none is defined{near or '.'} If it is defined elsewhere, "
            f"write its dotted path, e.g. new_agent_type=my_agents.{name}"
        )

    # -- dotted names -------------------------------------------------------------------------

    def _imported(self, name: str, at: tuple[Any, ...]) -> type[Any]:
        """``module.Class`` (or ``package.module.Outer.Class``), from the modules imported."""
        *path, attr = name.split(".")
        imported = [n for n in range(len(path), 0, -1) if ".".join(path[:n]) in sys.modules]
        owner: Any = sys.modules[".".join(path[: imported[0]])] if imported else None
        for part in path[imported[0] :] if imported else ():  # classes nested in classes
            owner = _held(owner, part)
        if owner is None:  # its module (or a submodule on the way) is not imported
            raise self.suite.error(
                at,
                f"new_agent_type={name}: the module {'.'.join(path)} is not imported, and a "
                "scenarios file imports nothing: import it first (in the notebook, or in your "
                "server's module)",
            )
        found = _held(owner, attr)
        if isinstance(found, type) and issubclass(found, self.base):
            return found
        held = [
            key
            for key, value in (vars(owner) if isinstance(owner, ModuleType | type) else {}).items()
            if isinstance(value, type) and issubclass(value, self.base)
        ]
        raise self.suite.error(
            at,
            f"new_agent_type={name}: {'.'.join(path)} has no Agent class {attr}"
            f"{_did_you_mean(attr, held, 0.6)}",
        )


def _named(suite: ScenarioSuite) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Each name the file gives ``new_agent_type=``, once, where it first appears."""
    seen: set[str] = set()
    for s, scenario in enumerate(suite.scenarios):
        for t, turn in enumerate(scenario.turns):
            for e, expectation in enumerate(turn.expect):
                for name in expectation.agent_types:
                    if name not in seen:
                        seen.add(name)
                        yield name, ("scenarios", s, "turns", t, "expect", e)


def _ran(runs: Iterable[RunResult[Any]], base: type[Any]) -> list[type[Any]]:
    """The classes of the agents ``runs`` handed between, and those they derive from (an
    agent of a subclass is one of its base too), each once."""
    ran: dict[type[Any], None] = {}
    for run in runs:
        for event in run.events:
            if isinstance(event, AgentHandoffEvent):
                for agent in (event.old_agent, event.new_agent):
                    if agent is not None:
                        ran.update(dict.fromkeys(type(agent).__mro__))
    return [cls for cls in ran if issubclass(cls, base)]


def _reachable(cls: type[Any]) -> bool:
    """Whether ``cls`` is what its module holds by its name now: not one made in a function,
    nor one a later cell's class of the same name replaced."""
    value: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        value = _held(value, part)
    return value is cls


def _held(owner: Any, name: str) -> Any:
    """What a module or class holds as ``name``, read from its ``__dict__`` (never getattr: a
    module's ``__getattr__`` runs code, and may import); None if it holds nothing so."""
    return vars(owner).get(name) if isinstance(owner, ModuleType | type) else None


def _ours(cls: type[Any]) -> bool:
    return cls.__module__.split(".")[0] == _PACKAGE


def _subclasses(cls: type[Any]) -> list[type[Any]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _subclasses(sub)
    return list(dict.fromkeys(found))


def _listed(classes: list[type[Any]]) -> str:
    return ", ".join(sorted(dotted(cls) for cls in classes))


def _example(classes: list[type[Any]]) -> str:
    """One of ``classes`` to show in a fix: a module's before the notebook's."""
    modules = sorted(dotted(cls) for cls in classes if cls.__module__ != "__main__")
    return modules[0] if modules else dotted(classes[0])


def _did_you_mean(name: str, candidates: list[str], cutoff: float = _NEAR_MISS) -> str:
    """``"; did you mean WeatherAgent?"`` for the candidate closest to ``name`` if one is as
    alike as ``cutoff`` (difflib's ratio), else ``""``."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]}?" if close else ""
