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
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from livekit.agents import RunResult
from typing_extensions import Self
from videosdk.agents import Agent, AgentSession

from ..runner import SpokenAudio
from ..runner._core import TURN_WITHDRAWN, RunnerState, fails_turn, reply_text
from ..runner._kernel_loops import close_retired, retire
from ..runner._samples import spoken_audio
from ..runner._spoken_turn import why_unanswered
from ..runner.errors import EntrypointError, RunnerError, TurnError
from ..trace import Trace, TraceEvent
from ._job_thread import Entrypoint, VideoSDKJob
from .run_result import turn_result

if TYPE_CHECKING:
    from ..emulator import Emulator


_SPOKEN_TURN_WITHDRAWN = "the turn is withdrawn and the runner is ready for the next turn"
_analytics_log = logging.getLogger("videosdk.agents.metrics.analytics")


class VideoSDKRunner(VideoSDKJob):
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
            raise EntrypointError(
                "VideoSDKRunner takes your job's entrypoint, `async def entrypoint(ctx: "
                f"JobContext)` as VideoSDK's WorkerJob does, not {entrypoint!r}"
            )
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.trace = Trace()
        self.spoken: list[SpokenAudio] = []
        """each spoken turn's audio as given to ``send_audio`` / ``run_audio``, and when it
        took place: ``to_scenario`` writes them as the scenario's WAV files"""
        self._init_job(entrypoint, emulator)

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
            began = self.trace.now()
            try:
                await room.speak(pcm, rate)
                # the recognizer's final transcript comes after the silence: wait for the turn
                await self._until(
                    lambda: self._reader is not None and self._reader.user_turns > heard
                )
            finally:  # kept whatever became of the turn: what the trace holds of it was said so
                self.spoken.append(SpokenAudio(samples, rate, began, self.trace.now()))

        seconds, start = samples.size / rate, len(self.trace)

        def late() -> str:  # where the turn stood, as the kernel runner's spoken turns say
            room = self.room
            unspoken = room.unspoken_s if room is not None else seconds
            # a pipeline without a VAD reports no user states: not whether speech was heard
            states = any(e.kind == "user_state" for e in self.trace.events)
            events = self.trace.events_since(start)
            why = why_unanswered(events, timeout, seconds, unspoken, speech_states=states)
            return f"{why}; {TURN_WITHDRAWN}"

        turn = self._in_job(self._turn(None, speak, busy=("thinking", "speaking")), "send_audio()")
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


def _takes_a_context(entrypoint: object) -> bool:
    """Whether ``entrypoint`` is an ``async def`` taking the job context as its one argument."""
    if not inspect.iscoroutinefunction(entrypoint):
        return False
    try:
        inspect.signature(entrypoint).bind(None)
    except TypeError:
        return False
    return True
