"""One expectation of a scripted turn: a chain of livekit's ``RunResult.expect`` calls, written
as in a livekit eval (``next_event().is_function_call(name="lookup_weather")``), checked here.

The text is parsed (never evaluated): each call must be one of livekit's assertion methods with
keyword arguments it takes, each value a literal, except ``new_agent_type=`` (an ``Agent``
class, by name: livekit's, or the framework's the runner runs, e.g. VideoSDK's) and ``judge``'s
model (``llm``: the suite's judge model).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import Agent, RunResult
from livekit.agents.llm import LLM
from livekit.agents.voice import run_result

from ..errors import NotebookAgentsError

_ASSERTS = (
    run_result.RunAssert,
    run_result.EventAssert,
    run_result.EventRangeAssert,
    run_result.ChatMessageAssert,
)
METHODS: dict[str, inspect.Signature] = {
    name: inspect.signature(getattr(cls, name))
    for cls in _ASSERTS
    for name in vars(cls)
    if not name.startswith("_") and callable(getattr(cls, name)) and name != "event"
}
"""livekit's assertion methods by name (``next_event``, ``is_message``, ``judge``, ...) and
what each takes"""
JUDGE_MODEL = "llm"
"""how an expectation names the suite's judge model: ``judge(llm, intent="...")``"""
_NEAR_MISS = 0.8
"""how alike (difflib's ratio) a class defined anywhere must be to be suggested for a name"""
_PREFIXES = ("await ", "result.expect", "expect")


class ExpectationError(NotebookAgentsError, ValueError):
    """An expectation that is not a chain of livekit's ``RunResult.expect`` calls."""


@dataclass(frozen=True)
class Call:
    """One link of the chain: ``expect[0]`` (``method`` "[]", ``index``) or a method call."""

    method: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    index: int | slice | None = None
    judged: bool = False
    """``judge``'s first argument: the suite's judge model"""


@dataclass(frozen=True)
class Expectation:
    """``text`` as written, and its calls from ``result.expect`` on."""

    text: str
    calls: tuple[Call, ...]

    @property
    def needs_judge(self) -> bool:
        return any(call.judged for call in self.calls)

    @property
    def agent_types(self) -> list[str]:
        """The ``Agent`` classes it names (``new_agent_type=``), as written."""
        return [
            call.kwargs["new_agent_type"] for call in self.calls if "new_agent_type" in call.kwargs
        ]

    async def check(
        self, result: RunResult[Any], agents: Mapping[str, type[Any]], judge: LLM[Any] | None
    ) -> None:
        """Apply the chain to ``result.expect``; livekit's ``AssertionError`` if it fails."""
        __tracebackhide__ = True
        target: Any = result.expect
        for call in self.calls:
            if call.method == "[]":
                target = target[call.index]
                continue
            kwargs = dict(call.kwargs)
            if "new_agent_type" in kwargs:
                kwargs["new_agent_type"] = agents[kwargs["new_agent_type"]]
            args = (judge,) if call.judged else ()
            target = getattr(target, call.method)(*args, **kwargs)
            if inspect.isawaitable(target):
                target = await target


def parse(text: str) -> Expectation:
    """``text`` as an ``Expectation``; ``ExpectationError`` says what is wrong and the fix."""
    if not isinstance(text, str) or not text.strip():
        raise ExpectationError(
            "an expectation is a string such as 'next_event().is_message(role=\"assistant\")'"
        )
    source = text.strip().removeprefix("await ").strip()
    if not source.startswith(("result.expect", "expect")):
        source = "expect." + source if not source.startswith("[") else "expect" + source
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as e:
        raise ExpectationError(f"{text!r} is not Python call syntax: {e.msg}") from None
    calls: list[Call] = []
    node = tree
    while not _is_root(node):
        if isinstance(node, ast.Subscript):
            calls.append(Call("[]", index=_index(node.slice, text)))
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            calls.append(_call(node, text))
            node = node.func.value
        else:
            raise ExpectationError(
                f"{text!r}: write a chain of livekit's RunResult.expect calls, e.g. "
                "'next_event().is_function_call(name=\"lookup_weather\")'"
            )
    if not calls:
        raise ExpectationError(f"{text!r} calls nothing: e.g. 'no_more_events()'")
    return Expectation(text.strip(), tuple(reversed(calls)))


def _is_root(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "expect"
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "expect"
        and isinstance(node.value, ast.Name)
        and node.value.id == "result"
    )


def _index(node: ast.expr, text: str) -> int | slice:
    try:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(ast.literal_eval(p) if p is not None else None for p in parts))
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if not isinstance(value, int | slice):
        raise ExpectationError(f"{text!r}: expect[...] takes an event index or a slice")
    return value


def _call(node: ast.Call, text: str) -> Call:
    assert isinstance(node.func, ast.Attribute)
    name = node.func.attr
    signature = METHODS.get(name)
    if signature is None:
        known = ", ".join(sorted(METHODS))
        raise ExpectationError(f"{text!r}: {name}() is not one of livekit's expect calls ({known})")
    judged = name == "judge"
    positional = node.args
    if judged:
        if len(positional) != 1 or not (
            isinstance(positional[0], ast.Name) and positional[0].id == JUDGE_MODEL
        ):
            raise ExpectationError(
                f'{text!r}: write judge({JUDGE_MODEL}, intent="..."): `{JUDGE_MODEL}` is the '
                "judge model the suite is run with (run_suite(..., judge_llm=...))"
            )
        positional = []
    if positional:
        raise ExpectationError(f"{text!r}: {name}() takes keyword arguments only, as in livekit")
    kwargs: dict[str, Any] = {}
    for keyword in node.keywords:
        key = keyword.arg
        if key is None or key not in signature.parameters or key == "self":
            takes = ", ".join(p for p in signature.parameters if p not in ("self", "llm_v"))
            raise ExpectationError(f"{text!r}: {name}() takes {takes or 'no arguments'}")
        kwargs[key] = _value(key, keyword.value, text)
    return Call(name, kwargs, judged=judged)


def _value(key: str, node: ast.expr, text: str) -> Any:
    if key == "new_agent_type":
        dotted = ast.unparse(node)
        if not all(part.isidentifier() for part in dotted.split(".")):
            raise ExpectationError(
                f"{text!r}: new_agent_type= names an Agent class, e.g. new_agent_type=WeatherAgent"
            )
        return dotted
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ExpectationError(
            f"{text!r}: {key}={ast.unparse(node)} must be a literal (a string, number, "
            "True/False or a dict of them)"
        ) from None


def agent_classes(
    names: list[str], home: str | None, base: type[Any] = Agent
) -> dict[str, type[Any]]:
    """Each ``new_agent_type`` name as its agent class, a subclass of ``base`` (livekit's
    ``Agent``, or the runner's ``agent_base``): a dotted one imported; a bare one from
    ``home`` (the module defining the server), else the one such class of that name defined
    so far. ``ExpectationError`` names the fix."""
    return {name: _agent_class(name, home, base) for name in names}


def _agent_class(name: str, home: str | None, base: type[Any]) -> type[Any]:
    module_name, _, attr = name.rpartition(".")
    if module_name:
        try:
            value = getattr(importlib.import_module(module_name), attr, None)
        except ImportError as e:
            raise ExpectationError(
                f"new_agent_type={name}: cannot import {module_name}: {e}"
            ) from None
        if isinstance(value, type) and issubclass(value, base):
            return value
        module = sys.modules.get(module_name)
        raise ExpectationError(
            f"new_agent_type={name}: {module_name} has no Agent class {attr}"
            f"{_did_you_mean(attr, _agents_in(module, base))}"
        )
    home_module = sys.modules.get(home or "")
    value = getattr(home_module, name, None)
    if isinstance(value, type) and issubclass(value, base):
        return value
    found = {f"{c.__module__}.{c.__qualname__}": c for c in _subclasses(base) if c.__name__ == name}
    if len(found) == 1:
        return next(iter(found.values()))
    if found:
        raise ExpectationError(
            f"new_agent_type={name}: several: {', '.join(sorted(found))}; write the class's "
            f"dotted path, e.g. new_agent_type={min(found)}"
        )
    # the process holds many classes (livekit's own, other cells' and tests'): from those,
    # only a near miss is suggested
    near = _did_you_mean(name, _agents_in(home_module, base)) or _did_you_mean(
        name, [c.__name__ for c in _subclasses(base)], _NEAR_MISS
    )
    raise ExpectationError(
        f"new_agent_type={name}: none is defined{near or '.'} If it is defined elsewhere, "
        f"write its dotted path, e.g. new_agent_type=my_agents.{name}"
    )


def _did_you_mean(name: str, candidates: list[str], cutoff: float = 0.6) -> str:
    """``"; did you mean WeatherAgent?"`` for the candidate closest to ``name`` if one is as
    alike as ``cutoff`` (difflib's ratio; its default), else ``""``."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]}?" if close else ""


def _agents_in(module: Any, base: type[Any]) -> list[str]:
    """The names of the ``base`` subclasses an imported module holds (``base`` aside)."""
    if module is None:
        return []
    return [
        key
        for key, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, base) and value is not base
    ]


def _subclasses(cls: type[Any]) -> list[type[Any]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
