"""A front desk that hands weather questions to a weather desk: the agent notebook 05 checks,
written as a script you would deploy.

Run it on its own with ``python weather_agent.py console``, or attach it to a notebook with
``AgentProcess("weather_agent.py")``. Its model reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``
from the environment, as livekit's OpenAI plugin does.
"""

from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    ChatContext,
    JobContext,
    RunContext,
    cli,
    function_tool,
)
from livekit.plugins import openai


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(
            instructions="You are the front desk. Greet callers and hand weather questions "
            "to the weather desk."
        )

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def transfer_to_weather(self, context: RunContext) -> Agent:
        """Hand the caller to the weather desk."""
        return WeatherDesk(chat_ctx=self.chat_ctx)


class WeatherDesk(Agent):
    def __init__(self, chat_ctx: ChatContext | None = None) -> None:
        super().__init__(
            instructions="You are the weather desk. Answer questions about the weather.",
            chat_ctx=chat_ctx,
        )

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Ask which city.")

    @function_tool
    async def lookup_weather(self, context: RunContext, location: str) -> str:
        """Look up today's weather.

        Args:
            location: The city to look up.
        """
        return f"It is sunny in {location}."


server = AgentServer()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(llm=openai.realtime.RealtimeModel(modalities=["text"]))
    await session.start(agent=FrontDesk(), room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
