"""Which view shows which result in a notebook, registered when the package is imported: the
results stay plain data under the views, and a headless run (the CLI, pytest, the bench) imports
no widget code, as each view is imported only when a result is first shown."""

from __future__ import annotations

from typing import Any

from ._displays import register_view
from .suites.results import SuiteResult


def _suite_view(result: SuiteResult) -> Any:
    from .views.suite_view import SuiteView

    return SuiteView(result)


register_view(SuiteResult, _suite_view)
