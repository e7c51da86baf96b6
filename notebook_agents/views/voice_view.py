"""VoiceView: talk to a running agent through the browser's microphone, and hear it.

The microphone opens only on a click. Its audio crosses to the kernel over the widget's comm
as binary buffers of PCM16 mono at 24 kHz (no JSON, no base64), so a remote kernel without a
sound card hears it; the agent's reply comes back the same way and plays with WebAudio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anywidget
import numpy as np
import traitlets

from ..runner import NotebookRunner, RunnerError
from ..speech import SAMPLE_RATE
from ..speech.line import PRESETS, Line, LineLike, as_line
from ..trace import TraceEvent
from ._assets import asset
from ._text import call_over, cut
from .errors import ViewSourceError

MODES = ("push_to_talk", "open_mic")


class VoiceView(anywidget.AnyWidget):
    """A microphone button (push-to-talk or open mic), your level and the agent's, the line
    your voice crosses (``lines``: a choice of line conditions, ``runner.conditions``), and
    what was last heard and said, on a ``NotebookRunner(..., audio=True)``."""

    _esm = asset("voice_view.js")
    _css = asset("views.css")

    mode = traitlets.Enum(MODES, default_value="push_to_talk").tag(sync=True)
    rate = traitlets.Int(SAMPLE_RATE).tag(sync=True)
    """the PCM rate both ways"""
    agent = traitlets.Unicode("").tag(sync=True)
    """the agent on the call now"""
    heard = traitlets.Unicode("").tag(sync=True)
    """what the agent last heard you say: the turn as its user message has it, every stretch
    of speech in it; while the turn goes on, the stretches transcribed so far"""
    said = traitlets.Unicode("").tag(sync=True)
    """what the agent last said"""
    ended = traitlets.Unicode("").tag(sync=True)
    """once the call is over: that it is, why, and what to do (as ChatView says it); the
    microphone is then disabled"""
    error = traitlets.Unicode("").tag(sync=True)
    """why the microphone cannot be used (refused in the browser, the runner stopped)"""
    lines = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """the names of the lines to choose from"""
    line = traitlets.Unicode("").tag(sync=True)
    """the name of the line chosen: the runner's ``conditions``"""

    def __init__(
        self,
        runner: NotebookRunner,
        mode: str = "push_to_talk",
        lines: Mapping[str, LineLike] | None = None,
        **kwargs: Any,
    ) -> None:
        """``lines``: the line conditions to choose from, by name (``PRESETS`` of
        ``notebook_agents.speech.line`` unless given: clean, a café, a street, a telephone,
        a lossy network...); the runner's own ``conditions`` are among them, chosen."""
        self._stops: list[Callable[[], None]] = []  # first: a refused view is still closed
        if not isinstance(runner, NotebookRunner):
            raise ViewSourceError(
                f"VoiceView is the microphone and speaker of a NotebookRunner(..., audio=True), "
                f"not of a {type(runner).__name__}: speak to it with `await "
                "runner.send_audio(...)`; what the agent said aloud is in its trace (and a "
                "VideoSDKRunner's in `runner.room.played`)"
            )
        runner.require_microphone("VoiceView")
        choices = {
            name: as_line(line) for name, line in (PRESETS if lines is None else lines).items()
        }
        chosen = next((name for name, line in choices.items() if line == runner.conditions), None)
        if chosen is None:  # the runner's own line, named as it reads
            chosen = str(runner.conditions)
            choices = {chosen: runner.conditions, **choices}
        self._lines: dict[str, Line] = choices
        super().__init__(mode=mode, lines=list(choices), line=chosen, **kwargs)
        self.runner = runner
        self._stretches: list[str] = []
        """the final transcripts of the turn going on, each a stretch of speech"""
        self.on_msg(self._on_front_end)
        self.observe(self._on_line, names="line")
        self._stops += [runner.on_agent_audio(self._play), runner.trace.subscribe(self._follow)]
        for event in runner.trace.events:
            self._follow(event)

    def close(self) -> None:
        while self._stops:
            self._stops.pop()()
        super().close()

    def _on_front_end(self, _: Any, content: dict[str, Any], buffers: list[bytes]) -> None:
        """The browser's microphone audio; push-to-talk pressed (the microphone is open) and
        let go: the turn lasts from one to the other (``runner.start_turn`` / ``end_turn``)."""
        kind = content.get("kind")
        try:
            if kind == "microphone":
                for buffer in buffers:
                    self.runner.hear(np.frombuffer(buffer, np.int16), self.rate)
            elif kind == "pressed":
                self.error = ""
                self.runner.start_turn()
            elif kind == "released":
                self.runner.end_turn()
        except RunnerError as e:
            self.error = str(e)

    def _on_line(self, change: dict[str, Any]) -> None:
        """A line chosen in the browser: the caller's audio crosses it from now on."""
        line = self._lines.get(change["new"])
        if line is None:
            self.error = f"no line {change['new']!r}: the lines are {', '.join(self._lines)}"
            return
        self.runner.conditions = line

    def _play(self, samples: np.ndarray | None) -> None:
        """The agent's reply, as it is given (on the session's thread), to the browser."""
        if samples is None:
            self.send({"kind": "cut"})
        else:
            self.send({"kind": "agent_audio"}, buffers=[samples.tobytes()])

    def _follow(self, event: TraceEvent) -> None:
        data = event.data
        if event.agent:
            self.agent = event.agent
        if event.kind == "user_transcript" and data["final"] and data["text"]:
            self._stretches.append(data["text"])
            self.heard = cut(" ".join(self._stretches))
        elif event.kind == "user_message":
            self._stretches = []
            self.heard = cut(data["text"])
        elif event.kind == "agent_message":
            self.said = cut(data["text"])
        elif event.kind == "closed":
            self.ended = call_over(data)
