"""VideoSDK's errors derive from the package's root too (walked where the extra is installed)."""

from __future__ import annotations

import asyncio

import pytest

import notebook_agents.videosdk
from notebook_agents import NotebookAgentsError, RunnerError
from notebook_agents.runner import EntrypointError
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.videosdk import VideoSDKRunner
from notebook_agents.videosdk.room import OfflineRoom
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


async def test_the_videosdk_runners_refusals_are_the_packages_and_keep_their_builtin_base() -> None:
    """A wrong entrypoint, and speaking into a room no pipeline hears: ``except
    NotebookAgentsError`` catches both, each still the builtin it was."""

    async def no_context() -> None:
        pass

    with pytest.raises(NotebookAgentsError) as refused:
        VideoSDKRunner(no_context)  # type: ignore[arg-type]
    assert isinstance(refused.value, EntrypointError) and isinstance(refused.value, TypeError)
    room = OfflineRoom(asyncio.get_running_loop())
    with pytest.raises(NotebookAgentsError) as unheard:
        await room.speak(synthesize("hello").tobytes(), SAMPLE_RATE)
    assert isinstance(unheard.value, RunnerError) and isinstance(unheard.value, RuntimeError)
