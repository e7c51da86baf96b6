# ruff: noqa
# mypy: ignore-errors
# Verbatim from the brief (livekit/agents PR #5229 description): user code we did not write.
"""The Greeter/Weather agents of livekit/agents PR #5229's description, as a LiveKit developer
writes them (reconstructed: the PR's test script; one shared RealtimeModel, on_enter replies).
Not our code: use it unchanged through NotebookRunner (make the model from the emulator)."""

import logging

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, RunContext, function_tool
from livekit.plugins import openai

logger = logging.getLogger("basic-agent")


class GreeterAgent(Agent):
    def __init__(self, chat_ctx=None) -> None:
        super().__init__(
            instructions="You are a friendly greeter. Ask how you can help; if the user asks "
            "about the weather, transfer them to the weather agent.",
            chat_ctx=chat_ctx,
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def transfer_to_weather(self, context: RunContext):
        """Transfer the user to the weather agent."""
        logger.info("handing off to WeatherAgent")
        return WeatherAgent(chat_ctx=self.chat_ctx.copy())


class WeatherAgent(Agent):
    def __init__(self, chat_ctx=None) -> None:
        super().__init__(
            instructions="You are a weather agent. Answer questions about the weather.",
            chat_ctx=chat_ctx,
        )

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def lookup_weather(self, context: RunContext, location: str):
        """Look up the weather for a location.

        Args:
            location: The city to look up.
        """
        return f"It is sunny in {location}."

    @function_tool
    async def transfer_to_greeter(self, context: RunContext):
        """Transfer the user back to the greeter."""
        logger.info("handing off to GreeterAgent")
        return GreeterAgent(chat_ctx=self.chat_ctx.copy())


def make_server(realtime_model) -> AgentServer:
    """The script's server; the shared model comes from the caller (the emulator's base_url)."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session = AgentSession(llm=realtime_model)
        await session.start(agent=GreeterAgent(), room=ctx.room)

    return server
