"""The kernel runner's voice: offline, a real-time speaker (``recording``) and a microphone
for the session; spoken turns (``send_audio``), live audio (``hear``), push-to-talk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
from livekit.agents import AgentSession, RunResult

from .. import _livekit_internals as livekit
from ..speech.line import Line, LineLike, LineStream, as_line
from ..trace import agent_label
from ._barge_in import BargeIn, Cue, cue_seconds
from ._caller import CallerInput, SpokenAudio, until_the_agent_is_quiet
from ._core import reply_text
from ._playback import RealTimeSpeaker, Recording
from ._push_to_talk import PushToTalk
from ._samples import checked_rate, mono_int16, spoken_audio
from ._spoken_turn import SpokenTurn, require_hearing, why_unanswered
from ._typed_turns import TypedTurns, _settled
from .errors import HeardNothing, RunnerError


class Voice(TypedTurns):
    """Audio in and out of the session, and the turns spoken through it."""

    def _init_voice(self, audio: bool) -> None:
        self.audio = audio
        """offline, the session speaks through a real-time speaker into ``recording``"""
        self.recording = Recording()
        """what the agent said aloud (with ``audio=True``); shows as a player in a notebook"""
        self.spoken: list[SpokenAudio] = []
        """each spoken turn's audio as given to ``send_audio`` / ``run_audio``, and when it
        took place: ``to_scenario`` writes them as the scenario's WAV files"""
        self._microphone: CallerInput | None = None
        self._speaker: RealTimeSpeaker | None = None
        self._talk: PushToTalk | None = None
        self._agent_audio_listeners: list[Callable[[np.ndarray | None], object]] = []
        self._conditions = Line()
        self._live_line: LineStream | None = None
        """the line live audio crosses (``hear``), with its state; made at its first chunk"""
        self._live_lock = threading.Lock()  # hear() is called from any thread

    @property
    def conditions(self) -> Line:
        """The line conditions the caller's audio crosses before the session hears it: live
        audio (``hear``: ``VoiceView``, a device), and spoken turns given none of their own
        (``send_audio``). Set a ``Line``, one condition, or a list of them
        (``runner.conditions = [Noise(10, "babble"), Telephone()]``); ``None`` or ``[]`` is
        a clean line, the default. The trace records them with each user message heard."""
        return self._conditions

    @conditions.setter
    def conditions(self, conditions: LineLike) -> None:
        line = as_line(conditions)
        with self._live_lock:
            self._conditions, self._live_line = line, None
        self.trace.caller_conditions = line.to_records()

    def _attach_voice(self, session: AgentSession[Any]) -> None:
        if self.audio and self.text_only:
            speaker = self._speaker = RealTimeSpeaker(self.recording)
            speaker.listeners = self._agent_audio_listeners
            session.output.audio = speaker
            self._microphone = CallerInput()
            session.input.audio = self._microphone

    async def send_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
        conditions: LineLike = None,
        *,
        at: Cue | None = None,
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

        ``conditions``: the line the audio crosses first (``notebook_agents.speech.Line``,
        one condition, or a list: ``[Noise(10, "babble"), Telephone()]``), ``runner.conditions``
        if not given, ``[]`` a clean line; the trace's user message records them. A condition
        given wrong is a ``LineError`` (a ``ValueError``).

        Needs ``NotebookRunner(..., audio=True)`` offline. Raises ``TurnError`` when the turn
        went wrong (at once when a model reports an error during it), ``TurnStopped`` when the
        runner was stopped during it, ``RunnerError`` when no reply came within ``timeout``
        seconds, saying where the turn stood. A turn given up (timed out, failed or
        interrupted) is withdrawn: the microphone, the session and the model are ready for
        the next one.

        ``at`` makes the turn a barge-in: it does not wait for the agent to finish, but starts
        ``at`` seconds into the agent's reply (the one playing, else the next to begin; or
        ``at="first_audio"``), and livekit's interruption handling decides what becomes of the
        reply. It ends once its own reply has played, or once livekit calls the interruption
        false (no turn came of the sound: the reply is empty). Start the turn whose reply it
        speaks over first, ``first = asyncio.ensure_future(runner.send_audio(question))``;
        the trace's ``barge_in`` event says whether livekit cut the reply, how much of it was
        heard and how long the agent took to stop speaking. A cue that is not a moment of a
        reply is a ``CueError`` (a ``ValueError``).
        """
        return reply_text(
            await self._run_audio(audio, rate, timeout, conditions, "send_audio()", at)
        )

    async def run_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None = None,
        timeout: float = 30.0,
        conditions: LineLike = None,
        *,
        at: Cue | None = None,
    ) -> RunResult[Any]:
        """``send_audio``, returning livekit's ``RunResult`` of the turn (its events, and
        ``expect`` to check them) instead of the reply text; the same errors."""
        return await self._run_audio(audio, rate, timeout, conditions, "run_audio()", at)

    async def _run_audio(
        self,
        audio: str | os.PathLike[str] | np.ndarray,
        rate: int | None,
        timeout: float,
        conditions: LineLike,
        what: str,
        at: Cue | None = None,
    ) -> RunResult[Any]:
        cue = None if at is None else cue_seconds(at)
        samples, rate = spoken_audio(audio, rate)
        line = self._conditions if conditions is None else as_line(conditions)
        self.require_microphone(what)
        self._require_turns(what)
        session = self._ready.result()
        # here, not on the job's loop: making a noise (babble is synthesized) takes a while
        heard = line.apply(samples, rate)
        turn = self._in_job(
            self._spoken_turn(session, samples, heard, rate, line, timeout)
            if cue is None
            else self._barge_in(session, samples, heard, rate, line, timeout, cue),
            what,
        )
        # the turn times itself out in the job, where it knows how far it got
        return await self._from_job(turn, what, None, _SPOKEN_TURN_WITHDRAWN)

    def hear(self, samples: np.ndarray, rate: int) -> None:
        """Live microphone audio into the session as it arrives, from any thread: a browser's
        microphone (``VoiceView``) or a device's. Samples at ``rate`` as ``send_audio`` takes
        them (an ``AudioError`` names what is wrong), through ``runner.conditions``. Needs
        ``audio=True`` offline and a ready session."""
        audio, rate = mono_int16(samples), checked_rate(rate)
        self.require_microphone("hear()")
        self._require_turns("hear()")
        loop, microphone = self._job_loop, self._microphone
        assert loop is not None and microphone is not None
        with self._live_lock:  # chunk after chunk through one line: its noise and losses go on
            if self._conditions:
                if self._live_line is None or self._live_line.rate != rate:
                    self._live_line = self._conditions.stream(rate)
                audio = self._live_line.process(audio)
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
        self._refuse_scoped_mocks(what)
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

    def _refuse_scoped_mocks(self, what: str) -> None:
        """A push-to-talk turn spans calls (``start_turn``, then ``end_turn``), which no one
        ``with mock_tools(...)`` block scopes: the real tool would run."""
        if any(livekit.scoped_tool_mocks().values()):
            raise RunnerError(
                f"{what} with `with mock_tools(...)` around it: a push-to-talk turn spans "
                "start_turn() and end_turn(), which that block does not scope: mock for the "
                "session instead, `mock_tools(YourAgent, {...}, session=runner.session)` "
                "(`{}` undoes it), or speak the turn in one call inside the block "
                "(`await runner.run_audio(...)`)"
            )

    def require_microphone(self, what: str) -> None:
        """Raise a ``RunnerError`` naming the fix unless this runner has the offline
        microphone and speaker that ``what`` needs (``NotebookRunner(..., audio=True)``)."""
        if not (self.audio and self.text_only):
            raise RunnerError(
                f"{what} needs an offline runner with a microphone and a speaker: "
                "NotebookRunner(server, audio=True)"
            )

    async def _spoken_turn(
        self,
        session: AgentSession[Any],
        samples: np.ndarray,
        heard: np.ndarray,
        rate: int,
        line: Line,
        timeout: float,
    ) -> RunResult[Any]:
        """The caller says ``samples``; the session hears them through ``line``: ``heard``."""
        assert self._turn_lock is not None and self._microphone is not None
        async with self._turn_lock:
            await self._greeting_over()
            require_hearing(session)  # before any audio goes in: the agent is this one now
            started = self.trace.now()
            try:
                await asyncio.wait_for(until_the_agent_is_quiet(session), timeout)
            except asyncio.TimeoutError:
                raise RunnerError(f"the agent was still speaking after {timeout:.0f} s") from None
            async with self._speaking(session, samples, rate, line, started, timeout) as turn:
                turn.speak(heard, rate)
                raised = await turn.outcome(_settled(turn.run), timeout)
                if turn.failed.done():  # a model failed: the turn goes no further
                    await self._give_up(turn)
        return self._checked(session, turn.run, started, raised, spoken=True)

    async def _barge_in(
        self,
        session: AgentSession[Any],
        samples: np.ndarray,
        heard: np.ndarray,
        rate: int,
        line: Line,
        timeout: float,
        at: float,
    ) -> RunResult[Any]:
        """A spoken turn over the agent's reply, ``at`` seconds into it: it does not wait for
        the turn whose reply it speaks over, which ends as livekit has its reply end (cut, or
        played out), nor for the agent to be quiet. The session hears ``samples`` through
        ``line``: ``heard``."""
        assert self._turn_lock is not None and self._microphone is not None
        assert self._speaker is not None
        require_hearing(session)
        started = self.trace.now()
        try:
            playout, position = await asyncio.wait_for(self._speaker.until_played(at), timeout)
        except asyncio.TimeoutError:
            raise RunnerError(
                f"no reply of the agent's played {at:g} s within timeout={timeout:g} s: a "
                "barge-in speaks over a reply, so start the turn it answers first, e.g. "
                "`first = asyncio.ensure_future(runner.send_audio(question))`, then "
                f"`await runner.run_audio(words, at={at:g})`"
            ) from None
        over = BargeIn(session, at, playout, position, session.current_speech)
        try:
            async with self._speaking(
                session, samples, rate, line, started, timeout, lambda turn: over.unheeded
            ) as turn:
                over.spoken(turn.speak(heard, rate))
                # the turn whose reply is spoken over ends first, as livekit cuts or finishes it
                async with self._turn_lock:
                    answered = _answered_or_dismissed(turn.run, over.dismissed)
                    raised = await turn.outcome(answered, timeout)
                    await asyncio.wait_for(over.reply_ended(), timeout)
                if over.dismissed.done() and not turn.run.done():
                    livekit.end_unanswered_run(turn.run)
        finally:
            over.end()
            if over.reply_over:  # what became of the reply is known, whatever became of the turn
                data = over.data(self.trace.now(), self.trace.spans)
                self.trace.record_barge_in(data, agent_label(session.current_agent))
        return self._checked(session, turn.run, started, raised, spoken=True)

    @contextlib.asynccontextmanager
    async def _speaking(
        self,
        session: AgentSession[Any],
        samples: np.ndarray,
        rate: int,
        line: Line,
        started: float,
        timeout: float,
        unheeded: Callable[[SpokenTurn], bool] | None = None,
    ) -> AsyncIterator[SpokenTurn]:
        """A spoken turn, begun at trace time ``started``, its caller on ``line``: one that
        times out, is cancelled or heard as no words is withdrawn, a ``RunnerError`` saying
        why (``_UNHEEDED`` when livekit did not heed a barge-in, as its ``unheeded`` tells);
        whatever became of it, the trace's conditions go back to the runner's and
        ``runner.spoken`` keeps it."""
        assert self._microphone is not None
        turn = SpokenTurn(session, self._microphone, over_a_reply=unheeded is not None)
        self.trace.caller_conditions = line.to_records()
        try:
            yield turn
        except asyncio.TimeoutError:
            events = [e for e in self.trace.events if e.t >= started]
            why = why_unanswered(events, timeout, turn.seconds, self._microphone.unspoken_s)
            if unheeded is not None and unheeded(turn) and not turn.run.events:
                why = _UNHEEDED.format(timeout=timeout)
            await self._give_up(turn)
            raise RunnerError(why) from None
        except (asyncio.CancelledError, HeardNothing):
            await self._give_up(turn)
            raise
        finally:
            turn.end()
            self.trace.caller_conditions = self._conditions.to_records()
            # kept whatever became of the turn: what the trace holds of it was said so
            self.spoken.append(SpokenAudio(samples, rate, started, self.trace.now(), line))

    async def _give_up(self, turn: SpokenTurn) -> None:
        """Withdraw a turn gone wrong, unless the runner is stopping (the session closes)."""
        if not self._stop_requested.is_set():
            await turn.withdraw()
            if self._pending_words is not None:
                self._pending_words.forget()


async def _answered_or_dismissed(
    run: RunResult[Any], dismissed: asyncio.Future[bool]
) -> Exception | None:
    """Wait for a barge-in's ``run`` (what it raised, as ``_settled``), or for livekit to call
    its interruption false (``dismissed``): no turn came of it, and nothing will answer."""
    answered = asyncio.ensure_future(_settled(run))
    either: set[asyncio.Future[Any]] = {answered, dismissed}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not answered.done():
            answered.cancel()
    return answered.result() if answered.done() and not answered.cancelled() else None


_UNHEEDED = (
    "the spoken turn got no reply within timeout={timeout:g} s: livekit neither stopped the "
    "reply it was spoken over nor took a turn from it. livekit ignores the caller during the "
    "first seconds of the agent's first speech (the session's aec_warmup_duration, 3 s by "
    "default: AgentSession(..., aec_warmup_duration=None) hears a barge-in at once) and "
    "interrupts only for speech of at least its min_interruption_duration (0.5 s by default); "
    "the trace's barge_in event says what became of the reply"
)
_SPOKEN_TURN_WITHDRAWN = (
    "the turn is withdrawn (the rest of its audio dropped, what was heard of it cleared, any "
    "reply cut) and the runner is ready for the next turn"
)
