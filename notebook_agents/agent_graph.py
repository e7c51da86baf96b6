"""Which agents can hand off to which: read from the agents' code, completed by a trace.

A tool is a handoff when it returns an ``Agent``. Its targets are read from its return
annotation (a subclass, ``Agent`` itself, ``tuple[Agent, str]``, in a union or ``Optional``)
and, for a bare ``-> Agent`` or no annotation, from what its body's ``return`` statements
build. Agent classes are inspected, never instantiated. A trace's ``handoff`` events then
move the current agent and add the handoffs the code did not show; the ``to_class`` a
handoff may carry (``class_path``) lets an agent seen only in the trace be read as well, so
a loaded trace works like a live one.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import sys
import textwrap
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ForwardRef, Literal, Union, get_args, get_origin

from livekit.agents import Agent, llm

from .trace import TraceEvent, agent_label

UNKNOWN = "?"
"""the node a handoff goes to when its target cannot be read from the code"""

AgentLike = Agent | type[Agent]
Tool = llm.FunctionTool[..., Any] | llm.RawFunctionTool[..., Any]


@dataclass
class HandoffEdge:
    """A handoff from ``source`` to ``target`` through ``tool`` ("" when no tool made it)."""

    source: str
    target: str
    tool: str
    observed: bool
    """seen in the trace only: the code did not show it"""


class HandoffGraph:
    """Agents, by label, in discovery order and the handoffs between them, each once.

    ``add_agents`` reads agents' code, breadth first through every handoff tool; ``apply``
    folds in a trace's events: ``current`` follows the ``handoff`` events.
    """

    def __init__(self, agents: Iterable[AgentLike] = ()) -> None:
        self.nodes: list[str] = []
        self.edges: list[HandoffEdge] = []
        self.current = ""
        """the label of the active agent, "" before the first handoff event"""
        self._expanded: set[str] = set()
        self._known: dict[str, type[Agent]] = {}
        self._last_tool = ""
        self.add_agents(agents)

    def add_agents(self, agents: Iterable[AgentLike]) -> None:
        """Add ``agents`` (instances or classes) and every agent their handoffs reach."""
        self._expand([(node_id(agent), agent) for agent in agents])

    def apply(self, event: TraceEvent) -> bool:
        """Fold one trace event in; True if the graph or its current agent changed."""
        if event.kind == "tool_call":
            self._last_tool = str(event.data.get("name", ""))
            return False
        target = event.data.get("to") if event.kind == "handoff" else None
        if not target:
            return False
        # a handoff's tool is the last one called since the previous handoff, if any
        tool, self._last_tool = self._last_tool, ""
        self._add_node(target)
        found = agent_class(event.data.get("to_class"))
        if found is not None:
            self._expand([(target, found)])
        source = event.data.get("from")
        if source:
            self.observe(source, target, tool)
        self.current = target
        return True

    def observe(self, source: str, target: str, tool: str) -> None:
        """A handoff seen live: already drawn, or it resolves a ``"?"`` edge, or it is new."""
        self._add_node(source)
        self._add_node(target)
        if any(e.source == source and e.target == target for e in self.edges):
            return
        for edge in self.edges:
            if (edge.source, edge.target, edge.tool) == (source, UNKNOWN, tool) and tool:
                edge.target, edge.observed = target, True
                break
        else:
            self.edges.append(HandoffEdge(source, target, tool, observed=True))
        if UNKNOWN in self.nodes and not any(UNKNOWN in (e.source, e.target) for e in self.edges):
            self.nodes.remove(UNKNOWN)

    def _add_node(self, node: str) -> None:
        if node not in self.nodes:
            self.nodes.append(node)

    def _add_edge(self, source: str, target: str, tool: str) -> None:
        if not any((e.source, e.target, e.tool) == (source, target, tool) for e in self.edges):
            self.edges.append(HandoffEdge(source, target, tool, observed=False))

    def _expand(self, roots: list[tuple[str, AgentLike]]) -> None:
        """Breadth first from ``roots`` (node, agent) through every handoff tool; each node
        once. The roots come first, in order: the first is the layout's root."""
        for node, _ in roots:
            self._add_node(node)
        for _, agent in roots:
            self._known.setdefault(class_of(agent).__name__, class_of(agent))
        queue: deque[tuple[str, AgentLike]] = deque(roots)
        while queue:
            source, agent = queue.popleft()
            if source in self._expanded:
                continue
            self._expanded.add(source)
            owner = class_of(agent)
            for tool in tools_of(agent):
                for target in handoff_targets(tool, owner, self._known):
                    target_id = UNKNOWN if target is None else target.__name__
                    self._add_node(target_id)
                    self._add_edge(source, target_id, tool.info.name)
                    if target is not None:
                        self._known.setdefault(target.__name__, target)
                        queue.append((target_id, target))


def class_path(agent: AgentLike) -> str:
    """``module:qualname`` of the agent's class: what a handoff event's ``to_class`` holds."""
    cls = class_of(agent)
    return f"{cls.__module__}:{cls.__qualname__}"


def agent_class(path: object) -> type[Agent] | None:
    """The agent class ``class_path`` named, if its module is loaded in this process.

    Never imports: a trace read from a file must not run code. A class local to a function
    cannot be found; None then, and for anything not naming an agent class.
    """
    if not isinstance(path, str):
        return None
    module, _, qualname = path.partition(":")
    found: Any = sys.modules.get(module)
    for name in qualname.split("."):
        # only through modules and classes: getattr on anything else could run its code
        if not isinstance(found, types.ModuleType | type):
            return None
        found = getattr(found, name, None)
    return found if isinstance(found, type) and issubclass(found, Agent) else None


def class_of(agent: AgentLike) -> type[Agent]:
    return agent if isinstance(agent, type) else type(agent)


def node_id(agent: AgentLike) -> str:
    """A class by its name, an instance by its label (as the trace names it)."""
    return agent.__name__ if isinstance(agent, type) else agent_label(agent)


def tools_of(agent: AgentLike) -> list[Tool]:
    """An instance's tools include those given to its constructor; a class has only methods."""
    if isinstance(agent, type):
        return list(llm.find_function_tools(agent))
    tools: list[Tool] = []
    pending: list[llm.Tool | llm.Toolset] = list(agent.tools)
    while pending:
        tool = pending.pop(0)
        if isinstance(tool, llm.Toolset):
            pending[:0] = tool.tools
        elif isinstance(tool, llm.FunctionTool | llm.RawFunctionTool):
            tools.append(tool)
    return tools


# -- reading a tool's targets --------------------------------------------------------------


def handoff_targets(
    tool: Tool, owner: type[Agent], known: dict[str, type[Agent]] | None = None
) -> list[type[Agent] | None]:
    """The agent classes ``tool`` can hand off to; ``None`` stands for one it cannot read.

    ``owner`` is the class the tool was found on (its module helps resolve names); ``known``
    maps class names to agent classes, for annotations naming classes local to a function.
    A tool annotated as a handoff is never dropped: an unreadable target is ``[None]``. An
    unannotated tool is a handoff only when its body visibly returns an agent class.
    """
    func = inspect.unwrap(tool)
    namespace = _namespace(func, owner, known or {})
    kind, annotated = _annotated_targets(func, namespace)
    if kind == "none":
        return []
    if kind == "specific":
        return annotated
    returned = _returned_targets(func, namespace)
    if kind == "base":
        return _unique(returned) if returned else [None]
    return _unique(c for c in returned or [] if c is not None)


def _namespace(
    func: Callable[..., Any], owner: type[Agent], known: dict[str, type[Agent]]
) -> dict[str, Any]:
    """Names a tool's code can see, nearest first: closure, globals, the class's module."""
    namespace: dict[str, Any] = dict(known)
    module = sys.modules.get(owner.__module__)
    if module is not None:
        namespace.update(vars(module))
    namespace.update(getattr(func, "__globals__", {}))
    # a builtin or a callable object has no closure to read
    with contextlib.suppress(TypeError, ValueError):
        namespace.update(inspect.getclosurevars(func).nonlocals)
    return namespace


_AnnotationKind = Literal["none", "specific", "base", "unannotated"]


def _annotated_targets(
    func: Callable[..., Any], namespace: dict[str, Any]
) -> tuple[_AnnotationKind, list[type[Agent] | None]]:
    """Only the return annotation is read: a parameter's that does not evaluate (an import
    under ``TYPE_CHECKING``) must not hide where the tool hands off."""
    try:
        annotation = inspect.get_annotations(func).get("return", inspect.Parameter.empty)
    except TypeError:  # not a function, class or module: nothing annotated
        return "unannotated", []
    if annotation is inspect.Parameter.empty:
        return "unannotated", []
    try:
        classes = _unique(_agent_classes(annotation, namespace))
    except Exception:  # an annotation that does not evaluate: fall back on the body
        return "unannotated", []
    if not classes:
        return "none", []
    specific: list[type[Agent] | None] = [c for c in classes if c is not Agent]
    return ("specific", specific) if specific else ("base", [])


def _agent_classes(annotation: Any, namespace: dict[str, Any]) -> Iterator[type[Agent]]:
    """Agent classes in a return annotation, through unions and tuples (what LiveKit accepts);
    names in strings (``from __future__ import annotations``, forward references) resolved."""
    if isinstance(annotation, ForwardRef):
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):
        annotation = eval(annotation, dict(namespace))  # what typing.get_type_hints does
    if isinstance(annotation, type) and not get_args(annotation):
        if issubclass(annotation, Agent):
            yield annotation
        return
    if get_origin(annotation) in (Union, types.UnionType, tuple):
        for arg in get_args(annotation):
            yield from _agent_classes(arg, namespace)


def _returned_targets(
    func: Callable[..., Any], namespace: dict[str, Any]
) -> list[type[Agent] | None] | None:
    """What the body's ``return`` statements build: agent classes, ``None`` if unreadable.

    ``None`` as a whole when there is no source (a lambda, ``exec``'d code).
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None
    )
    if definition is None:
        return None
    targets: list[type[Agent] | None] = []
    for value in _returned_values(definition):
        targets.extend(_targets_of(value, namespace))
    return targets


def _returned_values(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    """The function's own ``return`` values, not those of functions nested in it."""
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value
        pending.extend(ast.iter_child_nodes(node))


def _targets_of(value: ast.expr, namespace: dict[str, Any]) -> list[type[Agent] | None]:
    """The agent classes one returned expression builds; ``[None]`` where it cannot tell."""
    if isinstance(value, ast.Tuple):  # return Billing(), "transferring"
        return [t for element in value.elts for t in _targets_of(element, namespace)]
    if isinstance(value, ast.IfExp):
        return _targets_of(value.body, namespace) + _targets_of(value.orelse, namespace)
    if isinstance(value, ast.Constant | ast.JoinedStr | ast.Dict | ast.List):
        return []  # a result, not an agent
    if isinstance(value, ast.Call):
        called = _resolve(value.func, namespace)
        if isinstance(called, type):
            return [called] if issubclass(called, Agent) else []
        if callable(called):  # a factory: its own annotation may name the agent
            own = {**namespace, **getattr(called, "__globals__", {})}
            kind, classes = _annotated_targets(called, own)
            return classes if kind == "specific" else [] if kind == "none" else [None]
    return [None]


def _resolve(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """``Name`` or ``module.Name`` to the object it names in ``namespace``; None if unsure."""
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id, getattr(builtins, expr.id, None))
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, namespace)
        # only modules and classes: getattr on anything else could run arbitrary code
        if isinstance(base, types.ModuleType | type):
            return getattr(base, expr.attr, None)
    return None


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
