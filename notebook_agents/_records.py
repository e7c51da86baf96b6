"""Typed records from decoded JSON: a dataclass built field by field against its annotations
(or a plain dict checked key by key against a TypedDict).

Loaders (a saved trace, benchmark results) use it so that a wrongly typed, missing or unknown
field is refused with its place (``trials[3].rtt_ms``), what was expected and what was found,
instead of loading and failing later far from the file. Loading is not a hot path; recording
is, and never comes here.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeVar, Union, get_args, get_origin

from typing_extensions import get_type_hints, is_typeddict

from .errors import NotebookAgentsError

T = TypeVar("T")
Convert = Callable[[Any], Any]
"""checks a decoded JSON value against one annotation and returns it typed (an integer where a
float is wanted becomes a float); FieldError, its path relative to that value, if it is wrong"""

_SCALARS: dict[Any, tuple[str, Callable[[Any], bool]]] = {
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: (
        "a finite number",
        # a timing or a clock reading: NaN and infinity are never measurements
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    ),
    str: ("a string", lambda v: isinstance(v, str)),
    type(None): ("null", lambda v: v is None),
}
_NONE = type(None)
_UNIONS = (Union, types.UnionType)
_SHOWN = 60
"""characters of a wrong value quoted in an error"""


class FieldError(NotebookAgentsError, ValueError):
    """A field that is missing, unknown or wrongly typed, at ``where`` (``trials[3].rtt_ms``)."""

    def __init__(self, problem: str, path: tuple[str | int, ...] = ()) -> None:
        self.problem, self.path = problem, path
        steps = (f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)
        self.where = "".join(steps).lstrip(".")
        super().__init__(f"{self.where}: {problem}" if path else problem)

    def under(self, step: str | int) -> FieldError:
        """The same error seen from the record or list holding it: ``step`` is where."""
        return FieldError(self.problem, (step, *self.path))


class FieldSpec(NamedTuple):
    hint: Any
    """the field's resolved annotation"""
    convert: Convert
    required: bool
    """no default: a record must have it"""


def build(cls: type[T], record: Any) -> T:
    """``cls(**record)``, each field checked against its annotation; FieldError names the
    first that is missing (without a default), unknown or of the wrong type."""
    if not isinstance(record, dict):
        raise wrong("an object", record)
    fields = fields_of(cls)
    for name in record:
        if name not in fields:
            raise FieldError(f"not a field (the fields are {', '.join(fields)})", (name,))
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name in record:
            values[name] = _under(name, spec.convert, record[name])
        elif spec.required:
            raise FieldError(f"missing, expected {describe(spec.hint)}", (name,))
    return cls(**values)


def fields_of(cls: type[Any]) -> dict[str, FieldSpec]:
    """Each field of dataclass ``cls`` with its annotation and checker, made once per class."""
    known = _FIELDS.get(cls)
    if known is None:
        # resolving annotations evaluates their text: once per class, not once per record
        hints = get_type_hints(cls)
        _FIELDS[cls] = known = {
            f.name: FieldSpec(
                hints[f.name],
                converter(hints[f.name]),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
        }
    return known


def value(raw: Any, hint: Any, name: str) -> Any:
    """``raw`` checked against annotation ``hint``, as field ``name`` (which errors name)."""
    return _under(name, converter(hint), raw)


def converter(hint: Any) -> Convert:
    """The checker of annotation ``hint``, made once: a record's fields are checked without
    inspecting their annotations again."""
    known = _CONVERTERS.get(hint)
    if known is None:
        _CONVERTERS[hint] = known = _make_converter(hint)
    return known


_FIELDS: dict[type[Any], dict[str, FieldSpec]] = {}
_CONVERTERS: dict[Any, Convert] = {}


def describe(hint: Any) -> str:
    """What ``hint`` accepts, in JSON's words: "a finite number or null"."""
    origin = get_origin(hint)
    if hint is Any:
        return "anything"
    if origin in _UNIONS:
        return " or ".join(describe(arm) for arm in arms(hint))
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(hint))
    if origin is list:
        return "a list"
    if origin is dict or dataclasses.is_dataclass(hint) or is_typeddict(hint):
        return "an object"
    return _SCALARS[hint][0]


def arms(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union annotation (``float | None``), or the annotation alone."""
    return get_args(hint) if get_origin(hint) in _UNIONS else (hint,)


def not_utf8(error: UnicodeDecodeError) -> str:
    """ "not UTF-8 text (byte 0x89 at offset 0)": where a binary or mis-encoded file breaks."""
    return f"not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start})"


def _make_converter(hint: Any) -> Convert:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return lambda raw: raw
    if origin is dict and args[1] is Any:  # a trace event's data: any JSON object will do
        return _checked(hint, lambda raw: isinstance(raw, dict))
    if origin in _UNIONS:
        return _union_converter(hint)
    if origin is list:
        item = converter(args[0])
        return _checked(
            hint,
            lambda raw: isinstance(raw, list),
            lambda raw: [_under(i, item, x) for i, x in enumerate(raw)],
        )
    if origin is dict:
        value_of = converter(args[1])
        return _checked(
            hint,
            lambda raw: isinstance(raw, dict),
            lambda raw: {k: _under(k, value_of, v) for k, v in raw.items()},
        )
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return functools.partial(build, hint)
    if is_typeddict(hint):
        return _typed_dict_converter(hint)
    if origin is Literal:
        choices = frozenset(args)
        return _checked(hint, lambda raw: isinstance(raw, str) and raw in choices)
    return _checked(hint, _SCALARS[hint][1], float if hint is float else None)


def _checked(
    hint: Any, accepts: Callable[[Any], bool], convert: Callable[[Any], Any] | None = None
) -> Convert:
    """A converter: ``convert(raw)`` (or ``raw`` itself) if ``accepts(raw)``, else FieldError."""
    expected = describe(hint)

    def check(raw: Any) -> Any:
        if not accepts(raw):
            raise wrong(expected, raw)
        return raw if convert is None else convert(raw)

    return check


def _typed_dict_converter(hint: Any) -> Convert:
    """A plain dict checked against TypedDict ``hint``: its required keys, no other key, each
    value of its type; the dict stays a dict (a trace event's data)."""
    hints = get_type_hints(hint)
    keys = {name: converter(key_hint) for name, key_hint in hints.items()}
    required = hint.__required_keys__

    def check(raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise wrong("an object", raw)
        for name in raw:
            if name not in keys:
                raise FieldError(f"not a key (the keys are {', '.join(keys)})", (name,))
        for name in required:
            if name not in raw:
                raise FieldError(f"missing, expected {describe(hints[name])}", (name,))
        return {name: _under(name, keys[name], value) for name, value in raw.items()}

    return check


def _union_converter(hint: Any) -> Convert:
    nullable = _NONE in arms(hint)
    others = [converter(arm) for arm in arms(hint) if arm is not _NONE]
    expected = describe(hint)

    def check(raw: Any) -> Any:
        if raw is None and nullable:  # before the other arms: a failing one is costly
            return None
        errors: list[FieldError] = []
        for convert in others:
            try:
                return convert(raw)
            except FieldError as e:
                errors.append(e)
        # a list of the right kind with one wrong item: name the item, not the whole union
        deeper = [e for e in errors if e.path]
        raise deeper[0] if deeper else wrong(expected, raw)

    return check


def _under(step: str | int, convert: Convert, raw: Any) -> Any:
    """``convert(raw)`` for the item or field ``step`` of a list or record, which errors name."""
    try:
        return convert(raw)
    except FieldError as e:
        raise e.under(step) from None


def wrong(expected: str, found: Any) -> FieldError:
    """ "found [[1]], expected a list": ``found`` quoted as JSON, shortened."""
    shown = json.dumps(found, default=repr)
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    return FieldError(f"found {shown}, expected {expected}")
