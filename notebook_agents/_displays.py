"""How a result shows itself in a notebook, without the engine importing widget code: each
result type is shown by a view named here, imported only when a result is first shown. The
results stay plain data under the views, and a headless run (the CLI, pytest, the bench)
imports no widget code."""

from __future__ import annotations

import importlib
from typing import Any

SHOWN_AS: dict[str, tuple[str, str]] = {
    "notebook_agents.suites.results.SuiteResult": ("notebook_agents.views.suite_view", "SuiteView"),
}
"""a result type (module-qualified) -> the module and name of the view that shows it: names,
not imports, so this ground layer depends on neither side"""


def view_of(result: object) -> Any:
    """``result``'s widget, made by the view named for its type (or a base of it)."""
    for kind in type(result).__mro__:
        shown_by = SHOWN_AS.get(f"{kind.__module__}.{kind.__qualname__}")
        if shown_by is not None:
            module, name = shown_by
            return getattr(importlib.import_module(module), name)(result)
    # the package's bug (every result type names its view), and mimebundle_of's cue to
    # show the text instead
    raise LookupError(
        f"no view is named for {type(result).__name__}: name one in "
        "notebook_agents/_displays.py (SHOWN_AS)"
    )


def mimebundle_of(result: object, **kwargs: Any) -> Any:
    """``result``'s widget as IPython displays it; None (its text repr then) with no view."""
    try:
        view = view_of(result)
    except LookupError:
        return None
    return view._repr_mimebundle_(**kwargs)
