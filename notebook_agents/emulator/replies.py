"""Deterministic, rule-based replies shared by the Realtime and Chat Completions endpoints.

Every text reply starts with the first sentence of the active instructions, so a test can see
which agent's instructions the model was given. Rules are plain functions and can be added
from Python: ``Emulator(rules=ReplyRules([my_rule]))``.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool_call", "tool_output"]


@dataclass(frozen=True)
class Turn:
    """One conversation item as the rules see it, whichever API it came from."""

    role: Role
    text: str = ""
    name: str | None = None
    """the tool's name, for tool_call"""


@dataclass(frozen=True)
class ToolSpec:
    """A function tool offered to the model: its name and JSON-schema parameters."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class ReplyContext:
    """What a rule decides from: the active instructions, the conversation and the tools."""

    instructions: str
    history: Sequence[Turn]
    tools: Sequence[ToolSpec] = ()

    @property
    def last(self) -> Turn | None:
        turns = [t for t in self.history if t.role != "system"]
        return turns[-1] if turns else None

    @property
    def user_text(self) -> str | None:
        """The user's text when the user spoke last, else None."""
        last = self.last
        return last.text if last is not None and last.role == "user" else None


@dataclass(frozen=True)
class TextReply:
    text: str


@dataclass(frozen=True)
class ToolCallReply:
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, separators=(",", ":"))


Reply = TextReply | ToolCallReply
Rule = Callable[[ReplyContext], Reply | None]
"""A rule returns a reply, or None to let the next rule decide."""


def first_sentence(instructions: str) -> str:
    """``"You are Bob. Be terse."`` -> ``"You are Bob."``."""
    text = " ".join(instructions.split())
    match = re.search(r"[.!?](\s|$)", text)
    return text[: match.end()].strip() if match else text


def tool_rule(ctx: ReplyContext) -> Reply | None:
    """Call the tool the user's text names (``get_weather`` or ``get weather``)."""
    text = ctx.user_text
    if text is None or not ctx.tools:
        return None
    lowered = text.lower()
    found: list[tuple[int, int, ToolSpec]] = []
    for tool in ctx.tools:
        for form in {tool.name.lower(), tool.name.lower().replace("_", " ")}:
            # whole words only: a tool named "add" must not fire on "address"
            if match := re.search(rf"(?<!\w){re.escape(form)}(?!\w)", lowered):
                found.append((match.start(), -len(form), tool))
    if not found:
        return None
    tool = min(found, key=lambda hit: hit[:2])[2]
    return ToolCallReply(tool.name, tool_arguments(tool, text))


def tool_output_rule(ctx: ReplyContext) -> Reply | None:
    """After a tool ran, report what it returned."""
    last = ctx.last
    if last is None or last.role != "tool_output":
        return None
    return TextReply(f"The tool returned: {last.text}" if last.text else "Done.")


def arithmetic_rule(ctx: ReplyContext) -> Reply | None:
    """Answer ``what is 2 + 3 * 4`` with ``2 + 3 * 4 = 14``."""
    text = ctx.user_text
    if text is None:
        return None
    normalized = text.lower()
    for words, symbol in _OPERATOR_WORDS:
        normalized = normalized.replace(words, f" {symbol} ")
    for match in _EXPRESSION.finditer(normalized):
        expression = " ".join(match.group(0).split())
        try:
            value = _evaluate(ast.parse(expression, mode="eval").body)
        except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
            continue
        return TextReply(f"{expression} = {_format_number(value)}.")
    return None


def echo_rule(ctx: ReplyContext) -> Reply | None:
    """Repeat the user's words; greet when nobody has spoken yet."""
    text = ctx.user_text
    if text is None:
        return TextReply("How can I help you?")
    return TextReply(f'You said: "{" ".join(text.split())}".')


DEFAULT_RULES: tuple[Rule, ...] = (tool_rule, tool_output_rule, arithmetic_rule, echo_rule)


class ReplyRules:
    """An ordered list of rules; the first that answers wins. Custom rules precede the defaults."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self._custom: list[Rule] = list(rules)

    def add(self, rule: Rule) -> Rule:
        """Add a rule ahead of the defaults (usable as a decorator)."""
        self._custom.append(rule)
        return rule

    def reply(self, ctx: ReplyContext) -> Reply:
        for rule in (*self._custom, *DEFAULT_RULES):
            reply = rule(ctx)
            if reply is None:
                continue
            if isinstance(reply, TextReply):
                prefix = first_sentence(ctx.instructions)
                return TextReply(f"{prefix} {reply.text}" if prefix else reply.text)
            return reply
        raise AssertionError("echo_rule always answers")


def tokens(text: str) -> list[str]:
    """Split a reply into the deltas it streams as: words with their trailing space."""
    return re.findall(r"\S+\s*", text) or [text]


def tool_arguments(tool: ToolSpec, text: str) -> dict[str, Any]:
    """Arguments for ``tool``: ``name=value`` / ``name: value`` found in the text, else defaults.

    Only required parameters get defaults, so optional ones stay unset as a model would leave them.
    """
    properties: dict[str, Any] = tool.parameters.get("properties", {}) or {}
    required = set(tool.parameters.get("required", []) or [])
    arguments: dict[str, Any] = {}
    for name, schema in properties.items():
        match = re.search(rf"\b{re.escape(name)}\s*[=:]\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", text)
        if match:
            raw = match.group(1)
            # quotes delimit a value; a bare one loses the sentence's end ("city=Paris?")
            value = raw[1:-1] if raw[0] in "\"'" else raw.rstrip(".!?")
            arguments[name] = _coerce(value, schema)
        elif name in required:
            arguments[name] = _default_for(schema)
    return arguments


def _schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "anyOf" in schema:
        kind = next(
            (s.get("type") for s in schema["anyOf"] if s.get("type") not in (None, "null")),
            "string",
        )
    return str(kind)


def _default_for(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    # Strict schemas make every parameter required, optional ones nullable: a model sends
    # null, and livekit then applies the Python default.
    if _nullable(schema):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    return {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}.get(
        _schema_type(schema), ""
    )


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return (isinstance(kind, list) and "null" in kind) or any(
        s.get("type") == "null" for s in schema.get("anyOf", [])
    )


def _coerce(raw: str, schema: dict[str, Any]) -> Any:
    kind = _schema_type(schema)
    try:
        if kind == "integer":
            return int(float(raw))
        if kind == "number":
            return float(raw)
    except ValueError:
        return _default_for(schema)
    if kind == "boolean":
        return raw.lower() in ("true", "yes", "1")
    return raw


_OPERATOR_WORDS = (
    ("divided by", "/"),
    ("multiplied by", "*"),
    ("times", "*"),
    ("plus", "+"),
    ("minus", "-"),
    ("×", "*"),
    ("÷", "/"),
)
_NUMBER = r"\(*\s*-?\d+(?:\.\d+)?\s*\)*"
_EXPRESSION = re.compile(rf"{_NUMBER}(?:\s*(?:\*\*|[-+*/^])\s*{_NUMBER})+")

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.BitXor: operator.pow,  # "2 ^ 3" means a power to a person
}


def _evaluate(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if type(node.op) in (ast.Pow, ast.BitXor) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    raise ValueError("not arithmetic")


def _format_number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"
