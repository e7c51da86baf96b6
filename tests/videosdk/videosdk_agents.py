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
        """The weather in a city, such as Paris or Oslo."""
        return f"sunny in {city}"

    @function_tool
    async def check_balance(self) -> str:
        """The user's account balance."""
        raise ConnectionError("the accounts service is down")

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Transfer the user to billing."""
        return Billing()


class Dentist(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the dentist.")

    async def on_enter(self) -> None:
        await self.session.reply(instructions="Greet the patient and ask what hurts")

    async def on_exit(self) -> None:
        pass


class Reception(Agent):
    """Hands off to an agent whose on_enter asks for a reply (VideoSDK runs the handoff's
    on_enter inside the tool call, so that reply runs in the background)."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the reception.")

    async def on_enter(self) -> None:
        pass

    async def on_exit(self) -> None:
        pass

    @function_tool
    async def transfer_to_dentist(self) -> Agent:
        """Transfer the patient to the dentist."""
        return Dentist()


async def reception_entrypoint(ctx: JobContext) -> None:
    pipeline = Pipeline(stt=OpenAISTT(), llm=OpenAILLM(), tts=OpenAITTS())
    session = AgentSession(agent=Reception(), pipeline=pipeline)
    await ctx.run_until_shutdown(session=session, wait_for_participant=True)


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
