"""VideoSDKRunner: a VideoSDK agents job in the kernel, offline, recorded into a ``Trace``.

Your entrypoint runs unchanged, as VideoSDK's ``WorkerJob`` runs it (its job context current,
a metrics collector and event bus of its own), on a thread and loop of the runner's, so the
notebook stays free. Its room is the notebook (``OfflineRoom``: no VideoSDK server, no key);
with ``emulator=`` the OpenAI plugins it builds without a ``base_url`` reach the emulator.
Typed turns go in through the pipeline (``process_text``), spoken ones through the room.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from livekit.agents import RunResult
from typing_extensions import Self
from videosdk.agents import Agent, AgentSession, JobContext, build_openai_schema

from .._environ import environment
from ..runner._core import RunnerCore, RunnerState, fails_turn, reply_text
from ..runner._kernel_loops import close_retired, retire
from ..runner._samples import spoken_audio
from ..runner.errors import RunnerError, TurnError
from ..trace import Trace, TraceEvent
from ._videosdk_internals import job_scope
from .job import OfflineJobContext, QuietOfflineAnalytics
from .room import OfflineRoom
from .run_result import turn_result

if TYPE_CHECKING:
    from ..emulator import Emulator
    from .reading import VideoSDKReader

Entrypoint = Callable[[JobContext], Awaitable[None]]
"""``async def entrypoint(ctx: JobContext)``, as VideoSDK's ``WorkerJob`` takes it"""

_SPOKEN_TURN_WITHDRAWN = "the turn is withdrawn and the runner is ready for the next turn"
_analytics_log = logging.getLogger("videosdk.agents.metrics.analytics")


class VideoSDKRunner(RunnerCore[AgentSession]):
    """Runs ``entrypoint`` (``async def entrypoint(ctx: JobContext)``) offline in the kernel.

    ``start()`` returns at once; ``await runner.ready()`` waits for the session it starts;
    ``await runner.send_text(...)`` / ``send_audio(...)`` take a turn and return the reply;
    ``runner.trace`` records the session as a livekit one's (every view takes it);
    ``stop()`` closes the session (its agent's ``on_exit`` runs) and the job.
    """

    agent_base: ClassVar[type[Any]] = Agent
    """its agents are VideoSDK's: a scenarios file's ``new_agent_type=`` names one"""
    _failed_as = "the VideoSDK job failed"

    def __init__(
        self,
        entrypoint: Entrypoint,
        *,
        emulator: Emulator | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        if not _takes_a_context(entrypoint):
            raise TypeError(
                "VideoSDKRunner takes your job's entrypoint, `async def entrypoint(ctx: "
                f"JobContext)` as VideoSDK's WorkerJob does, not {entrypoint!r}"
            )
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.entrypoint = entrypoint
        self.emulator = emulator
        self.trace = Trace()
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

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the job in the background; returns at once."""
        if not self._admit_start(
            lambda old: isinstance(old, VideoSDKRunner) and old.entrypoint is self.entrypoint
        ):
            return self
        _analytics_log.addFilter(self._quiet_analytics)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="videosdk-job", daemon=True)
        self._thread.start()
        return self

    async def ready(self, timeout: float | None = None) -> AgentSession:
        """Wait until the entrypoint's ``AgentSession`` has started (its first agent's
        ``on_enter`` done); raise why it could not."""
        if self.state is RunnerState.NEW:
            raise RunnerError("ready() needs a started runner: call runner.start() first")
        wait = timeout or self.start_timeout
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self._ready), wait)
        except asyncio.TimeoutError:
            self.stop()
            raise RunnerError(
                f"the agent did not start a session within {wait:.0f} s: does the entrypoint "
                "call `await session.start()` or `await ctx.run_until_shutdown(session=...)`?"
            ) from None

    def stop(self) -> None:
        """Close the session and end the job, within ``stop_timeout``; safe to call again."""
        if self.state in (RunnerState.NEW, RunnerState.STOPPED):
            return
        if self.state is not RunnerState.FAILED:
            self.state = RunnerState.STOPPING
        self._stop_requested.set()
        loop, signal = self._loop, self._stop_signal
        if loop is not None and signal is not None:
            with contextlib.suppress(RuntimeError):  # the loop has finished already
                loop.call_soon_threadsafe(signal.set)
        stopped = self._done.wait(self.stop_timeout * 2)
        if self._thread is not None and stopped:
            self._thread.join()
        self.trace.detach()
        _analytics_log.removeFilter(self._quiet_analytics)
        self._unregister()
        if loop is not None:
            retire(loop)
        close_retired()
        self._fail(RunnerError(self._stopped_message()))
        self.state = RunnerState.STOPPED
        if not stopped:
            raise RunnerError(
                f"the VideoSDK job did not stop within {self.stop_timeout * 2:.0f} s; its thread "
                "is a daemon and ends with the kernel"
            )

    def __repr__(self) -> str:
        why = f": {self.failure}" if self.failure is not None else ""
        return f"<VideoSDKRunner {self.state.value} {self.entrypoint.__qualname__}{why}>"

    # -- turns -----------------------------------------------------------------------------

    async def run(
        self, user_input: str, *, output_type: type[Any] | None = None, timeout: float = 30.0
    ) -> RunResult[Any]:
        """One typed user turn (VideoSDK's ``pipeline.process_text``): livekit's ``RunResult``
        of it, built from what the trace recorded once the agent is done speaking
        (``result.expect`` checks it as in a livekit eval; handoffs name VideoSDK's agents).
        Raises ``TurnError`` when a model failed during it, as ``send_text``."""
        if output_type is not None:
            raise RunnerError(
                "run(output_type=...) is livekit's: a VideoSDK turn has no typed output"
            )
        return await super().run(user_input, timeout=timeout)

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]:
        """What the agent said on its own as its session started (its first agent's
        ``on_enter``), once said: livekit's ``RunResult``, as ``run``'s are."""
        await self.ready(timeout)
        greeted = self.trace.events_since(0)
        first_turn = next((i for i, e in enumerate(greeted) if e.kind == "user_message"), None)
        return self._result(None, greeted[:first_turn])

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        def type_in(session: AgentSession) -> Awaitable[None]:
            if self._reader is not None:
                self._reader.typed(text)
            return session.pipeline.process_text(text)  # type: ignore[no-any-return]

        # process_text returns once the reply is generated (a handoff's on_enter included)
        return await self._turn(text, type_in, busy=("speaking",))

    async def send_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
    ) -> str:
        """One spoken user turn: ``audio`` (a WAV file, or samples at ``rate``, 24 kHz unless
        given; ``notebook_agents.speech.synthesize`` makes some) goes into the room at
        real-time pace, then silence; the pipeline's speech recognition hears it. Returns
        the reply text as ``send_text`` does."""
        return reply_text(await self.run_audio(audio, rate, timeout))

    async def run_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
    ) -> RunResult[Any]:
        """``send_audio``, returning livekit's ``RunResult`` of the turn, as ``run`` does."""
        samples, rate = spoken_audio(audio, rate)
        pcm = samples.astype(np.int16).tobytes()

        if self.session is not None and self.session.pipeline.stt is None:
            raise RunnerError(
                "send_audio(): the session's pipeline has no speech recognition to hear it: "
                "give it one, Pipeline(stt=OpenAISTT(), llm=..., tts=...), or type the turn"
            )

        async def speak(session: AgentSession) -> None:
            room = self.room
            if room is None or self._reader is None:
                raise RunnerError("send_audio(): the entrypoint has not connected its room")
            heard = self._reader.user_turns
            await room.speak(pcm, rate)
            # the recognizer's final transcript comes after the silence: wait for the turn
            await self._until(lambda: self._reader is not None and self._reader.user_turns > heard)

        turn = self._in_job(self._turn(None, speak, busy=("thinking", "speaking")), "send_audio()")
        late = self._late(timeout, self.trace.now())
        return await self._from_job(turn, "send_audio()", timeout, _SPOKEN_TURN_WITHDRAWN, late)

    async def _turn(
        self,
        user_input: str | None,
        send: Callable[[AgentSession], Awaitable[None]],
        busy: tuple[str, ...],
    ) -> RunResult[Any]:
        assert self._turn_lock is not None
        async with self._turn_lock:
            await self._greeting_over()
            session = self._ready.result()
            start, began = len(self.trace), self.trace.now()
            await send(session)
            await self._quiet(session, busy)
            result = self._result(user_input, self.trace.events_since(start))
            reply = reply_text(result)
            problems = self.trace.problems_since(began, self._agent())
            # VideoSDK's model is not told a tool failed: the turn ends without a reply
            failed = [e for e in problems if fails_turn(e, spoken=True) or not reply]
            if failed:
                raise TurnError(reply, failed)
            return result

    def _result(self, user_input: str | None, events: list[TraceEvent]) -> RunResult[Any]:
        reader = self._reader
        assert reader is not None
        return turn_result(user_input, events, self.trace.started_at, reader.agent_named)

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

    @property
    def room(self) -> OfflineRoom | None:
        """The job's room (once its entrypoint connected): ``room.played`` is what the agent
        said aloud, each stretch with when it began and ended."""
        return self.ctx.offline_room if self.ctx is not None else None

    def _agent(self) -> str | None:
        return self._reader.agent if self._reader is not None else None

    # -- the job thread --------------------------------------------------------------------

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
        self._reader = reader = self.trace.attach_videosdk(session)
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


def _takes_a_context(entrypoint: object) -> bool:
    """Whether ``entrypoint`` is an ``async def`` taking the job context as its one argument."""
    if not inspect.iscoroutinefunction(entrypoint):
        return False
    try:
        inspect.signature(entrypoint).bind(None)
    except TypeError:
        return False
    return True


async def _cancelled(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
