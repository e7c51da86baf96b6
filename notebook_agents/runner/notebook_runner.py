"""NotebookRunner and run_app: an unmodified LiveKit ``AgentServer`` inside a Jupyter kernel.

The server runs unregistered on a thread and loop of its own (THREAD job executor, HTTP on
127.0.0.1 port 0, no idle processes), so ``start()`` returns at once, the kernel's loop and
signal handlers are never touched, and a blocking cell does not stall the agent. Offline the
job is simulated on a mock room and talks text; with LiveKit credentials it joins a real room.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, ParamSpec, TypeVar, overload

import numpy as np
from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    JobContext,
    JobExecutorType,
    RunResult,
)
from livekit.agents.voice import SpeechHandle
from typing_extensions import Self

from .. import _livekit_internals as livekit
from ..trace import ModelTruth, Trace, TraceEvent, agent_label, error_text
from ..trace.livekit_spans import capture_spans
from . import _environment, _failed_expectation, _session_guard, _session_hook
from ._caller import CallerInput, until_the_agent_is_quiet
from ._closing import PendingWords
from ._core import (
    TURN_WITHDRAWN,
    RunnerCore,
    RunnerState,
    joined,
    reply_text,
    said_in,
)
from ._kernel_loops import close_retired, retire, wait_awake
from ._model_truth import InProcessEmulators
from ._playback import RealTimeSpeaker, Recording
from ._push_to_talk import PushToTalk
from ._real_room import LiveKitCredentials, RealRoom
from ._samples import checked_rate, mono_int16, spoken_audio
from ._speech_shown import show_speech_state
from ._spoken_turn import SpokenTurn, cut_replies, require_hearing, why_unanswered
from ._worker_logs import WorkerLogs
from .errors import RunnerError, TurnError, TurnStopped

__all__ = ["Entrypoint", "NotebookRunner", "RunnerState", "reply_text", "run_app"]

Entrypoint = Callable[[JobContext], Awaitable[None]]
T = TypeVar("T")
P = ParamSpec("P")


class NotebookRunner(RunnerCore[AgentSession[Any]]):
    """Run a LiveKit ``AgentServer`` (or a bare entrypoint) in the kernel, non-blocking.

    ::

        runner = NotebookRunner(server).start()
        await runner.ready()
        reply = await runner.send_text("hi")
        runner.stop()

    Offline the session is text-only; ``audio=True`` gives it a speaker that plays in real
    time, so an agent with a TTS speaks its replies, kept in ``runner.recording``.

    After each turn the agent's chat context is held against its realtime model's
    conversation: the plugin's view, and the model's own where it can be read
    (``model_truth``; by default any ``Emulator`` running in this process that serves the
    session). A turn answered while they disagree raises ``TurnError``.
    """

    agent_base: ClassVar[type[Any]] = Agent
    """its agents are livekit's"""
    failed_as = "the agent's entrypoint failed"

    def __init__(
        self,
        server: AgentServer | Entrypoint,
        *,
        room: str | None = None,
        livekit_url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        audio: bool = False,
        model_truth: ModelTruth | None = None,
    ) -> None:
        super().__init__(start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.server = _as_server(server)
        self.room_name = room or f"notebook-{uuid.uuid4().hex[:8]}"
        self.credentials = LiveKitCredentials.resolve(livekit_url, api_key, api_secret)
        self.text_only = self.credentials is None
        self.audio = audio
        """offline, the session speaks through a real-time speaker into ``recording``"""
        self.recording = Recording()
        """what the agent said aloud (with ``audio=True``); shows as a player in a notebook"""
        self._microphone: CallerInput | None = None
        self._talk: PushToTalk | None = None
        self._pending_words: PendingWords | None = None
        self._agent_audio_listeners: list[Callable[[np.ndarray | None], object]] = []
        # after each turn, livekit's chat context is held against the model's conversation
        # where it can be read (by default: an emulator in this process that serves it)
        self.trace = Trace(model_truth=model_truth or InProcessEmulators())
        self.logs = WorkerLogs()
        self.real_room: RealRoom | None = None
        self.session: AgentSession[Any] | None = None
        self.timings: dict[str, float] = {}
        self._saved_options: dict[str, Any] = {}
        self._environment_held: object | None = None
        self._started_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # set when the server thread is done. Waited on instead of Thread.join/is_alive: on
        # Python < 3.12 a KeyboardInterrupt inside join() marks a live thread as dead
        # (cpython#90882), and run_app is interrupted exactly there.
        self._served = threading.Event()
        self._ctx: JobContext | None = None
        self._release_spans: Callable[[], None] = _nothing_to_release
        self._entry_task: asyncio.Task[None] | None = None
        self._greeting: RunResult[Any] | None = None
        self._guard: _session_guard.JobGuard | None = None
        # the stop runs on a thread of its own, so an interrupted stop() finishes anyway
        self._stopper: threading.Thread | None = None
        self._stop_done = threading.Event()
        self._stop_ran = False
        self._shut_down_lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._stop_signal: asyncio.Event | None = None  # the same, on the server's loop
        self._serve_began = threading.Event()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server and its job in the background; returns at once.

        An interrupt landing inside ``start()`` undoes what it did; ``stop()`` finishes the
        job if one lands after.
        """
        # a runner of the same server stops (it runs only once), as does what an earlier run
        # of this cell started: re-running a cell never leaves two agents behind. Registered
        # before the server is touched: from here on stop() undoes everything
        if not self._admit_start(
            lambda old: isinstance(old, NotebookRunner) and old.server is self.server
        ):
            return self
        _failed_expectation.install()
        self._started_at = started = time.perf_counter()
        try:
            if self.credentials is not None:
                self.real_room = RealRoom(self.credentials, self.room_name)
                self.real_room.display()
            self._configure_server()
            self._loop = asyncio.new_event_loop()
            self._stop_signal = asyncio.Event()
            self._thread = threading.Thread(
                target=self._serve, name="notebook-agents-server", daemon=True
            )
            self._thread.start()
        except BaseException:
            self.stop()
            raise
        self.timings["start"] = time.perf_counter() - started
        return self

    def _refuse_start(self) -> None:
        if livekit.server_running(self.server):
            raise RunnerError(
                "this AgentServer is already running outside notebook-agents; stop it first"
            )

    async def ready(self, timeout: float | None = None) -> AgentSession[Any]:
        """Wait until the entrypoint's ``AgentSession`` has started; raise the job's error.

        If the entrypoint fails, the runner is stopped and its error is raised from here.
        """
        if self.state is RunnerState.NEW:
            raise RunnerError("ready() needs a started runner: call runner.start() first")
        wait = timeout or self.start_timeout
        try:
            started = await wait_awake(self._ready, wait)
        except asyncio.CancelledError:
            raise asyncio.CancelledError(
                "ready() was interrupted; the agent goes on starting: `await runner.ready()` "
                "again, or runner.stop()"
            ) from None
        if not started:
            self.stop()
            raise RunnerError(
                f"the agent did not start a session within {wait:.0f} s: "
                "does the entrypoint call `await session.start(...)`?"
            )
        try:
            return self._ready.result()
        except RunnerError:
            self.stop()
            raise

    async def send_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
    ) -> str:
        """One spoken user turn: once the agent has finished speaking, ``audio`` (a WAV file, or
        samples at ``rate``, 24 kHz unless given) goes through the session's audio input at
        real-time pace, then silence, and the session's VAD and turn detection decide where the
        turn ends. Returns the reply text,
        as ``send_text`` does; with a TTS the reply is heard into ``runner.recording``.

        Samples are int16, or float at full scale 1.0; mono, or stereo either way round
        ((frames, channels) as soundfile gives, (channels, frames) as librosa does), mixed
        down. Audio that cannot be spoken (NaN, a bad rate or shape) is an ``AudioError``
        (a ``ValueError``) naming the fix, raised before anything starts.

        Needs ``NotebookRunner(..., audio=True)`` offline. Raises ``TurnError`` when the turn
        went wrong (at once when a model reports an error during it), ``TurnStopped`` when the
        runner was stopped during it, ``RunnerError`` when no reply came within ``timeout``
        seconds, saying where the turn stood. A turn given up (timed out, failed or
        interrupted) is withdrawn: the microphone, the session and the model are ready for
        the next one.
        """
        return reply_text(await self._run_audio(audio, rate, timeout, "send_audio()"))

    async def run_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
    ) -> RunResult[Any]:
        """``send_audio``, returning livekit's ``RunResult`` of the turn (its events, and
        ``expect`` to check them) instead of the reply text; the same errors."""
        return await self._run_audio(audio, rate, timeout, "run_audio()")

    async def _run_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None,
        timeout: float,
        what: str,
    ) -> RunResult[Any]:
        samples, rate = spoken_audio(audio, rate)
        self.require_microphone(what)
        self._require_turns(what)
        turn = self._in_job(self._spoken_turn(self._ready.result(), samples, rate, timeout), what)
        # the turn times itself out in the job, where it knows how far it got
        return await self._from_job(turn, what, None, _SPOKEN_TURN_WITHDRAWN)

    def hear(self, samples: np.ndarray, rate: int) -> None:
        """Live microphone audio into the session as it arrives, from any thread: a browser's
        microphone (``VoiceView``) or a device's. Samples at ``rate`` as ``send_audio`` takes
        them (an ``AudioError`` names what is wrong). Needs ``audio=True`` offline and a ready
        session."""
        audio, rate = mono_int16(samples), checked_rate(rate)
        self.require_microphone("hear()")
        self._require_turns("hear()")
        loop, microphone = self._job_loop, self._microphone
        assert loop is not None and microphone is not None
        with contextlib.suppress(RuntimeError):  # the job's loop closed under us: the call ended
            loop.call_soon_threadsafe(microphone.stream, audio, rate)

    def start_turn(self) -> None:
        """Push-to-talk pressed: the agent is interrupted and the caller's turn lasts until
        ``end_turn()``, whatever pauses the microphone hears (livekit's push-to-talk: the
        session's turns committed by hand while held). From any thread; needs ``audio=True``
        offline, a ready session, and one whose turns livekit ends (not a realtime model's
        server VAD: ``RunnerError`` says how to start it)."""
        talk = self._push_to_talk("start_turn()")
        self._in_job(talk.start(), "start_turn()")

    def end_turn(self) -> concurrent.futures.Future[str]:
        """Push-to-talk let go: the turn is committed (``AgentSession.commit_user_turn``) and
        answered; the future gives what was heard."""
        return self._in_job(self._push_to_talk("end_turn()").end(), "end_turn()")

    def _push_to_talk(self, what: str) -> PushToTalk:
        self.require_microphone(what)
        self._require_turns(what)
        if self._talk is None:
            self._talk = PushToTalk(self._ready.result())
        self._talk.check()
        return self._talk

    def on_agent_audio(self, listener: Callable[[np.ndarray | None], object]) -> Callable[[], None]:
        """Call ``listener`` with each reply's samples (int16 mono 24 kHz) as the agent gives
        them, and with None when a reply is cut; returns the call that stops it. Called on
        the session's thread; needs ``audio=True`` offline."""
        self.require_microphone("on_agent_audio()")
        self._agent_audio_listeners.append(listener)
        return lambda: self._agent_audio_listeners.remove(listener)

    def require_microphone(self, what: str) -> None:
        """Raise a ``RunnerError`` naming the fix unless this runner has the offline
        microphone and speaker that ``what`` needs (``NotebookRunner(..., audio=True)``)."""
        if not (self.audio and self.text_only):
            raise RunnerError(
                f"{what} needs an offline runner with a microphone and a speaker: "
                "NotebookRunner(server, audio=True)"
            )

    def _late(self, timeout: float, started: float) -> Callable[[], str]:
        return functools.partial(self._unanswered, timeout, started)

    def _unanswered(self, timeout: float, started: float) -> str:
        """Why a typed turn got no answer in time: the tools it left running, if any."""
        events = [e for e in self.trace.events if e.t >= started]
        returned = {e.data["call_id"] for e in events if e.kind == "tool_output"}
        running = [
            f"{e.data['name']}()"
            for e in events
            if e.kind == "tool_call" and e.data["call_id"] not in returned
        ]
        head = f"the agent did not answer within {timeout:g} s"
        if not running:
            return f"{head}; {TURN_WITHDRAWN}"
        return (
            f"{head}: its tool {', '.join(running)} had not returned; {TURN_WITHDRAWN} "
            "(a tool that can take longer wants a longer timeout)"
        )

    def _carried_run(
        self, *, user_input: str, output_type: type[Any] | None = None, **options: Any
    ) -> Callable[[], Awaitable[RunResult[Any]]]:
        """``session.run`` called from a cell: the turn starts in the job now, as
        ``runner.run``'s does; awaiting it awaits ``run``'s answer."""
        started, timeout = self.trace.now(), _CARRIED_RUN_TIMEOUT_S
        turn = self._submit(user_input, "session.run()", output_type, timeout, **options)
        late = self._late(timeout, started)
        return functools.partial(
            self._from_job, turn, "session.run()", timeout, TURN_WITHDRAWN, late
        )

    @overload
    async def call(
        self, fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    @overload
    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...

    async def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` run on the agent's job loop in the job's context (as livekit
        runs its own tasks), its result awaited there if it is awaitable; returns it. For the
        session's loop-bound methods from a cell:
        ``await runner.call(session.generate_reply, instructions="greet")`` returns the speech
        once it has played out (a ``SpeechHandle``, shown in the notebook as played or
        interrupted, with what was said), ``await runner.call(session.interrupt)``."""
        result = await super().call(fn, *args, **kwargs)
        if isinstance(result, SpeechHandle):
            show_speech_state()
        return result

    async def greeting(self, timeout: float = 30.0) -> RunResult[Any]:
        """What the agent said on its own as its session started (its ``on_enter`` speech),
        once said: livekit's ``RunResult`` of the start, as ``session.start(capture_run=True)``
        returns it, for ``expect``. The entrypoint's ``start`` returns what it always did."""
        greeting = self._greeting
        if greeting is None or not greeting.done():
            self._require_turns("greeting()")
            greeting = self._greeting
            assert greeting is not None
            waiting = self._in_job(_finished(greeting), "greeting()")
            return await self._from_job(
                waiting,
                "greeting()",
                timeout,
                "the greeting itself goes on",
                lambda: f"the agent's greeting did not end within {timeout:g} s",
            )
        return greeting

    def stop(self) -> None:
        """Stop without draining, within ``stop_timeout``; safe to call again at any time.

        Tools still running are cancelled, as a turn still going is. The stop runs on a
        thread of its own: interrupted, it still completes, and a second ``stop()`` waits for
        it to finish. A job that does not end in time (code blocking its loop) is a
        ``RunnerError`` saying so, and the runner stays ``stopping`` until it ends.
        """
        if self.state in (RunnerState.NEW, RunnerState.STOPPED):
            return
        again = self._stop_done.is_set()
        self._begin_stop()
        _wait_lock_free(self._stop_done, longest_pause=0.001)  # milliseconds away
        if again:  # for a job that would not end the first time: waited for once more
            _wait_lock_free(self._served, longest_pause=0.05, timeout=self.stop_timeout)
        self._settle_stopped()
        close_retired()
        if not self._served.is_set():
            raise RunnerError(
                f"the agent's job did not end within stop_timeout={self.stop_timeout:g} s: "
                "code in it blocks its loop or ignores being cancelled (a tool, the "
                "entrypoint, a callback). The runner is stopping, not stopped: its threads "
                "end when that code returns (runner.state becomes 'stopped'), else with the "
                "kernel; runner.stop() again waits once more"
            )

    def _settle_stopped(self) -> None:
        """Stopped once the stop has run and the server thread has ended: called by each as
        it is done, so the last one sees both (one that never ends leaves it stopping)."""
        if self._stop_ran and self._served.is_set():
            self.state = RunnerState.STOPPED

    def _begin_stop(self) -> None:
        """Start the stopping thread unless one was started: no lock here (an interrupt could
        land while one is held); two at once are harmless, ``_shut_down`` runs once."""
        if self._stopper is not None:
            return
        self.state = RunnerState.STOPPING
        stopper = threading.Thread(target=self._shut_down, name="notebook-agents-stop", daemon=True)
        stopper.start()
        self._stopper = stopper  # only once started: an interrupt in start() tries again

    def __repr__(self) -> str:
        mode = "offline" if self.text_only else "livekit"
        why = f": {self.failure}" if self.failure is not None else ""
        return f"<NotebookRunner {self.state.value} {mode} room={self.room_name!r}{why}>"

    # -- the server thread -----------------------------------------------------------------

    def _configure_server(self) -> None:
        server = self.server
        # saved before anything changes: an interrupt in between leaves nothing to guess
        self._saved_options = livekit.server_options(server)
        server.update_options(job_executor_type=JobExecutorType.THREAD, num_idle_processes=0)
        livekit.serve_on_loopback(server)
        if server.load_fnc is None:
            server.load_fnc = _no_load  # the default starts a process-wide CPU monitor thread
        # offline, none: what the server took from os.environ when it was made may be what
        # livekit wrote there for another runner, and run() would write it again
        creds = self.credentials or LiveKitCredentials("", "", "")
        server.update_options(ws_url=creds.url, api_key=creds.api_key, api_secret=creds.api_secret)
        self._environment_held = _environment.hold(livekit.environment_run_writes(server))
        livekit.set_entrypoint(server, self._observed(self._saved_options["_entrypoint_fnc"]))

    def _serve(self) -> None:
        self.logs.claim_thread()
        self._serve_began.set()
        loop = self._loop
        assert loop is not None and self._stop_signal is not None
        try:
            if not self._stop_requested.is_set():  # stopped before this thread even ran
                # here, not on the kernel's main thread: Logger.setLevel holds logging's module
                # lock with no try/finally, and an interrupt there would leave it held for good
                # (every other thread's next log call then waits forever)
                self.logs.install()
                loop.run_until_complete(self._run_server(self._stop_signal))
        except BaseException as e:
            self._fail(e)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                self._fail(RunnerError("the agent server stopped before a session started"))
            finally:
                self._served.set()
                self._settle_stopped()

    async def _run_server(self, stop: asyncio.Event) -> None:
        """Run the server and its one job until ``stop`` is set, then close it (no drain)."""
        server = self.server
        livekit.renew_server_lock(server)
        # before the job: livekit's first span (``job_entrypoint``) starts ahead of our code
        self._release_spans = capture_spans(self.trace, self.room_name)
        started = asyncio.Event()
        server.once("worker_started", started.set)
        run = asyncio.create_task(server.run(devmode=True, unregistered=True))
        up = asyncio.create_task(started.wait())
        stopped = asyncio.create_task(stop.wait())
        try:
            # until the worker is up, closing it would be a no-op that run() then overrides
            await asyncio.wait({run, up}, return_when=asyncio.FIRST_COMPLETED)
            if up.done() and not stop.is_set():
                self.timings["worker_started"] = time.perf_counter() - self._started_at
                try:
                    # not cancelled by a stop: a half-launched job would hold aclose() up
                    await self._start_job()
                except Exception as e:
                    self._fail(e)
                else:
                    await asyncio.wait({run, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            up.cancel()
            stopped.cancel()
            try:
                if not run.done():
                    # the job never started or the runner stops: its HTTP listener goes too
                    await server.aclose()
                await run
            finally:
                self._release_spans()  # after the job: its closing spans are the trace's too

    async def _start_job(self) -> None:
        if self.real_room is not None:
            await self.server.simulate_job(self.room_name, **await self.real_room.create())
        else:
            # here, on the server's thread: livekit makes its offline room on the job's loop
            # otherwise, where the first one in a kernel (~60 ms of mocks, cached after) is
            # reported as a blocked event loop
            livekit.name_mock_room_by_job()
            livekit.quiet_mock_room()
            await self.server.simulate_job(self.room_name, fake_job=True)

    def _observed(self, entrypoint: Entrypoint) -> Entrypoint:
        # held weakly: the user's server keeps its last run's job pool, and with it this
        # entrypoint, after the runner has stopped; a stopped runner must be collectable
        runner_ref = weakref.ref(self)

        @functools.wraps(entrypoint)
        async def observed_entrypoint(ctx: JobContext) -> None:
            runner = runner_ref()
            if runner is None:  # its runner is gone: no job of the server's is ours to run
                return
            runner._ctx = ctx
            runner.logs.claim_thread()
            # the entrypoint's context variables (livekit's job context and HTTP session among
            # them): turns sent from cells run in it, as turns from the room do
            runner._job_began()
            runner._entry_task = asyncio.current_task()
            _session_hook.observe_job(ctx, runner)
            try:
                await entrypoint(ctx)
            except asyncio.CancelledError:
                raise
            except BaseException as e:
                if runner._ready.done():
                    runner._end(
                        RunnerState.FAILED, f"the entrypoint raised {e!r} after the session started"
                    )
                runner._fail(e)
                raise
            if runner.session is None:
                runner._fail(
                    RunnerError(
                        "the entrypoint returned without starting an AgentSession: call "
                        "`await session.start(agent=..., room=ctx.room)` in it"
                    )
                )

        return observed_entrypoint

    # _session_hook.SessionObserver
    def session_starting(self, session: AgentSession[Any]) -> bool:
        if self.session is not None:
            return False  # another session of the job, or a start again
        self.session = session
        if self.audio and self.text_only:
            speaker = RealTimeSpeaker(self.recording)
            speaker.listeners = self._agent_audio_listeners
            session.output.audio = speaker
            self._microphone = CallerInput()
            session.input.audio = self._microphone
        self._pending_words = PendingWords(session)
        self.trace.attach(session)
        self._guard = _session_guard.JobGuard(self._carry)
        self._guard.session(session, self._carried_run, self._before_own_run)
        session.on("error", self._on_session_error)
        session.on("close", self._on_session_close)
        return True

    def session_started(self, session: AgentSession[Any], greeting: RunResult[Any]) -> None:
        self._greeting = greeting
        _failed_expectation.remember(greeting, self.trace)
        if not self._ready.done():
            self.timings["ready"] = time.perf_counter() - self._started_at
            self._became_ready(session)

    def _before_own_run(self) -> None:
        """The job's own code runs a turn (``session.run`` on its loop): the greeting, if it is
        still going, stops gathering new speech (livekit would refuse a run beside it)."""
        if self._greeting is not None and self.session is not None:
            livekit.release_run(self.session, self._greeting)

    def _on_session_error(self, event: Any) -> None:
        if event.error.recoverable:
            return
        message = error_text(event.error)
        # livekit decides whether this error closes the session right after emitting it
        asyncio.get_running_loop().call_soon(self._on_unrecoverable, message)

    def _on_unrecoverable(self, message: str) -> None:
        assert self.session is not None
        closing = livekit.closing_task(self.session)
        if closing is None:
            return  # livekit tolerates a few in a row before it gives up
        self._end(RunnerState.FAILED, f"the session closed after an unrecoverable error: {message}")
        # livekit emits no close event when its close raises: record it once it is over
        closing.add_done_callback(lambda _: self.trace.record_closed("error", message))

    def _on_session_close(self, event: Any) -> None:
        reason = getattr(event.reason, "value", event.reason)
        if event.error:
            why = f"the session closed ({reason}): {error_text(event.error)}"
            self._end(RunnerState.FAILED, why)
        else:
            self._end(RunnerState.ENDED, f"the session has ended ({reason})")

    async def _typed_turn(
        self, text: str, output_type: type[Any] | None, timeout: float, **options: Any
    ) -> RunResult[Any]:
        session = self._ready.result()
        assert self._turn_lock is not None
        async with self._turn_lock:  # AgentSession.run cannot nest
            await self._greeting_over()
            started = self.trace.now()
            try:
                result: RunResult[Any] = session.run(
                    user_input=text, output_type=output_type, **options
                )
            except Exception:
                livekit.forget_stale_run(session)
                self._require_turns("the turn")
                raise
            try:
                raised = await _settled(result)
            except asyncio.CancelledError:  # given up from the cell: timed out or interrupted
                if not self._stop_requested.is_set():  # a stop closes the session anyway
                    await cut_replies(session, livekit.run_speeches(result))
                livekit.forget_stale_run(session)
                raise
        return self._checked(session, result, started, raised, spoken=False)

    async def _spoken_turn(
        self, session: AgentSession[Any], samples: np.ndarray, rate: int, timeout: float
    ) -> RunResult[Any]:
        assert self._turn_lock is not None and self._microphone is not None
        async with self._turn_lock:
            await self._greeting_over()
            require_hearing(session)  # before any audio goes in: the agent is this one now
            started = self.trace.now()
            try:
                await asyncio.wait_for(until_the_agent_is_quiet(session), timeout)
            except asyncio.TimeoutError:
                raise RunnerError(f"the agent was still speaking after {timeout:.0f} s") from None
            turn = SpokenTurn(session, self._microphone)
            try:
                turn.speak(samples, rate)
                raised = await turn.outcome(_settled(turn.run), timeout)
                if turn.failed.done():  # a model failed: the turn goes no further
                    await self._give_up(turn)
            except asyncio.TimeoutError:
                events = [e for e in self.trace.events if e.t >= started]
                why = why_unanswered(events, timeout, turn.seconds, self._microphone.unspoken_s)
                await self._give_up(turn)
                raise RunnerError(why) from None
            except asyncio.CancelledError:
                await self._give_up(turn)
                raise
            finally:
                turn.end()
        return self._checked(session, turn.run, started, raised, spoken=True)

    async def _greeting_over(self) -> None:
        """Until the greeting is over: a turn's events are its own, and livekit runs one run at
        a time (its failure is the greeting's, not the turn's)."""
        if self._greeting is not None and not self._greeting.done():
            await _settled(self._greeting)

    async def _give_up(self, turn: SpokenTurn) -> None:
        """Withdraw a turn gone wrong, unless the runner is stopping (the session closes)."""
        if not self._stop_requested.is_set():
            await turn.withdraw()
            if self._pending_words is not None:
                self._pending_words.forget()

    def _checked(
        self,
        session: AgentSession[Any],
        result: RunResult[Any],
        started: float,
        raised: Exception | None,
        *,
        spoken: bool,
    ) -> RunResult[Any]:
        """A finished turn's result, or the ``TurnError`` it went wrong by."""
        said = said_in(result)
        reply = joined(said)
        if self._stop_requested.is_set() and (
            raised is not None or not said or said[-1].interrupted
        ):
            raise TurnStopped(reply) from raised  # the stop cut the turn short
        if self.state is RunnerState.FAILED:  # the session died under the turn
            self._require_turns("the turn")
        errors = self._went_wrong(session, started, spoken=spoken)
        if errors or raised is not None:
            raise TurnError(reply, errors, raised) from raised
        _failed_expectation.remember(result, self.trace)
        return result

    def _went_wrong(
        self, session: AgentSession[Any], started: float, *, spoken: bool
    ) -> list[TraceEvent]:
        """The turn's ``error`` events, and the ``context_diverged`` of its agent while its
        chat context and its model's conversation are apart: even a turn that went through
        smoothly was answered from a conversation other than livekit's."""
        # the turn is over: the model's conversation should now hold what livekit's does
        # (the trace compares when a turn's speech is done: again only if it heard more since)
        self.trace.compare_contexts(if_changed=True)
        return self._turn_errors(started, agent_label(session.current_agent), spoken=spoken)

    # -- stopping --------------------------------------------------------------------------

    def _shut_down(self) -> None:
        """Everything but closing our loop: on the stopping thread, whatever was started."""
        # only stopping threads take this lock, and no interrupt lands on them
        with self._shut_down_lock:
            if not self._stop_done.is_set():
                self._shut_down_once()

    def _shut_down_once(self) -> None:
        started = time.perf_counter()
        try:
            self._stop_server()
        finally:
            self._fail(RunnerError(self._stopped_message()))
            livekit.restore_server_options(self.server, self._saved_options)
            _environment.release(self._environment_held)
            self.trace.detach()
            if self._guard is not None:  # after the trace's: either may have wrapped last
                self._guard.release()
            self.logs.uninstall()
            if self._ctx is not None:
                _session_hook.forget_job(self._ctx)
            self._unregister()
            livekit.release_mock_room()
            if self._loop is not None:
                retire(self._loop)
            self.timings["stop"] = time.perf_counter() - started
            self._stop_ran = True
            self._settle_stopped()
            self._stop_done.set()

    def _stop_server(self) -> None:
        self._stop_requested.set()
        loop, thread, signal = self._loop, self._thread, self._stop_signal
        if loop is None or thread is None or signal is None:
            self._served.set()  # interrupted before the server thread was made
            return
        if not self._serve_began.wait(_THREAD_START_S):
            self._served.set()  # interrupted inside Thread.start(), before it started
            return
        if self._job_loop is not None:
            with contextlib.suppress(RuntimeError):  # first, before the session closes
                self._job_loop.call_soon_threadsafe(self._give_up_in_job)
        with contextlib.suppress(RuntimeError):  # the server's loop is already done
            loop.call_soon_threadsafe(signal.set)
        if self._served.wait(self.stop_timeout):
            thread.join()  # only returning is left to it

    def _give_up_in_job(self) -> None:
        """On the job's loop as the stop begins: what livekit's close would wait for is given
        up, as a stop does not drain. No wait for a transcript unless words are on their way;
        the tools still running are cancelled (livekit awaits each one not marked
        cancellable, for up to 60 s: a tool that never returns held the stop that long); an
        entrypoint still awaiting is cancelled (else held for livekit's 15 s)."""
        if self._pending_words is not None:
            self._pending_words.close_without_waiting()
        if self.session is not None:
            for task in livekit.tool_tasks(self.session):
                task.cancel()
        if self._entry_task is not None:
            self._entry_task.cancel()


async def _finished(result: RunResult[Any]) -> RunResult[Any]:
    return await result


async def _settled(result: RunResult[Any]) -> Exception | None:
    """Wait for a run; what it raised if its reply could not be generated."""
    try:
        await result
    except Exception as e:
        return e
    return None


_SPOKEN_TURN_WITHDRAWN = (
    "the turn is withdrawn (the rest of its audio dropped, what was heard of it cleared, any "
    "reply cut) and the runner is ready for the next turn"
)
_CARRIED_RUN_TIMEOUT_S = 30.0
"""how long ``await session.run(...)`` from a cell waits, as ``runner.run`` by default"""

_THREAD_START_S = 1.0
"""a started thread runs within this; a stop waits no longer to learn it never started"""


def run_app(server: AgentServer | Entrypoint, **options: Any) -> NotebookRunner:
    """Blocking drop-in for ``livekit.agents.jupyter.run_app``: runs until interrupted.

    The first kernel interrupt stops the agent cleanly (no drain); further interrupts during
    that stop are absorbed, so the kernel survives.
    """
    runner = NotebookRunner(server, **options)
    try:
        runner.start()
        print(_running_until_interrupted(runner), flush=True)
        _wait_lock_free(runner._served, longest_pause=0.05)  # until interrupted: no hurry
    except KeyboardInterrupt:
        pass
    finally:
        _stop_through_interrupts(runner)
    return runner


def _running_until_interrupted(runner: NotebookRunner) -> str:
    """What ``run_app`` says as it starts blocking: it runs, how to stop it, how to talk to it."""
    stop = "interrupt the kernel (the stop button) to stop it"
    if runner.real_room is not None:
        return (
            f"run_app: the agent runs in the LiveKit room {runner.room_name!r}: join it from "
            f"the widget above to talk to it; {stop}"
        )
    return (
        f"run_app: the agent runs offline in this kernel; {stop}. While this cell blocks no "
        "cell can talk to it: to talk to it, start it without blocking instead, "
        "runner = NotebookRunner(server).start(), then await runner.send_text('hello')"
    )


def _stop_through_interrupts(runner: NotebookRunner) -> None:
    if runner.state is RunnerState.NEW:
        return
    # already stopping: another interrupt must not abandon the stop midway. Interrupts sent
    # back to back can land while the inner handler runs, hence the outer one
    while not runner._stop_done.is_set():
        try:
            while not runner._stop_done.is_set():
                try:
                    runner._begin_stop()  # again if an interrupt cut the first one short
                    _wait_lock_free(runner._stop_done, longest_pause=0.001)
                except KeyboardInterrupt:
                    pass
        except KeyboardInterrupt:
            pass
    close_retired()


def _wait_lock_free(
    event: threading.Event, longest_pause: float, timeout: float | None = None
) -> None:
    """``event.wait(timeout)`` for the kernel's main thread, without taking the event's lock.

    A kernel interrupt lands in whatever the main thread runs; inside ``Event.wait`` it can
    leave the event's lock held for good, and the thread that then sets the event hangs
    (a stop that never ends). Polling the flag takes no lock.
    """
    pause = 0.0001
    deadline = None if timeout is None else time.monotonic() + timeout
    while not event.is_set() and (deadline is None or time.monotonic() < deadline):
        time.sleep(pause)
        pause = min(pause * 2, longest_pause)


def _as_server(server: AgentServer | Entrypoint) -> AgentServer:
    if isinstance(server, AgentServer):
        if livekit.entrypoint_of(server) is None:
            raise RunnerError(
                "this AgentServer has no entrypoint: decorate an async function with "
                "@server.rtc_session()"
            )
        return server
    if asyncio.iscoroutinefunction(server):
        built = AgentServer()
        built.rtc_session()(server)
        return built
    raise RunnerError(
        f"NotebookRunner needs a livekit AgentServer or an async entrypoint(ctx), "
        f"not {type(server).__name__}"
    )


def _nothing_to_release() -> None:
    """No job started yet, so no spans are being captured."""


def _no_load(*_: Any) -> float:
    return 0.0
