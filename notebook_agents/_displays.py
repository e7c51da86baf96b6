"""How a result shows itself in a notebook, without the engine importing widget code: the
package registers a view per result type (``_result_views``), and a result asks here for its
own. The results stay plain data under the views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_VIEWS: dict[type, Callable[[Any], Any]] = {}


def register_view(kind: type, make: Callable[[Any], Any]) -> None:
    """Show each ``kind`` (and its subclasses) as ``make(result)``."""
    _VIEWS[kind] = make


def view_of(result: object) -> Any:
    """``result``'s widget, made by the view registered for its type."""
    for kind in type(result).__mro__:
        if kind in _VIEWS:
            return _VIEWS[kind](result)
    # the package's bug (every result type registers its view), and mimebundle_of's cue to
    # show the text instead
    raise LookupError(
        f"no view is registered for {type(result).__name__}: register one in "
        "notebook_agents/_result_views.py (register_view)"
    )


def mimebundle_of(result: object, **kwargs: Any) -> Any:
    """``result``'s widget as IPython displays it; None (its text repr then) with no view."""
    try:
        view = view_of(result)
    except LookupError:
        return None
    return view._repr_mimebundle_(**kwargs)
