"""Your own agents in the bench: A (a class or factory) or your ``AgentServer``, and the user
turn that makes A hand off. B is whatever A's tool returns (livekit's ``update_agent``).

``--agents mymodule:FrontDesk`` and ``--server path/to/agent.py:server`` name them as
``python -c 'from mymodule import FrontDesk'`` would find them, or by a file's path.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livekit.agents import Agent, AgentServer
from livekit.agents.llm import FunctionTool, RawFunctionTool

from .. import _livekit_internals as livekit
from .._deprecated import warn_renamed
from ..errors import NotebookAgentsError
from .results import BenchmarkConfigError


class YourAgentsError(NotebookAgentsError, TypeError):
    """Your agents' factory made something else than the bench runs: ``YourAgents``' function
    no livekit ``Agent``, ``YourServer``'s no ``AgentServer``. Raised in each trial, which
    fails with it as its reason."""


@dataclass(frozen=True)
class YourAgents:
    """Your agent A (its class, or a function making it) and the user turn that makes A's
    tool hand off; the bench's session runs it on each provider's model."""

    agent: Callable[[], Agent]
    trigger: str
    handoff_to: type[Agent] | None = None
    """B's class: a trial whose handoff went to another agent fails, naming it"""
    label: str | None = None
    """how results name them (default: A's ``module:Name``)"""

    @property
    def name(self) -> str:
        return self.label or _qualified(self.agent)


@dataclass(frozen=True)
class YourServer:
    """Your ``AgentServer`` (or a function making it), run per trial by a ``NotebookRunner``
    as in a notebook; its entrypoint builds its models, which reach the trial's endpoint
    through the provider's environment (OpenAI's ``OPENAI_BASE_URL``/``OPENAI_API_KEY``;
    Gemini's ``GOOGLE_GEMINI_BASE_URL``, ``SSL_CERT_FILE``, ``GOOGLE_API_KEY``)."""

    server: AgentServer | Callable[[], AgentServer]
    trigger: str
    handoff_to: type[Agent] | None = None
    label: str | None = None
    """how results name it (default: its entrypoint's ``module:Name``)"""

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        if isinstance(self.server, AgentServer):
            entrypoint = livekit.entrypoint_of(self.server)
            return f"AgentServer of {_qualified(entrypoint)}" if entrypoint else "AgentServer"
        return _qualified(self.server)

    def make(self) -> AgentServer:
        """The server a trial runs: the one given, or a new one from the factory."""
        server = self.server if isinstance(self.server, AgentServer) else self.server()
        if not isinstance(server, AgentServer):
            raise YourAgentsError(f"{self.name}() returned {server!r}, not a livekit AgentServer")
        return server


AgentsUnderTest = YourAgents | YourServer
"""the agents a trial runs: yours, or the bench's own pair as ``YourAgents``"""


@dataclass(frozen=True)
class UserAgents(YourAgents):
    """Deprecated: ``YourAgents`` (the agents under test, not the caller)."""

    def __post_init__(self) -> None:
        _renamed("UserAgents", "YourAgents")


@dataclass(frozen=True)
class UserServer(YourServer):
    """Deprecated: ``YourServer`` (the agents under test, not the caller)."""

    def __post_init__(self) -> None:
        _renamed("UserServer", "YourServer")


def _renamed(old: str, new: str) -> None:
    warn_renamed(
        f"notebook_agents.bench.{old}",
        f"notebook_agents.bench.{new} (same arguments)",
        stacklevel=5,  # the caller's line: past here, __post_init__ and the dataclass's __init__
    )


def make_agent(agents: YourAgents) -> Agent:
    """A, as the pair's class or factory makes it; ``YourAgentsError`` says what it made instead."""
    agent = agents.agent()
    if not isinstance(agent, Agent):
        raise YourAgentsError(f"{agents.name}() made {agent!r}, not a livekit Agent")
    return agent


def load(path: str, flag: str) -> Any:
    """The object ``path`` names: ``package.module:Name`` (importable from the working
    directory) or ``path/to/file.py:Name``; ``BenchmarkConfigError`` names what is missing
    and the fix."""
    return _load(path, flag)[1]


def _load(path: str, flag: str) -> tuple[Any, Any]:
    """The module ``path`` names and the object ``load`` returns."""
    where, sep, name = path.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise BenchmarkConfigError(
            f"{flag} {path!r}: expected module:Name or path/to/file.py:Name, e.g. "
            "mymodule:FrontDesk"
        )
    module = _module(where, flag, path)
    try:
        return module, getattr(module, name)
    except AttributeError:
        found = sorted(n for n, v in vars(module).items() if _offered(v, module.__name__))
        has = f"; it has {', '.join(found)}" if found else ""
        raise BenchmarkConfigError(f"{flag} {path!r}: {where} has no {name!r}{has}") from None


def load_agent(path: str) -> Callable[[], Agent]:
    """``--agents``: an ``Agent`` subclass, or a function returning one."""
    module, found = _load(path, "--agents")
    if isinstance(found, type) and issubclass(found, Agent):
        return found
    problem = _not_a_factory(found)
    if problem is not None:
        where = path.rpartition(":")[0]
        agents = sorted(
            n
            for n, v in vars(module).items()
            if not isinstance(v, AgentServer) and _offered(v, module.__name__)
        )
        has = f"; {where} has {', '.join(agents)}" if agents else ""
        raise BenchmarkConfigError(
            f"--agents {path!r} is {found!r}, {problem}: name A's Agent class or a function "
            f"returning A, e.g. --agents {where}:{agents[0] if agents else 'FrontDesk'}{has}"
        )
    return found  # type: ignore[no-any-return]


def _not_a_factory(found: Any) -> str | None:
    """Why ``found`` cannot make A, read from what it is and its signature (it is not called:
    a factory may need the trial's environment); None when it may."""
    if isinstance(found, AgentServer):
        return "an AgentServer (pass it with --server)"
    if isinstance(found, type) or not callable(found):
        return "not an Agent class or a function"
    if str(getattr(found, "__module__", "") or "").startswith("livekit.") or isinstance(
        found, FunctionTool | RawFunctionTool
    ):
        return "livekit's, not an agent of yours"
    try:
        signature = inspect.signature(found, eval_str=True)
    except (NameError, TypeError, ValueError):  # an annotation it cannot resolve: let it run
        return None
    needs = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if needs:
        return f"a function needing {', '.join(needs)} (the bench calls it with no arguments)"
    made = signature.return_annotation
    if isinstance(made, type) and not issubclass(made, Agent):
        return f"a function returning {made.__name__}, not an Agent"
    return None


def load_server(path: str) -> AgentServer | Callable[[], AgentServer]:
    """``--server``: an ``AgentServer``, or a function returning one."""
    found = load(path, "--server")
    if isinstance(found, AgentServer) or (callable(found) and not isinstance(found, type)):
        return found
    raise BenchmarkConfigError(
        f"--server {path!r} is {found!r}: name the AgentServer (server = AgentServer()) or a "
        "function making it"
    )


def _module(where: str, flag: str, path: str) -> Any:
    if where.endswith(".py") or "/" in where:
        file = Path(where)
        if not file.is_file():
            raise BenchmarkConfigError(f"{flag} {path!r}: there is no file {file}")
        spec = importlib.util.spec_from_file_location(file.stem, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # its own imports of siblings resolve as when it runs as a script
        sys.path.insert(0, str(file.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise BenchmarkConfigError(f"{flag} {path!r}: running {file} raised {_error(e)}") from e
        finally:
            sys.path.remove(str(file.resolve().parent))
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, "")  # as `python -m` does: the working directory's modules import
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as e:
        if e.name is not None and where.startswith(e.name):
            raise BenchmarkConfigError(
                f"{flag} {path!r}: no module named {e.name!r} here; run from the folder that "
                f"holds it, or give its file: {flag} path/to/{where.replace('.', '/')}.py:"
                f"{path.rpartition(':')[2]}"
            ) from None
        raise BenchmarkConfigError(f"{flag} {path!r}: importing {where} raised {_error(e)}") from e
    except Exception as e:
        raise BenchmarkConfigError(f"{flag} {path!r}: importing {where} raised {_error(e)}") from e


def _offered(value: Any, module: str) -> bool:
    """A name the module offers the bench: its own Agent classes, any AgentServer."""
    if isinstance(value, AgentServer):
        return True
    return isinstance(value, type) and issubclass(value, Agent) and value.__module__ == module


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"


def _qualified(thing: Any) -> str:
    """``module:Name`` of a class or function; its repr otherwise."""
    target = thing if inspect.isclass(thing) or inspect.isfunction(thing) else type(thing)
    module = getattr(target, "__module__", "?")
    return f"{module}:{getattr(target, '__qualname__', repr(thing))}"
