"""Deterministic, rule-based replies shared by the Realtime and Chat Completions endpoints.

Every text reply starts with the first sentence of the active instructions, so a test can see
which agent's instructions the model was given. Rules are plain functions and can be added
from Python: ``Emulator(rules=ReplyRules([my_rule]))``, ``emulator.settings.rules.add(my_rule)``,
and taken out again: ``.remove(my_rule)``, ``.clear()``. A judge's request (livekit's
``judge(llm, intent=)`` and ``JudgeGroup``) is answered only by a rule's ``VerdictReply``,
else with a failing verdict (judging.py).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from ..speech.grammar import number_value
from .errors import ReplyError, ReplyRuleError, UnknownRuleError
from .judging import UNSCRIPTED, Judgment, VerdictReply, judgment_of

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

    @cached_property
    def judgment(self) -> Judgment | None:
        """What a judge asks (its ``intent`` and ``transcript``) when this request is livekit's
        judge's, which a rule answers with a ``VerdictReply``; else None."""
        return judgment_of(self.user_text, self.tools)


@dataclass(frozen=True)
class TextReply:
    """A rule's answer in words; the agent's first sentence of instructions is put before it."""

    text: str


@dataclass(frozen=True)
class ToolCallReply:
    """A rule's answer as a call of the tool ``name`` with these ``arguments``."""

    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True)
class ToolCallsReply:
    """A rule's answer as several tool calls in one response, run by the client as one batch.

    Both APIs return parallel calls in one reply: several ``function_call`` output items of one
    realtime response, several ``tool_calls`` of one chat message
    (https://platform.openai.com/docs/guides/function-calling#parallel-function-calling).
    """

    calls: tuple[ToolCallReply, ...]

    def __post_init__(self) -> None:
        if not self.calls:
            raise ReplyError("ToolCallsReply needs at least one ToolCallReply")


Reply = TextReply | ToolCallReply | ToolCallsReply
"""What the endpoints send: a verdict goes out as the call of the judge's tool."""


def calls_of(reply: Reply) -> tuple[ToolCallReply, ...]:
    """The tool calls a reply makes, in order: none for words."""
    if isinstance(reply, ToolCallsReply):
        return reply.calls
    return (reply,) if isinstance(reply, ToolCallReply) else ()


Rule = Callable[[ReplyContext], Reply | VerdictReply | None]
"""A rule returns a reply (a ``VerdictReply`` to a judge), or None to let the next rule decide."""


def first_sentence(instructions: str) -> str:
    """``"You are Bob. Be terse."`` -> ``"You are Bob."``."""
    text = " ".join(instructions.split())
    match = re.search(r"[.!?](\s|$)", text)
    return text[: match.end()].strip() if match else text


def tool_rule(ctx: ReplyContext) -> Reply | None:
    """Call the tool the user's text names: by its name (``get_weather`` or ``get weather``),
    else in the user's own words (``transfer me to billing`` for ``transfer_to_billing``).

    The emulator's own policy, standing in for a model choosing a tool: a name written out
    wins (the first in the text, the longest at a tie); else a tool whose name's words all
    occur in the request, in any order with other words between, small words aside (``to``,
    ``the``, ``me``), plural or singular, and "send", "connect", "put through"... read as
    "transfer"; of several such tools, the one whose name and description share the most words
    with the request. ``what's the weather`` names no ``get_weather``: no call.
    """
    text = ctx.user_text
    if text is None or not ctx.tools:
        return None
    tool = _tool_by_name(text, ctx.tools) or _tool_by_words(text, ctx.tools)
    return ToolCallReply(tool.name, tool_arguments(tool, text)) if tool else None


def _tool_by_name(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    lowered = text.lower()
    found: list[tuple[int, int, ToolSpec]] = []
    for tool in tools:
        for form in {tool.name.lower(), tool.name.lower().replace("_", " ")}:
            # whole words only: a tool named "add" must not fire on "address"
            if match := re.search(rf"(?<!\w){re.escape(form)}(?!\w)", lowered):
                found.append((match.start(), -len(form), tool))
    return min(found, key=lambda hit: hit[:2])[2] if found else None


def _tool_by_words(text: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    asked = set(_content_words(text))
    best: tuple[int, ToolSpec] | None = None
    for tool in tools:
        named = _content_words(tool.name)
        if not named or not set(named) <= asked:
            continue
        shared = len(asked & {*named, *_content_words(tool.description)})
        if best is None or shared > best[0]:  # the first declared at a tie
            best = (shared, tool)
    return best[1] if best else None


def _content_words(text: str) -> list[str]:
    """The words that carry meaning: ``getWeather``/``get_weather`` -> ``["get", "weather"]``,
    lowercase, singular, synonyms of "transfer" as "transfer", small words left out."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    words = []
    for word in re.findall(r"[a-z0-9]+", spaced.lower()):
        if word in _SMALL_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(_SYNONYMS.get(word, word))
    return words


def tool_output_rule(ctx: ReplyContext) -> Reply | None:
    """After a tool ran, report what it returned; after a call that lacked a required
    argument, ask the caller for it."""
    last = ctx.last
    if last is None or last.role != "tool_output":
        return None
    if missing := _missing_arguments(ctx):
        # The tool's validation refused the call (livekit's ToolError names the missing
        # field); a model reading that asks the caller, it does not read the error out.
        wanted = " and the ".join(
            f"{' and '.join(names)} for {tool}" for tool, names in missing.items()
        )
        return TextReply(f"I need the {wanted}: what {'is it' if _one(missing) else 'are they'}?")
    return TextReply(f"The tool returned: {last.text}" if last.text else "Done.")


def _missing_arguments(ctx: ReplyContext) -> dict[str, list[str]]:
    """The required parameters the latest calls left out (their values could not be
    filled, ``tool_arguments``), by tool name; empty when every call had all of them."""
    calls = []
    for turn in reversed([t for t in ctx.history if t.role != "system"]):
        if turn.role not in ("tool_call", "tool_output"):
            break
        if turn.role == "tool_call":
            calls.append(turn)
    tools = {tool.name: tool for tool in ctx.tools}
    missing: dict[str, list[str]] = {}
    for call in reversed(calls):
        tool = tools.get(call.name or "")
        try:
            sent = json.loads(call.text or "{}")
        except json.JSONDecodeError:
            continue
        if tool is None or not isinstance(sent, dict):
            continue
        if names := [n for n in tool.parameters.get("required") or [] if n not in sent]:
            missing.setdefault(tool.name, []).extend(names)
    return missing


def _one(missing: dict[str, list[str]]) -> bool:
    return sum(len(names) for names in missing.values()) == 1


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

    def remove(self, rule: Rule) -> None:
        """Take out a rule you added (the function ``add`` returned); the next request is
        answered without it. ``UnknownRuleError`` (a ``ValueError``) naming the rules there are
        if it is not one."""
        try:
            self._custom.remove(rule)
        except ValueError:
            there = ", ".join(_name(custom) for custom in self._custom) or "none"
            raise UnknownRuleError(
                f"the rule {_name(rule)} is not among the rules added ({there}); the default "
                "rules cannot be removed, only preceded"
            ) from None

    def clear(self) -> None:
        """Take out every rule you added: the defaults answer alone."""
        self._custom.clear()

    def reply(self, ctx: ReplyContext) -> Reply:
        if ctx.judgment is not None:
            return ToolCallReply(ctx.judgment.tool, ctx.judgment.arguments(self._verdict(ctx)))
        for rule in (*self._custom, *DEFAULT_RULES):
            reply = rule(ctx)
            if reply is None:
                continue
            if isinstance(reply, VerdictReply):
                raise ReplyRuleError(
                    f"rule {_name(rule)} returned a VerdictReply to a request that is not a "
                    "judge's: return one only when ctx.judgment is set."
                )
            if isinstance(reply, TextReply):
                prefix = first_sentence(ctx.instructions)
                return TextReply(f"{prefix} {reply.text}" if prefix else reply.text)
            return reply
        raise AssertionError("echo_rule always answers")  # an invariant: it is the last rule

    def _verdict(self, ctx: ReplyContext) -> VerdictReply:
        """The first rule's verdict, else a fail. The judge asks for its tool's call
        (``tool_choice="required"``), so rules answering otherwise (written for the agent's
        turns) are passed over; a rule that raises is a fail, not an error, which a
        ``JudgeGroup`` would drop and so pass (judging.py)."""
        for rule in self._custom:
            try:
                reply = rule(ctx)
            except Exception as e:
                return VerdictReply(
                    "fail",
                    f"The reply rule {_name(rule)} raised {type(e).__name__}: {e}. Fix it, or "
                    f"take it out of the ReplyRules: .remove({_name(rule)}).",
                )
            if isinstance(reply, VerdictReply):
                return reply
        return UNSCRIPTED


def _name(rule: Rule) -> str:
    return str(getattr(rule, "__name__", repr(rule)))


def tool_arguments(tool: ToolSpec, text: str) -> dict[str, Any]:
    """Arguments for ``tool``: ``name=value`` / ``name: value`` found in the text.

    Values are typed by the tool's JSON schema, as a model constrained by it would send them:
    a list parameter gets a list (``items=Pizza`` or ``items=Pizza,Salad`` or
    ``items="Pizza, Ice Cream"`` or ``items=[...]``), numbers (digits, or the number words a
    caller says: ``quantity=five``), booleans and enum members their JSON types.

    Nothing is made up. A value that does not fit its parameter (``quantity=lots``), and a
    required parameter the text does not give, are left out of the call: the tool's
    validation then tells the model what is missing, as livekit's does for a real model's
    call (``prepare_function_arguments``: "missing required params are surfaced as
    ToolError so the LLM gets a concrete error message and can self-correct"; OpenAI's
    reference on a call's ``arguments``: "Validate the arguments in your code before calling
    your function"). A required parameter the schema fills itself is sent: its ``default``,
    or null where a strict schema made an optional one nullable (livekit then applies the
    Python default). Optional ones stay unset, as a model would leave them.
    """
    properties: dict[str, Any] = tool.parameters.get("properties", {}) or {}
    required = set(tool.parameters.get("required", []) or [])
    arguments: dict[str, Any] = {}
    for name, schema in properties.items():
        raw = _named_value(name, text)
        if raw is not None:
            value = _coerce(raw, schema, tool.parameters)
        else:
            value = _unsaid(schema) if name in required else _LEFT_OUT
        if value is not _LEFT_OUT:
            arguments[name] = value
    return arguments


def _named_value(name: str, text: str) -> str | None:
    """The text given to ``name``: quoted, bracketed, or a bare word (commas join a list)."""
    match = re.search(
        rf"\b{re.escape(name)}\s*[=:]\s*"
        r"(\"[^\"]*\"|'[^']*'|\[[^\]]*\]|[^\s,;]+(?:,[^\s,;]+)*)",
        text,
    )
    if match is None:
        return None
    raw = match.group(1)
    # quotes delimit a value; a bare one loses the sentence's end ("city=Paris?")
    return raw[1:-1] if raw[0] in "\"'" else raw.rstrip(".!?")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The concrete schema behind ``$ref`` (pydantic puts enums in ``$defs``) and unions."""
    for _ in range(_MAX_REFS):
        if isinstance(ref := schema.get("$ref"), str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = target
        elif branches := schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf"):
            schema = next((b for b in branches if b.get("type") != "null"), branches[0])
        else:
            return schema
    return schema


def _schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return str(kind)


def _members(schema: dict[str, Any]) -> list[Any] | None:
    """An enum's members (a ``const`` is an enum of one), or None."""
    if "const" in schema:
        return [schema["const"]]
    members = schema.get("enum")
    return list(members) if members else None


def _unsaid(schema: dict[str, Any]) -> Any:
    """A required parameter's value when the text gives none: what the schema itself says
    (its default; null where strict schemas make an optional parameter required and
    nullable, so a model sends null and livekit applies the Python default), else
    ``_LEFT_OUT``."""
    if "default" in schema:
        return schema["default"]
    return None if _nullable(schema) else _LEFT_OUT


def _nullable(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    branches = schema.get("anyOf") or schema.get("oneOf") or []
    return (isinstance(kind, list) and "null" in kind) or any(
        b.get("type") == "null" for b in branches
    )


def _coerce(raw: str, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """``raw`` as the JSON value ``schema`` asks for; ``_LEFT_OUT`` when it does not fit (a
    list, when one of its elements does not)."""
    if raw.strip().lower() in ("null", "none") and _nullable(schema):
        return None
    resolved = _resolve(schema, root)
    kind = _schema_type(resolved)
    if kind == "array":
        item_schema = resolved.get("items") or {}
        elements = [_coerce(element, item_schema, root) for element in _list_elements(raw)]
        return _LEFT_OUT if _LEFT_OUT in elements else elements
    if (members := _members(resolved)) is not None:
        return next((m for m in members if _same_member(raw, m)), _LEFT_OUT)
    value = _scalar(raw, kind)
    return _LEFT_OUT if value is None else value


def _list_elements(raw: str) -> list[str]:
    """``Pizza,Salad``, ``Pizza, Ice Cream``, ``[Pizza, Salad]`` or a JSON array, as strings."""
    if raw.startswith("["):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            raw = raw[1:-1]
        else:
            return [e if isinstance(e, str) else json.dumps(e) for e in parsed]
    return [e.strip().strip("\"'") for e in raw.split(",") if e.strip()]


def _same_member(raw: str, member: Any) -> bool:
    """Whether the text names this enum member (case-insensitively; numbers by value)."""
    if isinstance(member, str):
        return raw.strip().casefold() == member.casefold()
    if isinstance(member, bool):
        return _scalar(raw, "boolean") is member
    if isinstance(member, int | float):
        return bool(_scalar(raw, "number") == member)
    return False


def _scalar(raw: str, kind: str) -> Any:
    """A number, integer, boolean, object or string from text; None when it is not one."""
    if kind in ("integer", "number"):
        try:
            number = float(raw)
        except ValueError:
            return number_value(raw.strip().lower())  # a word, read as the spoken one is
        if not math.isfinite(number):  # JSON has no Infinity or NaN
            return None
        if kind == "number":
            return number
        return int(number) if number.is_integer() else None
    if kind == "boolean":
        lowered = raw.strip().lower()
        return True if lowered in _TRUE else False if lowered in _FALSE else None
    if kind == "object":
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return raw


# fmt: off
_SMALL_WORDS = frozenset((
    "a", "an", "the", "to", "me", "my", "i", "we", "us", "our", "you", "your", "please",
    "can", "could", "would", "will", "shall", "may", "be", "is", "am", "are", "it",
    "this", "that", "of", "for", "on", "in", "at", "with", "and", "or", "now", "then",
    "just", "through", "over", "up", "so",
))
# fmt: on
"""the words a request puts around a tool's meaning ("please transfer me to the ...")"""
_SYNONYMS = {
    word: "transfer"
    for word in ("send", "connect", "put", "route", "hand", "handoff", "forward", "pass")
}
"""ways a caller asks to be transferred, as a model reads them: one word"""

_LEFT_OUT: Any = object()
"""a parameter the text gives no value for that fits: not sent"""
_MAX_REFS = 32
"""references followed at most: a schema whose ``$ref``s loop must not hang a reply"""
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")

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
            raise ValueError("exponent too large")  # control flow: the rule does not answer
        return _BINARY[type(node.op)](left, right)
    raise ValueError("not arithmetic")  # control flow: caught by the arithmetic rule


def _format_number(value: float) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"
