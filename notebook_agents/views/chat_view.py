"""ChatView: type as the user to a running agent; the transcript names who said what."""

from __future__ import annotations

import asyncio
import concurrent.futures
import textwrap
from typing import Any

import traitlets
from matplotlib.figure import Figure

from .._figure_style import INK, static_figure
from ..analysis import handoff_label
from ..runner import AgentRunner, RunnerError
from ..trace import TraceEvent
from ._assets import asset, joined_modules
from ._scenario_saving import SavesScenarios
from ._stream import TraceStreamView
from ._text import call_over, cut
from .errors import ViewSourceError


class ChatView(TraceStreamView, SavesScenarios):
    """A chat box on a runner (``NotebookRunner`` or ``AgentProcess``): each line typed is one
    ``runner.submit_text`` turn.

    The transcript comes from the runner's trace, so it also shows turns sent from cells and
    what agents say on their own (``on_enter``), each under the agent's name. "Save as
    scenario" writes the call so far into ``scenario_path`` (``save_scenario``: the
    runner's call as ``notebook_agents.suites.to_scenario`` writes it).
    """

    _esm = joined_modules("scenario_form.js", "chat_view.js")
    _css = asset("views.css")

    pending = traitlets.Int(0).tag(sync=True)
    """turns sent and not answered yet"""
    error = traitlets.Unicode("").tag(sync=True)
    """why the last turn failed (not ready, stopped, timed out), until the next one"""
    ended = traitlets.Unicode("").tag(sync=True)
    """once the call is over: that it is, why, and what to do; the input is then disabled"""

    def __init__(self, runner: AgentRunner, **kwargs: Any) -> None:
        if not isinstance(runner, AgentRunner):
            raise ViewSourceError(
                f"ChatView takes the runner it types into, ChatView(runner), not a "
                f"{type(runner).__name__} (the other views take runner.trace)"
            )
        super().__init__(runner.trace, **kwargs)
        self.runner = runner
        try:
            # turns finish on the job thread; their outcome is shown from this (kernel) loop
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def _record(self, event: TraceEvent) -> dict[str, Any] | None:
        data = event.data
        if event.kind == "closed":
            self.ended = call_over(data)
            return None
        if event.kind in ("user_message", "agent_message"):
            who = "you" if event.kind == "user_message" else event.agent or "agent"
            return {"seq": event.seq, "kind": event.kind, "who": who, "text": cut(data["text"]),
                    "phase": data.get("phase")}  # fmt: skip
        if event.kind == "handoff" and data.get("from"):
            text = f"{data['from']} → {data['to']} ({handoff_label(data)})"
            return {"seq": event.seq, "kind": "handoff", "who": "", "text": text}
        if event.kind == "error":
            return {"seq": event.seq, "kind": "error", "who": "", "text": data.get("message", "")}
        return None

    def say(self, text: str) -> concurrent.futures.Future[str] | None:
        """Send ``text`` as the user, as typing it does; None (and ``error`` set) if refused."""
        text = text.strip()
        if not text:
            return None
        try:
            turn = self.runner.submit_text(text)
        except RunnerError as e:
            self.error = str(e)
            return None
        self.error = ""
        self.pending += 1
        turn.add_done_callback(self._turn_finished)
        return turn

    def _on_browser_message(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        if content.get("type") == "say":
            self.say(str(content.get("text", "")))
        elif not self._on_save_message(content):
            super()._on_browser_message(widget, content, buffers)

    def _call_to_save(self) -> AgentRunner | str:
        if self.pending:  # its last turn is not over: it would be written in part
            return "the agent is still answering: save once its reply is in"
        return self.runner

    def _turn_finished(self, turn: concurrent.futures.Future[str]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._show_outcome, turn)
        else:
            self._show_outcome(turn)

    def _show_outcome(self, turn: concurrent.futures.Future[str]) -> None:
        self.pending -= 1
        if turn.cancelled():
            self.error = "the turn was cancelled (the runner stopped)"
        elif isinstance(error := turn.exception(), RunnerError):
            self.error = str(error)  # says what went wrong and what to do
        elif error is not None:
            self.error = f"the turn failed: {error!r}"

    def to_figure(self, last: int = 12) -> Figure:
        """The ``last`` lines of the transcript as a picture, for exported notebooks."""
        self._catch_up()
        with static_figure():
            return self._figure(last)

    def _figure(self, last: int) -> Figure:
        lines = self._sent[-last:]
        figure = Figure(figsize=(7.0, 0.5 + 0.3 * max(len(lines), 1)))
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        if not lines:
            ax.text(0.5, 0.5, "no messages yet", ha="center", va="center")
        for row, line in enumerate(lines):
            y = 1 - (row + 0.8) / max(len(lines) + 0.3, 1)
            color = _COLORS.get(line["kind"], INK)
            who = f"{line['who']}: " if line["who"] else ""
            text = textwrap.shorten(who + line["text"], 110, placeholder=" …")
            ax.text(0.02, y, text, color=color, fontsize=9, va="center", transform=ax.transAxes)
        return figure


_COLORS = {
    "user_message": "#0e7fc0",
    "agent_message": "#1d8a4a",
    "handoff": INK,
    "error": "#e0453f",
}
"""each line's colour in the picture: mid shades that read at >= 4.1:1 on the light and the
dark theme's page"""
