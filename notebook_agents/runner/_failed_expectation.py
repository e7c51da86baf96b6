"""A failed ``RunResult.expect`` shown readably in the notebook, still an ``AssertionError``.

livekit raises a plain ``AssertionError`` whose text holds the turn's events as reprs; in a
notebook that is a wall of text under livekit's own frames. In IPython, those errors (only
those: raised by ``RunAssert``) are shown as a block above the error: which expectation (the
cell's line), livekit's reason, and the turn's events, the failing one marked, each with
where it is on the runner's trace (time, agent). The error itself is unchanged (a cell that
fails still fails; pytest and nbclient see the same ``AssertionError``), its traceback cut
to the user's frames. Every other exception goes to IPython's handler as before.
"""

from __future__ import annotations

import html
import threading
import traceback
import types
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livekit import agents as livekit_agents
from livekit.agents import (
    AgentHandoffEvent,
    ChatMessageEvent,
    FunctionCallEvent,
    FunctionCallOutputEvent,
    RunEvent,
    RunResult,
)

from .. import _livekit_internals as livekit
from ..trace import Trace, TraceEvent, agent_label
from ._shown_errors import handle_in_ipython, show_cut

_LIVEKIT = str(Path(livekit_agents.__file__).parent)
_traces: weakref.WeakKeyDictionary[RunResult[Any], weakref.ref[Trace]] = weakref.WeakKeyDictionary()
"""each run's trace, held weakly both ways: a trace reaches its results (through its reader,
livekit's session and activity), so a strong value would keep every stopped runner alive"""
_traces_lock = threading.Lock()


def remember(result: RunResult[Any], trace: Trace) -> None:
    """``result``'s events are on ``trace``: a failed expectation shows where."""
    with _traces_lock:
        _traces[result] = weakref.ref(trace)


def install() -> None:
    """Show failed expectations readably in this IPython shell, if there is one (once)."""
    handle_in_ipython(AssertionError, _shown_as_a_table)


def _shown_as_a_table(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: types.TracebackType | None,
    tb_offset: int | None,
) -> bool:
    """The turn's events above the user's frames and livekit's reason; only an
    ``AssertionError`` livekit's ``RunAssert`` raised (False: any other)."""
    failed = livekit.failed_expectation(tb)
    if failed is None:
        return False
    events, marked = failed
    report = FailedExpectation(
        _expectation_line(tb), str(value).split("\nContext around failure:")[0],
        events, marked, _trace_of(events),
    )  # fmt: skip
    from IPython.display import display

    display(report)  # type: ignore[no-untyped-call]
    # shown: the user's frames and livekit's reason; the error sent is livekit's own (its
    # name and full text, for nbclient and papermill)
    short = etype(f"{report.reason} (the turn's events are shown above)")
    show_cut(shell, (etype, value, tb), short, _user_frames(tb), tb_offset)
    return True


def _trace_of(events: list[RunEvent]) -> Trace | None:
    with _traces_lock:
        known = list(_traces.items())
    return next((trace() for result, trace in known if result.events is events), None)


def _user_frames(tb: types.TracebackType | None) -> list[types.TracebackType]:
    frames = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_LIVEKIT):
            frames.append(tb)
        tb = tb.tb_next
    return frames


def _expectation_line(tb: types.TracebackType | None) -> str:
    """The user's line that made the failing expectation (the last of theirs raised through)."""
    frames = _user_frames(tb)
    if not frames:
        return ""
    last = frames[-1]
    summary = traceback.extract_tb(last, limit=1)
    return (summary[0].line or "") if summary else ""


@dataclass
class FailedExpectation:
    """What a failed expectation shows: HTML in JupyterLab, text elsewhere."""

    line: str
    """the user's code that expected"""
    reason: str
    """livekit's message"""
    events: list[RunEvent]
    marked: int | None
    trace: Trace | None

    def rows(self) -> list[dict[str, str]]:
        """Each event: its index, trace time and agent (where the trace has them), kind,
        what it holds; ``mark`` set on the one the expectation failed at."""
        placed = _placed(self.trace)
        rows = []
        for index, event in enumerate(self.events):
            kind, detail = _described(event)
            at = placed.get(_key(event))
            t = at.t if at is not None else _trace_time(event, self.trace)
            agent = (at.agent if at is not None else None) or _agent_of(event)
            rows.append({
                "mark": ">>>" if index == self.marked else "",
                "index": f"[{index}]",
                "t": f"t={t:.3f} s" if t is not None else "",
                "agent": agent or "",
                "kind": kind,
                "detail": detail,
            })  # fmt: skip
        return rows

    def span(self) -> str:
        times = [row["t"] for row in self.rows() if row["t"]]
        if not times:
            return "the turn had no events" if not self.events else ""
        first, last = times[0].removeprefix("t="), times[-1].removeprefix("t=")
        where = f"at {first}" if first == last else f"from {first} to {last}"
        return f"the turn is on runner.trace {where}"

    def __repr__(self) -> str:
        lines = [f"Expectation failed: {self.line}".rstrip(), f"  {self.reason}"]
        if span := self.span():
            lines.append(f"  ({span})")
        for row in self.rows():
            cells = [row["mark"].ljust(3), row["index"], row["t"], row["agent"], row["kind"]]
            lines.append("  " + "  ".join(c for c in cells if c) + f"  {row['detail']}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f'<tr style="{_MARKED if row["mark"] else ""}">'
            + "".join(
                f'<td style="{_CELL};white-space:nowrap">{html.escape(row[key])}</td>'
                for key in ("mark", "index", "t", "agent", "kind")
            )
            + f'<td style="{_CELL};overflow-wrap:anywhere">{html.escape(row["detail"])}</td>'
            + "</tr>"
            for row in self.rows()
        )
        span = self.span()
        return (
            f'<div class="na-failed-expectation" style="{_BOX}">'
            f"<div><b>Expectation failed</b> <code>{html.escape(self.line)}</code></div>"
            f'<div style="color:var(--jp-error-color1, #dc2626)">{html.escape(self.reason)}</div>'
            + (f'<div style="{_QUIET}">{html.escape(span)}</div>' if span else "")
            + f'<table style="border-collapse:collapse;margin-top:4px">{rows}</table></div>'
        )


_BOX = (
    "font:12px/1.5 var(--jp-content-font-family, sans-serif);"
    "color:var(--jp-ui-font-color1, #1f2937);"
    "border-left:3px solid var(--jp-error-color1, #dc2626);padding:4px 10px"
)
_CELL = "padding:1px 8px 1px 0;text-align:left;vertical-align:top"
"""each cell; the short columns never break (nowrap), the event's text takes the rest of the
width and wraps, anywhere if it must (a long URL or JSON)"""
_QUIET = "color:var(--jp-ui-font-color2, #64748b)"
_MARKED = "background:rgba(220,38,38,.16);font-weight:600"
"""the event the expectation failed at: a see-through tint of the theme's error red, readable
under either theme's text"""


def _described(event: RunEvent) -> tuple[str, str]:
    if isinstance(event, ChatMessageEvent):
        return "message", f"{event.item.role}: {event.item.text_content or ''}"
    if isinstance(event, FunctionCallEvent):
        return "function_call", f"{event.item.name}({event.item.arguments})"
    if isinstance(event, FunctionCallOutputEvent):
        error = " (error)" if event.item.is_error else ""
        return "function_call_output", f"{event.item.name} -> {event.item.output!r}{error}"
    old = agent_label(event.old_agent) if event.old_agent is not None else "(none)"
    return "agent_handoff", f"{old} -> {agent_label(event.new_agent)}"


def _key(event: RunEvent) -> tuple[str, str] | None:
    """What ties a run's event to the trace's event of it."""
    if isinstance(event, ChatMessageEvent):
        return "message", event.item.id
    if isinstance(event, FunctionCallEvent):
        return "tool_call", event.item.call_id
    if isinstance(event, FunctionCallOutputEvent):
        return "tool_output", event.item.call_id
    return None


def _placed(trace: Trace | None) -> dict[tuple[str, str] | None, TraceEvent]:
    placed: dict[tuple[str, str] | None, TraceEvent] = {}
    for event in trace.events if trace is not None else []:
        if event.kind in ("user_message", "agent_message") and "item_id" in event.data:
            placed.setdefault(("message", event.data["item_id"]), event)
        elif event.kind in ("tool_call", "tool_output") and "call_id" in event.data:
            placed.setdefault((event.kind, event.data["call_id"]), event)
    return placed


def _trace_time(event: RunEvent, trace: Trace | None) -> float | None:
    """When livekit made the event's item, on the trace's clock."""
    return event.item.created_at - trace.started_at if trace is not None else None


def _agent_of(event: RunEvent) -> str | None:
    return agent_label(event.new_agent) if isinstance(event, AgentHandoffEvent) else None
