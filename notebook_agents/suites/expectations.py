"""One expectation of a scripted turn: a chain of livekit's ``RunResult.expect`` calls, written
as in a livekit eval (``next_event().is_function_call(name="lookup_weather")``), checked here.

The text is parsed (never evaluated): each call must be one of livekit's assertion methods with
keyword arguments it takes, each value a literal, except ``new_agent_type=`` (an ``Agent``
class, by name: what the name means is ``agent_names``'s) and ``judge``'s model (``llm``: the
suite's judge model).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import AgentHandoffEvent, RunResult
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
            expected = agents[kwargs["new_agent_type"]] if "new_agent_type" in kwargs else None
            if expected is not None:
                kwargs["new_agent_type"] = expected
            args = (judge,) if call.judged else ()
            try:
                target = getattr(target, call.method)(*args, **kwargs)
            except AssertionError as e:
                if expected is None:
                    raise
                raise AssertionError(_two_of_a_name(str(e), expected, result)) from None
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


def dotted(cls: type[Any]) -> str:
    """``module.Class``: a class as a scenarios file names it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _two_of_a_name(message: str, expected: type[Any], result: RunResult[Any]) -> str:
    """livekit's message for a handoff to another class than ``expected``, with both classes'
    modules when their names are the same (livekit's reads "Expected new_agent 'Billing', got
    'Billing'")."""
    name = expected.__name__
    others = {
        type(event.new_agent)
        for event in result.events
        if isinstance(event, AgentHandoffEvent)
        and type(event.new_agent).__name__ == name
        and not isinstance(event.new_agent, expected)
    }
    if not others:
        return message
    got = ", ".join(sorted(dotted(cls) for cls in others))
    said = f"new_agent {dotted(expected)}, got {got}: two classes named {name}"
    first, _, rest = message.partition("\n")
    if first == f"Expected new_agent '{name}', got '{name}'":
        first = f"Expected {said}"
    else:  # a range's search (contains_agent_handoff) says only that none matched
        first = f"{first} (expected {said})"
    return f"{first}\n{rest}" if rest else first
