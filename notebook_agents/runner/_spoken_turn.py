"""One spoken turn on the session's loop, and how a turn is given up.

The caller's audio goes into the microphone, the replies are collected as ``session.run``
collects a typed turn's, and the session's errors are watched: a model that fails during the
turn fails it at once, not at the timeout. A turn given up (timed out, interrupted, failed) is
withdrawn, so the microphone, the session and the model are ready for the next one (a typed
turn's replies are cut the same way, ``cut_replies``); a turn that timed out says where it
stood, read from the trace; and one to an agent that cannot hear is refused before it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np
from livekit.agents import (
    Agent,
    AgentSession,
    ErrorEvent,
    RunResult,
    UserInputTranscribedEvent,
    llm,
    mock_tools,
    stt,
)
from livekit.agents.metrics import STTMetrics
from livekit.agents.utils import is_given
from livekit.agents.voice import SpeechHandle

from .. import _livekit_internals as livekit
from ..trace import TraceEvent, error_text
from ._caller import CallerInput, until_the_agent_is_quiet, until_the_caller_is_heard_out
from .errors import HeardNothing, RunnerError

TRANSCRIPT_HOPS = 20
"""loop turns a final transcript may take from the STT's answer to the session's event: its
metrics are emitted as ``recognize`` returns, before livekit's ``StreamAdapter`` hands the
transcript on, and it reached ``user_input_transcribed`` 2 loop turns later (measured: three
phrases). Counted in loop turns, not seconds: a loaded machine slows both alike"""
_FREE_SPEECH = (
    "The emulator hears, by default, only what a caller of the session's agents may say "
    "(their tools, greetings, arithmetic); Emulator(hearing='whisper') hears free speech"
)
HEARD_OUT_S = 5.0
"""how long a withdrawn turn's trailing silence may take to end the speech (a VAD's silence
is ~0.5 s); past it the next turn starts anyway"""


class SpokenTurn:
    """A turn the caller speaks into ``microphone``; its replies are collected in ``run``.
    ``end()`` it, whatever happened. Over an agent's reply (``over_a_reply``), speech heard as
    no words is livekit's to dismiss (a false interruption), not the turn's to end."""

    def __init__(
        self, session: AgentSession[Any], microphone: CallerInput, *, over_a_reply: bool = False
    ) -> None:
        self.session = session
        self.microphone = microphone
        self.seconds = 0.0
        """how long the caller's audio lasts"""
        self.failed: asyncio.Future[RunnerError] = asyncio.get_running_loop().create_future()
        """the first error the session reported during the turn, or ``HeardNothing``"""
        self._capture = livekit.capture_spoken_turn(session)
        session.on("error", self._on_error)
        self._transcribed = False
        self._judging: set[asyncio.Task[None]] = set()
        self._recognizer = None if over_a_reply else _per_utterance_stt(session)
        if self._recognizer is not None:
            self._recognizer.on("metrics_collected", self._on_recognized)
            session.on("user_input_transcribed", self._on_transcribed)
        # the reply comes from the session's own tasks, which the context this turn runs in
        # (the cell's `with mock_tools(...)` carried into the job's) does not reach: its mocks
        # are the session's for the turn
        self._held_mocks = _mock_for_session(session, livekit.scoped_tool_mocks())

    def speak(self, samples: np.ndarray, rate: int) -> float:
        """The caller says ``samples`` (int16 mono at ``rate``); returns when their first
        frame goes out (``time.perf_counter()``)."""
        self.seconds = samples.size / rate
        return self.microphone.speak(samples, rate, self)

    @property
    def run(self) -> RunResult[Any]:
        return self._capture.run

    def _on_error(self, event: ErrorEvent) -> None:
        if not self.failed.done():
            self.failed.set_result(RunnerError(error_text(event.error)))

    def _on_transcribed(self, event: UserInputTranscribedEvent) -> None:
        self._transcribed = self._transcribed or event.is_final

    def _on_recognized(self, metrics: STTMetrics) -> None:
        # livekit drops an empty transcript without an event: the recognizer's own answer
        # (its metrics, one per utterance) is the only sign it heard the speech out
        judging = asyncio.ensure_future(self._judge_words(metrics.audio_duration))
        self._judging.add(judging)
        judging.add_done_callback(self._judging.discard)

    async def _judge_words(self, heard_s: float) -> None:
        """After the recognizer answered ``heard_s`` seconds of speech: if no transcript came
        of it and the caller has said all there is, the turn fails (``HeardNothing``)."""
        for _ in range(TRANSCRIPT_HOPS):
            await asyncio.sleep(0)  # one loop turn: the transcript's way to the session
        session = self.session
        if (
            self._transcribed
            or self.failed.done()
            or self.microphone.unspoken_s > 0
            or session.user_state == "speaking"
            or session.agent_state in ("thinking", "speaking")
        ):
            return
        self.failed.set_result(
            HeardNothing(
                f"the spoken turn was heard as no words: the speech recognizer "
                f"({_plugin_name(self._recognizer)}) answered the {heard_s:.1f} s of audio "
                "livekit's VAD gave it (the speech and silence around it) with no transcript, "
                "and livekit does not answer an empty one. Is it speech, "
                f"in the recognizer's language, clear and loud enough? {_FREE_SPEECH}"
            )
        )

    async def outcome(
        self, settled: Coroutine[Any, Any, Exception | None], timeout: float
    ) -> Exception | None:
        """What ``settled`` (the run, awaited) gives, or the session's error if one came
        first; ``asyncio.TimeoutError`` if neither came within ``timeout`` seconds, and
        ``HeardNothing`` if the recognizer heard no words in the speech."""
        answered = asyncio.ensure_future(settled)
        either: set[asyncio.Future[Any]] = {answered, self.failed}
        try:
            await asyncio.wait(either, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            answered.cancel()
        if self.failed.done():
            if isinstance(failed := self.failed.result(), HeardNothing):
                raise failed
            return failed
        if answered.done() and not answered.cancelled():
            return answered.result()
        raise asyncio.TimeoutError  # control flow: the voice turn raises the RunnerError

    async def withdraw(self) -> None:
        """Give the turn up so the next one starts clean: the rest of its audio is dropped,
        what was heard of it cleared (livekit's public ``clear_user_turn``: the STT's buffer
        and transcript, or the realtime model's input buffer), silence follows until the
        session's VAD (or the model's) has heard the speech end, and any reply is cut
        (``cut_replies``)."""
        self.microphone.withdraw(self)
        with contextlib.suppress(RuntimeError):  # the session is closing
            self.session.clear_user_turn()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(until_the_caller_is_heard_out(self.session), HEARD_OUT_S)
        await cut_replies(self.session, self._capture.speeches)

    def end(self) -> None:
        """Mute the microphone and stop watching the session."""
        self.microphone.close(self)
        self._capture.stop()
        self.session.off("error", self._on_error)
        if self._recognizer is not None:
            self._recognizer.off("metrics_collected", self._on_recognized)
            self.session.off("user_input_transcribed", self._on_transcribed)
        for judging in self._judging:
            judging.cancel()
        for agent, mocks in self._held_mocks.items():
            mock_tools(agent, mocks, session=self.session)


def _mock_for_session(
    session: AgentSession[Any], mocks: livekit.ToolMocks
) -> dict[type[Agent], dict[str, Callable[..., Any]]]:
    """``mocks`` set on ``session`` over its own (livekit's ``mock_tools(..., session=)``, the
    block's winning as in livekit); returns what each agent had, to put back."""
    held = {agent: dict(livekit.session_tool_mocks(session).get(agent, {})) for agent in mocks}
    for agent, tools in mocks.items():
        mock_tools(agent, {**held[agent], **tools}, session=session)
    return held


async def cut_replies(session: AgentSession[Any], speeches: list[SpeechHandle]) -> None:
    """Cut the ``speeches`` of a turn given up, cancel the tools they started, and wait (a
    while) for the agent to be quiet. livekit lets a tool outlive its interrupted speech unless
    the tool is marked cancellable, and closing the session then awaits it: a tool that never
    returns held every later stop for a minute. A turn given up is over, its tools too; a
    speech that may not be interrupted plays out, and keeps its tools."""
    cut = []
    for speech in speeches:
        if not speech.done():
            with contextlib.suppress(RuntimeError):  # one that may not be cut plays out
                speech.interrupt()
                cut.append(speech)
    for task in livekit.tool_tasks(session, of_speeches=cut):
        task.cancel()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(until_the_agent_is_quiet(session), HEARD_OUT_S)


def _per_utterance_stt(session: AgentSession[Any]) -> stt.STT[Any] | None:
    """The running agent's speech recognizer (its own, else the session's) if it answers
    utterance by utterance (not streaming: livekit's ``StreamAdapter`` gives it each of the
    VAD's utterances), the kind whose answer says when it heard the speech out."""
    agent = session.current_agent
    recognizer = agent.stt if is_given(agent.stt) else session.stt
    if recognizer is None or recognizer.capabilities.streaming:
        return None
    return recognizer


def _plugin_name(model: object) -> str:
    """``openai.STT`` for livekit's ``livekit.plugins.openai.stt.STT``, else the class's name."""
    kind = type(model)
    plugin = kind.__module__.split(".")
    if plugin[:2] == ["livekit", "plugins"] and len(plugin) > 2:
        return f"{plugin[2]}.{kind.__name__}"
    return kind.__name__


def require_hearing(session: AgentSession[Any]) -> None:
    """Raise a ``RunnerError`` naming the fix unless the running agent can hear: it has a
    speech recognizer (its own ``stt``, else the session's, as livekit picks) or a realtime
    model, which takes audio. Without, livekit drops the audio unheard and no reply comes."""
    agent = session.current_agent
    stt = agent.stt if is_given(agent.stt) else session.stt
    model = agent.llm if is_given(agent.llm) else session.llm
    if stt is not None or isinstance(model, llm.RealtimeModel):
        return
    name = type(agent).__name__
    raise RunnerError(
        f"the agent ({name}) cannot hear a spoken turn: it has no speech recognizer and its "
        f"LLM ({type(model).__name__}) takes text only. Give the session or the agent an "
        "`stt=...` (AgentSession(stt=openai.STT(...)), or Agent(stt=...) for this agent), or "
        "use a realtime model that takes audio (openai.realtime.RealtimeModel); typed turns "
        "(runner.send_text) work as they are"
    )


def why_unanswered(
    events: list[TraceEvent],
    timeout: float,
    seconds: float,
    unspoken_s: float,
    *,
    speech_states: bool = True,
) -> str:
    """Where a spoken turn stood when its ``timeout`` ran out, from its trace ``events``: the
    audio (``seconds`` long) still being spoken, no speech detected, speech not ended, heard
    but not transcribed, transcribed but not answered, or the reply still playing. Without
    ``speech_states`` (a session that reports no ``user_state``: a VideoSDK pipeline with no
    VAD) whether speech was detected is not known."""
    head = f"the spoken turn got no reply within timeout={timeout:g} s"
    if unspoken_s > 0:
        return (
            f"{head}: its audio was still being spoken ({seconds - unspoken_s:.1f} s of "
            f"{seconds:.1f} s); pass a timeout longer than the audio, e.g. "
            f"timeout={math.ceil(seconds) + 30}"
        )
    user = [e.data["new"] for e in events if e.kind == "user_state"]
    if speech_states and "speaking" not in user:
        return (
            f"{head}: no speech was detected in the audio (the session's VAD, or the realtime "
            "model's, heard none): is it speech, loud enough, at the rate given?"
        )
    if user and user[-1] == "speaking":
        return (
            f"{head}: the caller's speech had not ended (the VAD still heard speech): is the "
            "audio followed by noise rather than silence?"
        )
    agent = {e.data["new"] for e in events if e.kind == "agent_state"}
    if "speaking" in agent:
        return f"{head}: the agent's reply was still playing; pass a longer timeout"
    words = [
        e.data["text"]
        for e in events
        if e.kind == "user_message" or (e.kind == "user_transcript" and e.data["final"])
    ]
    if not words and "thinking" not in agent:
        return (
            f"{head}: {'speech was heard but ' if speech_states else ''}no transcript came: "
            "the speech recognizer (the "
            "session's STT, or the realtime model's transcription) heard no words in it, or "
            f"did not answer in time. {_FREE_SPEECH}"
        )
    said = f"saying {words[-1]!r}" if words else "(no transcript)"
    return (
        f"{head}: the caller was heard {said} but the agent had not begun to reply: its "
        "LLM and TTS (or its realtime model) did not answer in time"
    )
