"""ContextTable: chat contexts side by side, a column each, as a static HTML/text display.

What each agent's model is given at a moment (``ContextTable.at(trace, t)``), or any contexts
one wants to compare (``ContextTable({"copied": items, "empty": other})``). Items are the
trace's (``describe_item`` dicts); nothing live, so it prints the same in a saved notebook.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..trace import Trace

Item = Mapping[str, Any]


def item_line(item: Item) -> str:
    """``user: Hello!``, ``call transfer_to_weather: {}``, ``output get_weather: Sunny``."""
    kind = item.get("type")
    if kind == "message":
        who = str(item.get("role", "?"))
    elif kind == "function_call":
        who = f"call {item.get('name')}"
    else:
        who = f"output {item.get('name')}"
    return f"{who}: {item.get('text', '')}"


class ContextTable:
    """Chat contexts in columns; a column's title says whose and how many items."""

    def __init__(self, columns: Mapping[str, Sequence[Item]]) -> None:
        self.columns = {title: list(items) for title, items in columns.items()}

    @classmethod
    def at(cls, trace: Trace, t: float | None = None) -> ContextTable:
        """Each agent's chat context at ``t`` seconds into the trace (default: now)."""
        return cls(trace.contexts_at(t))

    def lines(self, title: str) -> list[str]:
        """One column as text lines, oldest item first."""
        return [item_line(item) for item in self.columns[title]]

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
                    f'<div style="{_ROW_STYLE}{_ROW_COLORS.get(_kind(item), "")}">'
                    f"{html.escape(item_line(item))}</div>"
                    for item in items
                )
                or '<div style="opacity:.6">(empty)</div>'
            )
            columns.append(
                f'<div style="{_COLUMN_STYLE}"><b>{html.escape(title)}</b>'
                f' <span style="opacity:.6">({len(items)} items)</span>{rows}</div>'
            )
        return (
            f'<div class="na-context-table" style="display:flex;gap:12px">{"".join(columns)}</div>'
        )


def _kind(item: Item) -> str:
    return str(item.get("role") if item.get("type") == "message" else item.get("type"))


_COLUMN_STYLE = "flex:1;min-width:0;font:12px/1.4 sans-serif"
_ROW_STYLE = "margin-top:3px;padding:2px 6px;border-radius:4px;overflow-wrap:anywhere;"
# light tints of the timeline's mark colors (widgets/views.css)
_ROW_COLORS = {
    "user": "background:#e0f2fe",
    "assistant": "background:#dcfce7",
    "function_call": "background:#fef3c7",
    "function_call_output": "background:#fef3c7",
}
