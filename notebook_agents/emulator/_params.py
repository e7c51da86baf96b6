"""Parsing of the emulator's query-string and command-line parameters; errors name them."""

from __future__ import annotations


class ParameterError(ValueError):
    """A latency or fault parameter that cannot be used; the message names it and the fix."""


def parse_number(name: str, raw: str | float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ParameterError(f"{name}={raw!r} is not a number (e.g. {name}=20)") from None
    if value < 0 or value != value:
        raise ParameterError(f"{name}={raw!r} must be a number >= 0")
    return value


def parse_count(name: str, raw: str | int) -> int:
    value = parse_number(name, raw)
    if not value.is_integer():
        raise ParameterError(f"{name}={raw!r} must be a whole number")
    return int(value)


def parse_flag(name: str, raw: str | bool) -> bool:
    if isinstance(raw, bool):
        return raw
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on", ""):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ParameterError(f"{name}={raw!r} must be true or false (e.g. {name}=1)")
