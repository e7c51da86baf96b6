"""Names that moved or were renamed (issue 31's redesign) keep working for one release, each
saying once, at the user's line, what to use instead: the one wording and the one module
``__getattr__`` every old name goes through."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` goes in the next release and ``new`` replaces it. ``stacklevel``:
    the user's frame as seen from here (3: the caller of the function calling this)."""
    warnings.warn(
        f"{old} is deprecated and goes in the next release: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved_names(module: str, moved: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``module`` answering each old name in ``moved`` (old name ->
    (the module it lives in now, its name there)) with the object, warning where it lives."""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            # as Python answers an unknown name: hasattr() and `from ... import` rely on it
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, new_name = moved[name]
        warn_renamed(f"{module}.{name}", f"{home}.{new_name}")
        return getattr(importlib.import_module(home), new_name)

    return __getattr__
