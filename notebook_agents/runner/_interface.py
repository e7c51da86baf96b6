"""What every runner offers, in the kernel or in another process: views and analyses take either."""

from __future__ import annotations

import concurrent.futures
from typing import Any, ClassVar, Protocol, runtime_checkable

from livekit.agents import RunResult
from typing_extensions import Self

from ..trace import Trace
from ._core import RunnerState
from .errors import RunnerError


@runtime_checkable
class AgentRunner(Protocol):
    """An agent the notebook talks to: ``NotebookRunner`` (in the kernel) or ``AgentProcess``
    (a script in another process), ``VideoSDKRunner`` (a VideoSDK job). Each records into
    ``trace`` and takes typed turns."""

    agent_base: ClassVar[type[Any]]
    """the class its framework's agents subclass (livekit's or VideoSDK's ``Agent``): what
    ``new_agent_type=`` in a scenarios file names a subclass of"""
    state: RunnerState
    failure: RunnerError | None
    trace: Trace

    def start(self) -> Self: ...

    async def ready(self, timeout: float | None = None) -> Any: ...

    def stop(self) -> None: ...

    async def send_text(self, text: str, timeout: float = 30.0) -> str: ...

    def submit_text(self, text: str) -> concurrent.futures.Future[str]: ...

    async def run(
        self, user_input: str, *, output_type: type[Any] | None = None, timeout: float = 30.0
    ) -> RunResult[Any]: ...

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]: ...
