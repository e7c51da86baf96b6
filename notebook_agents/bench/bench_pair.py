"""The bench's own pair, Receptionist -> Specialist: the default when no agents are given,
run as any pair is (``YourAgents`` through ``agents_trial``), so it is labelled by what ran too.

The asked mode is applied at the handoff like yours (``HandoffWatch``); only the tools are the
pair's own doing: a model that cannot change a live session's tools (Gemini Live) keeps it only
for the same tool objects, so on the reuse arm the Specialist gets the Receptionist's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from livekit.agents import Agent, function_tool, llm

from ..modes import SessionMode
from .scenario import A_INSTRUCTIONS, B_INSTRUCTIONS, HANDOFF_REQUEST
from .your_agents import YourAgents


@functools.cache
def _pair() -> tuple[Callable[[SessionMode], Agent], type[Agent]]:
    """The pair's classes, made on first use (the package defines no ``Agent`` class at
    import: a user's agents never meet one of ours by name): A, and B."""

    class Specialist(Agent):
        """B: answers at once in ``on_enter`` (the reply the bench times)."""

        def __init__(self, tools: list[llm.Tool | llm.Toolset]) -> None:
            super().__init__(instructions=B_INSTRUCTIONS, tools=tools)

        async def on_enter(self) -> None:
            self.session.generate_reply()

    class Receptionist(Agent):
        """A: hands off when asked (``HANDOFF_REQUEST`` names its tool)."""

        def __init__(self, asked: SessionMode) -> None:
            super().__init__(instructions=A_INSTRUCTIONS)
            self._asked = asked

        @function_tool
        async def transfer_to_the_specialist(self) -> Agent:
            """Hand the caller to the specialist."""
            model = self.session.llm
            shared = (
                self._asked == "reused"
                and isinstance(model, llm.RealtimeModel)
                and not model.capabilities.mutable_tools
            )
            return Specialist(list(self.tools) if shared else [])

    return Receptionist, Specialist


def bench_pair(asked: SessionMode) -> YourAgents:
    """The bench's pair for a trial asked ``asked``, as ``YourAgents``."""
    receptionist, specialist = _pair()
    return YourAgents(
        lambda: receptionist(asked), HANDOFF_REQUEST, handoff_to=specialist, label="bench pair"
    )
