"""The agent's own LLM used from a notebook cell: its ``chat`` carried into the job.

An LLM's HTTP connection pool belongs to the loop that first used it: the job's, for the
model the session runs on. A ``chat`` from a cell (a judge, ``JudgeGroup``) would leave a
connection of the cell's loop in that pool and fail the agent's next turn ("bound to a
different event loop"). So the stream is made and read in the job, and its chunks relayed to
the caller: the judge works as it does in a pytest eval, and errors are the model's own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import AsyncIterable, AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from livekit.agents import llm

T = TypeVar("T")
Carry = Callable[[Coroutine[Any, Any, Any]], concurrent.futures.Future[Any]]
"""a coroutine -> run on the job's loop in the job's context (``RuntimeError``: the loop has
closed)"""


def carried_chat(
    chat: Callable[..., llm.LLMStream], loop: asyncio.AbstractEventLoop, carry: Carry
) -> Callable[..., llm.LLMStream | CarriedStream]:
    """``chat`` as is on ``loop`` (the job's); from any other running loop, carried there."""

    @functools.wraps(chat)
    def guarded(**kwargs: Any) -> llm.LLMStream | CarriedStream:
        try:
            caller = asyncio.get_running_loop()
        except RuntimeError:  # no loop here: upstream's own error
            caller = None
        if caller is None or caller is loop:
            return chat(**kwargs)
        made = _made(chat, kwargs)
        try:
            return CarriedStream(carry(made), carry, kwargs)
        except RuntimeError:  # the job has ended: its loop has nothing left to break
            made.close()
            return chat(**kwargs)

    return guarded


async def _made(chat: Callable[..., llm.LLMStream], kwargs: dict[str, Any]) -> llm.LLMStream:
    return chat(**kwargs)


async def _next(stream: llm.LLMStream) -> llm.ChatChunk | None:
    """The stream's next chunk, None at its end (StopAsyncIteration does not cross loops)."""
    return await anext(stream, None)


class CarriedStream:
    """An ``LLMStream`` made and read in the agent's job, relayed to a caller on another loop:
    livekit's ``LLMStream`` surface (iterate, ``collect``, ``to_str_iterable``, ``aclose``,
    ``async with``)."""

    def __init__(
        self,
        made: concurrent.futures.Future[llm.LLMStream],
        carry: Carry,
        kwargs: dict[str, Any],
    ) -> None:
        self._made = made
        self._carry = carry
        self._chat_ctx: llm.ChatContext = kwargs["chat_ctx"]
        self._tools: list[llm.Tool] = list(kwargs.get("tools") or [])

    @property
    def chat_ctx(self) -> llm.ChatContext:
        return self._chat_ctx

    @property
    def tools(self) -> list[llm.Tool]:
        return self._tools

    async def _in_job(self, step: Callable[[llm.LLMStream], Coroutine[Any, Any, T]]) -> T:
        stream = await asyncio.wrap_future(self._made)
        result: T = await asyncio.wrap_future(self._carry(step(stream)))
        return result

    def __aiter__(self) -> AsyncIterator[llm.ChatChunk]:
        return self

    async def __anext__(self) -> llm.ChatChunk:
        chunk = await self._in_job(_next)
        if chunk is None:
            raise StopAsyncIteration
        return chunk

    async def collect(self) -> llm.CollectedResponse:
        return await self._in_job(llm.LLMStream.collect)

    def to_str_iterable(self) -> AsyncIterable[str]:
        async def strings() -> AsyncIterator[str]:
            async with self:
                async for chunk in self:
                    if chunk.delta and chunk.delta.content:
                        yield chunk.delta.content

        return strings()

    async def aclose(self) -> None:
        await self._in_job(llm.LLMStream.aclose)

    async def __aenter__(self) -> CarriedStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
