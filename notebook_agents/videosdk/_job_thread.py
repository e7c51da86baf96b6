"""A ``VideoSDKRunner``'s job, on a thread and loop of its own: your entrypoint run as VideoSDK's
``WorkerJob`` runs it (its job context current), the session it makes followed (traced,
ready once its greeting is said), and its close as a room's end would close it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from videosdk.agents import AgentSession, JobContext, build_openai_schema

from .._environ import environment
from ..runner._core import RunnerCore
from ..runner.errors import RunnerError
from ._videosdk_internals import job_scope
from .job import OfflineJobContext, QuietOfflineAnalytics
from .reading import VideoSDKReader
from .room import OfflineRoom

if TYPE_CHECKING:
    from ..emulator import Emulator

Entrypoint = Callable[[JobContext], Awaitable[None]]
"""``async def entrypoint(ctx: JobContext)``, as VideoSDK's ``WorkerJob`` takes it"""


class VideoSDKJob(RunnerCore[AgentSession]):
    """The job's thread and loop, its entrypoint and the session it makes."""

    def _init_job(self, entrypoint: Entrypoint, emulator: Emulator | None) -> None:
        self.entrypoint = entrypoint
        self.emulator = emulator
        self.session: AgentSession | None = None
        self.ctx: OfflineJobContext | None = None
        self._reader: VideoSDKReader | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._stop_requested = threading.Event()
        self._stop_signal: asyncio.Event | None = None
        self._state_changed: asyncio.Event | None = None
        self._quiet_analytics = QuietOfflineAnalytics()
        self._greeting: asyncio.Task[None] | None = None
        """waits for the greeting to be said, then makes the runner ready"""

    @property
    def room(self) -> OfflineRoom | None:
        """The job's room (once its entrypoint connected): ``room.played`` is what the agent
        said aloud, each stretch with when it began and ended."""
        return self.ctx.offline_room if self.ctx is not None else None

    def _agent(self) -> str | None:
        return self._reader.agent if self._reader is not None else None

    def _serve(self) -> None:
        loop = self._loop
        assert loop is not None
        try:
            if not self._stop_requested.is_set():
                loop.run_until_complete(self._job())
        except BaseException as e:
            self._fail(e)
        finally:
            try:
                # what asyncio.run (VideoSDK's WorkerJob) does after the entrypoint: the tasks
                # the session left (its recognizer's consumer, a synthesis) are cancelled
                loop.run_until_complete(_cancelled(asyncio.all_tasks(loop)))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                self._fail(RunnerError("the job ended before a session started"))
                self._done.set()

    async def _job(self) -> None:
        loop = asyncio.get_running_loop()
        self._stop_signal = stop = asyncio.Event()
        if self._stop_requested.is_set():  # stopped before the signal existed
            return
        self._state_changed = asyncio.Event()
        self.ctx = ctx = OfflineJobContext(on_session=self._session_made, loop=loop)
        with job_scope(ctx):
            self._job_began()  # turns run in the job's context: its event bus, its job context
            env = self.emulator.openai_environment() if self.emulator is not None else {}
            with environment(env):  # until the session has started: the models are built then
                entry = asyncio.create_task(self._entry(ctx), name="videosdk-entrypoint")
                stopping = asyncio.create_task(stop.wait())
                ready = asyncio.wrap_future(self._ready)
                await asyncio.wait({entry, stopping, ready}, return_when=asyncio.FIRST_COMPLETED)
                if ready.done() and not ready.cancelled():
                    ready.exception()  # ready() raises it to the notebook; retrieved here too
                else:
                    ready.cancel()
            if not ready.done() and entry.done() and not stop.is_set():
                self._fail(RunnerError("the entrypoint returned without starting an AgentSession"))
            await stop.wait()
            stopping.cancel()
            await self._close(ctx, entry)

    async def _entry(self, ctx: OfflineJobContext) -> None:
        try:
            await self.entrypoint(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            hint = ""
            if self.emulator is None and "OPENAI_API_KEY" in str(e):
                hint = (
                    "; offline, give the runner an emulator: VideoSDKRunner(entrypoint, "
                    "emulator=Emulator().start()) points your OpenAI plugins at it"
                )
            failure = RunnerError(f"the entrypoint raised {type(e).__name__}: {e}{hint}")
            failure.__cause__ = e
            self._fail(failure)
            self.trace.record_failure(str(failure))

    async def _close(self, ctx: OfflineJobContext, entry: asyncio.Task[None]) -> None:
        """Close the session as a room's end would (its ``run_until_shutdown`` returns), or
        shut the job down; the entrypoint then ends, or is cancelled."""
        if self._reader is not None:
            self._reader.close_reason = "job_shutdown"
        end = getattr(ctx.room, "_on_session_end", None)
        with contextlib.suppress(Exception):
            if end is not None and not entry.done():
                end("the notebook stopped the runner")
            else:
                await asyncio.wait_for(ctx.shutdown(), self.stop_timeout)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(entry), self.stop_timeout)
        entry.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await entry
        self.trace.record_closed("job_shutdown")

    def _session_made(self, session: AgentSession) -> None:
        """Each ``AgentSession`` the entrypoint makes, as it is made (its ``__init__``)."""
        if self.session is not None:
            return  # one session per job is recorded: the first
        if session.pipeline.config.is_realtime:
            # its typed turns return before the model answers, and OpenAIRealtime() reads no
            # OPENAI_BASE_URL (its default is OpenAI's own URL): refused before it connects
            # (VideoSDK only logs what its session's __init__ raises: its start raises it)
            refusal = RunnerError(
                "VideoSDKRunner runs cascaded pipelines, Pipeline(stt=..., llm=..., tts=...); "
                "a realtime model (OpenAIRealtime) is not supported offline yet"
            )

            async def refused(*args: Any, **kwargs: Any) -> None:
                raise refusal

            session.start = refused
            return
        self.session = session
        self._reader = reader = self.trace.attach_reader(VideoSDKReader())
        reader.attach(session)
        reader.on_change = self._session_changed
        reader.on_handoff = self._offer_words
        start = session.start

        @functools.wraps(start)
        async def started(*args: Any, **kwargs: Any) -> Any:
            # with run_until_shutdown=True this start returns at shutdown, the inner one (from
            # ctx.run_until_shutdown) once the first agent's on_enter has run
            try:
                return await start(*args, **kwargs)
            finally:
                if not self._ready.done() and self._greeting is None:
                    self._greeting = asyncio.create_task(self._ready_when_quiet(session))

        session.start = started

    async def _ready_when_quiet(self, session: AgentSession) -> None:
        """Ready once the greeting has been said: its ``say`` returns before it is played."""
        try:
            self._offer_words(session.agent)
            await self._quiet(session, ("thinking", "speaking"))
        except Exception as e:  # this task's error would otherwise go unseen
            self._fail(e)
            return
        self._greeting_said()
        self._became_ready(session)

    def _offer_words(self, agent: Any) -> None:
        """The emulator's speech recognition hears ``agent``'s words from now on (a spoken
        turn before its LLM is asked would otherwise be heard in no words of its)."""
        if self.emulator is not None:
            tools = [build_openai_schema(tool) for tool in agent.tools]
            self.emulator.offer(agent.instructions, tools)

    def _session_changed(self) -> None:
        if self._state_changed is not None:
            self._state_changed.set()

    async def _quiet(self, session: AgentSession, busy: tuple[str, ...]) -> None:
        """Until the agent's state is none of ``busy`` (its last words played) and the turn's
        replies are all in (one asked from a tool, a spoken turn's message)."""
        reader = self._reader
        assert reader is not None
        await self._until(lambda: session.agent_state.value not in busy and not reader.settling)

    async def _until(self, done: Callable[[], bool]) -> None:
        """Until ``done()``, asked again at each change the reader reports (a state, a
        message; a user message comes just before the agent starts thinking)."""
        changed = self._state_changed
        assert changed is not None
        while not done():
            changed.clear()
            await changed.wait()


async def _cancelled(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
