"""A caller who speaks over the agent's reply on cue: ``run_audio(..., at=0.5)``.

Offline the reply plays on the runner's real-time speaker, so "0.5 s into the reply" is a
moment of its playout. There the caller's audio goes into the microphone without waiting for
the agent to be quiet, and livekit's own interruption handling decides what becomes of the
reply: it cuts it (``SpeechHandle.interrupted``), or pauses it and, when no turn comes of the
sound, resumes it (``agent_false_interruption``). Once the reply has ended the trace records a
``barge_in`` event saying so, with how long the agent took to stop speaking.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable
from typing import Any, Literal

from livekit.agents import AgentFalseInterruptionEvent, AgentSession, llm
from livekit.agents.telemetry import trace_types
from livekit.agents.voice import SpeechHandle

from ..trace import BargeInData, TraceSpan
from ._playback import Playout
from .errors import CueError

FIRST_AUDIO = "first_audio"
Cue = float | Literal["first_audio"]
"""when a barge-in starts: seconds into the agent's reply, or at its first audio (0 s)"""


def cue_seconds(at: object) -> float:
    """``at`` (a barge-in's cue) as seconds into the reply; ``CueError`` naming the fix."""
    if at == FIRST_AUDIO:
        return 0.0
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at) or at < 0:
        raise CueError(
            f"at= is when the caller starts speaking over the agent's reply: seconds into it "
            f"(a number from 0, e.g. at=0.5) or at={FIRST_AUDIO!r}, not {at!r}"
        )
    return float(at)


class BargeIn:
    """What livekit makes of the caller's speech over a reply (``playout`` on the speaker,
    livekit's ``speech``), watched from the moment the caller begins (``began``,
    ``time.perf_counter()``)."""

    def __init__(
        self,
        session: AgentSession[Any],
        at: float,
        playout: Playout,
        position: float,
        speech: SpeechHandle | None,
    ) -> None:
        self.session = session
        self.at, self.playout, self.position, self.speech = at, playout, position, speech
        self.began = time.perf_counter()
        self.dismissed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        """set when livekit calls the interruption false (to whether it resumed the reply):
        no turn came of the caller's sound, so nothing will answer it"""
        session.on("agent_false_interruption", self._on_false_interruption)

    def _on_false_interruption(self, event: AgentFalseInterruptionEvent) -> None:
        if not self.dismissed.done():
            self.dismissed.set_result(event.resumed)

    def spoken(self, first_frame: float) -> None:
        """The caller's audio went out from ``first_frame`` on (``time.perf_counter()``)."""
        self.began = first_frame

    @property
    def reply_over(self) -> bool:
        """The reply spoken over has ended (cut, or played out) on the speaker."""
        return self.playout.played is not None

    @property
    def unheeded(self) -> bool:
        """The reply played out as if the caller had said nothing: never cut nor paused."""
        stopped = any(t >= self.began for t in self.playout.stops)
        return self.reply_over and not stopped and not self.dismissed.done()

    async def reply_ended(self) -> None:
        """Wait until the reply spoken over has ended: cut, or played out (resumed or not)."""
        if self.speech is not None:
            await self.speech

    def data(self, trace_now: float, spans: Iterable[TraceSpan]) -> BargeInData:
        """The ``barge_in`` event, once the reply has ended; ``trace_now`` is the trace's
        time now (``Trace.now()``), to put the speaker's clock on it, ``spans`` livekit's
        (``Trace.spans``), where the reply's whole text is."""
        offset = trace_now - time.perf_counter()
        stops = [t for t in self.playout.stops if t >= self.began]
        stopped = stops[0] + offset if stops else None
        began = self.began + offset
        said = (
            [m for m in self.speech.chat_items if isinstance(m, llm.ChatMessage)]
            if self.speech is not None
            else []
        )
        replies = [m for m in said if m.role == "assistant"]
        return {
            "at": self.at,
            "began": began,
            "position": self.position,
            "interrupted": self.speech is not None and self.speech.interrupted,
            "resumed": self.dismissed.done() and self.dismissed.result(),
            "stopped": stopped,
            "stop_s": None if stopped is None else stopped - began,
            "played_s": self.playout.played if self.playout.played is not None else 0.0,
            "heard": " ".join(m.text_content or "" for m in replies),
            "text": None if self.speech is None else generated_text(self.speech.id, spans),
            "item_id": replies[-1].id if replies else None,
        }

    def end(self) -> None:
        self.session.off("agent_false_interruption", self._on_false_interruption)


def generated_text(speech_id: str, spans: Iterable[TraceSpan]) -> str | None:
    """The whole text the LLM generated for the speech ``speech_id``: livekit's ``llm_node``
    spans inside the speech's ``agent_turn`` record it (``lk.pii.response.text``), where the
    message of a cut reply holds only what was heard. None when they do not (a realtime model,
    or a tracer provider that drops content)."""
    spans = list(spans)
    turns = {
        span.span_id
        for span in spans
        if span.name == "agent_turn"
        and span.attributes.get(trace_types.ATTR_SPEECH_ID) == speech_id
    }
    generated = [
        str(span.attributes[trace_types.ATTR_RESPONSE_TEXT])
        for span in spans
        if span.name == "llm_node"
        and span.parent_id in turns
        and trace_types.ATTR_RESPONSE_TEXT in span.attributes
    ]
    return " ".join(generated) if generated else None
