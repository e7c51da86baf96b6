"""Notebook cells the browser tests share."""

from __future__ import annotations

AGENTS = """from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner

emulator = Emulator().start()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing.")

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Concierge(Agent):
    def __init__(self, greets: bool = False) -> None:
        super().__init__(instructions="You are the Concierge.")
        self.greets = greets

    async def on_enter(self) -> None:
        if self.greets:
            self.session.generate_reply()

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        \"\"\"Hand the caller to billing.\"\"\"
        return Billing()


server = AgentServer()
"""
"""The Concierge (greeting on entry if asked) and Billing (on entry), an emulator and an
``AgentServer`` without its session: a test's cell adds the ``rtc_session`` it needs."""
