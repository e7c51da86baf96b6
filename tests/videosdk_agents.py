"""A VideoSDK two-agent app written as VideoSDK's docs write one, for the tests."""

from __future__ import annotations

from videosdk.agents import Agent, AgentSession, JobContext, Pipeline, function_tool
from videosdk.plugins.openai import OpenAILLM, OpenAISTT, OpenAITTS


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the billing specialist.", inherit_context=True)

    async def on_enter(self) -> None:
        await self.session.say("Billing here, how can I help?")

    async def on_exit(self) -> None:
        pass


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk.")

    async def on_enter(self) -> None:
        await self.session.say("Hello, front desk.")

    async def on_exit(self) -> None:
        await self.session.say("Goodbye from the front desk.")

    @function_tool
    async def get_weather(self, city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @function_tool
    async def check_balance(self) -> str:
        """The user's account balance."""
        raise ConnectionError("the accounts service is down")

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Transfer the user to billing."""
        return Billing()


async def entrypoint(ctx: JobContext) -> None:
    pipeline = Pipeline(llm=OpenAILLM(), tts=OpenAITTS())
    session = AgentSession(agent=FrontDesk(), pipeline=pipeline)
    await ctx.run_until_shutdown(session=session, wait_for_participant=True)


async def spoken_entrypoint(ctx: JobContext) -> None:
    pipeline = Pipeline(stt=OpenAISTT(), llm=OpenAILLM(), tts=OpenAITTS())
    session = AgentSession(agent=FrontDesk(), pipeline=pipeline)
    await ctx.run_until_shutdown(session=session, wait_for_participant=True)


async def text_only_entrypoint(ctx: JobContext) -> None:
    session = AgentSession(agent=FrontDesk(), pipeline=Pipeline(llm=OpenAILLM()))
    await session.start()
