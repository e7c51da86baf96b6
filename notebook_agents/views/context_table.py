"""ContextTable: chat contexts side by side, a column each, as a static HTML/text display.

What each agent's model is given at a moment (``ContextTable.at(trace, t)``), livekit's side
and the model's side of one agent (``ContextTable.livekit_and_model(trace, agent)``), or any
contexts one wants to compare (``ContextTable({"copied": items, "empty": other})``, marked
against the first with ``ContextTable.compare``). Items are the trace's (``describe_item``
dicts); nothing live, so it prints the same in a saved notebook.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..trace import Trace
from ..trace.contexts import MARKS, compared
from .errors import ViewArgumentError

Item = Mapping[str, Any]


def item_line(item: Item) -> str:
    """``user: Hello!``, ``call transfer_to_weather: {}``, ``output get_weather: Sunny``."""
    kind = item.get("type")
    if kind == "message":
        who = str(item.get("role", "?"))
    elif kind == "function_call":
        who = f"call {item.get('name')}"
    else:  # the model's side may not know an output's tool: its call is gone
        who = f"output {item.get('name') or '?'}"
    return f"{who}: {item.get('text', '')}"


class ContextTable:
    """Chat contexts in columns; a column's title says whose and how many items."""

    MARKS = MARKS
    """what a marked item's ``mark`` says of it: missing, extra (only here) or moved"""

    def __init__(self, columns: Mapping[str, Sequence[Item]]) -> None:
        self.columns = {title: list(items) for title, items in columns.items()}

    @classmethod
    def at(cls, trace: Trace, t: float | None = None) -> ContextTable:
        """Each agent's chat context at ``t`` seconds into the trace (default: now)."""
        return cls(trace.contexts_at(t))

    @classmethod
    def compare(cls, columns: Mapping[str, Sequence[Item]]) -> ContextTable:
        """The columns with each item marked against the first column's: missing from
        another, only in this one, or out of order (``MARKS``)."""
        return cls(compared(columns))

    @classmethod
    def livekit_and_model(
        cls, trace: Trace, agent: str | None = None, t: float | None = None
    ) -> ContextTable:
        """``agent``'s chat context (livekit's side) beside its model's conversation at ``t``
        (default: the end), marked. Apart, both sides as the trace saw them part; together,
        livekit's context twice. ``agent`` defaults to the last one whose sides parted."""
        parted = trace.divergences_at(t)
        if agent is None:
            if not parted:
                raise ViewArgumentError(
                    "no agent's chat context and model's conversation were apart then: "
                    "name the agent to see both sides agree"
                )
            agent = max(parted.values(), key=lambda event: event.t).data["agent"]
        record = parted.get(agent)
        if record is None:
            items = trace.contexts_at(t).get(agent, [])
            return cls.compare({f"{agent} · livekit": items, f"{agent} · model (the same)": items})
        when = f"{record.t:.2f} s"
        return cls.compare(
            {
                f"{agent} · livekit ({when})": record.data["livekit"],
                f"{agent} · model ({when})": record.data["model"],
            }
        )

    def lines(self, title: str) -> list[str]:
        """One column as text lines, oldest item first; a marked item says how it stands."""
        return [_marked_line(item) for item in self.columns[title]]

    def __repr__(self) -> str:
        blocks = [
            "\n".join(
                [f"{title} ({len(items)} items)", *(f"  {line}" for line in self.lines(title))]
            )
            for title, items in self.columns.items()
        ]
        return "\n\n".join(blocks) or "(no contexts)"

    def _repr_html_(self) -> str:
        columns = []
        for title, items in self.columns.items():
            rows = (
                "".join(
                    f'<div style="{_ROW_STYLE}{_ROW_COLORS.get(_kind(item), "")}'
                    f'{_MARKED if item.get("mark") else ""}">'
                    f"{html.escape(item_line(item))}{_mark_tag(item)}</div>"
                    for item in items
                )
                or f'<div style="{_QUIET}">(empty)</div>'
            )
            columns.append(
                f'<div style="{_COLUMN_STYLE}"><b>{html.escape(title)}</b>'
                f' <span style="{_QUIET}">({len(items)} items)</span>{rows}</div>'
            )
        return (
            f'<div class="na-context-table" style="display:flex;gap:12px">{"".join(columns)}</div>'
        )


def _marked_line(item: Item) -> str:
    mark = item.get("mark")
    return item_line(item) + (f"  <- {MARKS[mark]}" if mark else "")


def _mark_tag(item: Item) -> str:
    mark = item.get("mark")
    return f' <i style="opacity:.75">({html.escape(MARKS[mark])})</i>' if mark else ""


def _kind(item: Item) -> str:
    return str(item.get("role") if item.get("type") == "message" else item.get("type"))


_COLUMN_STYLE = "flex:1;min-width:0;font:12px/1.4 sans-serif"
_ROW_STYLE = "margin-top:3px;padding:2px 6px;border-radius:4px;overflow-wrap:anywhere;"
_QUIET = "color:var(--jp-ui-font-color2, #64748b)"
"""secondary text, in the theme's colour for it (a faded one fell under 4.5:1 on white)"""
_MARKED = ";outline:2px dashed var(--jp-error-color1, #dc2626);outline-offset:-2px"
"""an item one side lacks or holds out of order: the theme's error red"""
# see-through tints of the timeline's mark colors (widgets/views.css): over the page's own
# colour, light under dark text in JupyterLab's light theme and dark under light text in its
# dark theme (opaque light tints left the dark theme's white text unreadable)
_ROW_COLORS = {
    "user": "background:rgba(2,132,199,.16)",
    "assistant": "background:rgba(22,163,74,.16)",
    "function_call": "background:rgba(217,119,6,.18)",
    "function_call_output": "background:rgba(217,119,6,.18)",
}
