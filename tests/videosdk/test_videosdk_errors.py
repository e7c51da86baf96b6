"""VideoSDK's errors derive from the package's root too (walked where the extra is installed)."""

from __future__ import annotations

import notebook_agents.videosdk
from notebook_agents import NotebookAgentsError
from tests.test_errors import exceptions_defined, package_modules


def test_every_exception_the_videosdk_adapter_defines_derives_from_the_root() -> None:
    modules = list(package_modules(notebook_agents.videosdk))
    assert "notebook_agents.videosdk.runner" in {module.__name__ for module in modules}
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for module in modules
        for cls in exceptions_defined(module)
        if not issubclass(cls, NotebookAgentsError)
    ]
    assert outside == [], "derive these from notebook_agents.NotebookAgentsError"
