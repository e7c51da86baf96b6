"""Tables as text (the terminal) and as HTML (a notebook cell, BenchmarkView): one list of
columns, two renderings, so every place shows the same table in the same words (the bench's
summaries, the phase table).

A table fits its output: a column that says the same in every row is said once in the caption,
a column without any value is left out, and what a reader must know to read a column is said
once under the table.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

R = TypeVar("R")

ABSENT = "-"
"""the cell of a value a row does not have (no truth, no RTT, no successful trial)"""

_STYLE = """<style>
.na-table-box .na-table { border-collapse: collapse; font-variant-numeric: tabular-nums;
  margin: 0; font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color1, #1f2937); }
.na-table-box caption { caption-side: top; text-align: left; padding: 0 0 0.3em 0;
  color: var(--jp-ui-font-color2, #64748b); }
.na-table-box th, .na-table-box td { padding: 0.25em 0.35em; border: none; text-align: right;
  border-bottom: 1px solid var(--jp-border-color2, #e2e8f0); white-space: nowrap; }
.na-table-box th { font-weight: 600; cursor: help; vertical-align: bottom; }
.na-table-box th.na-text, .na-table-box td.na-text { text-align: left; }
.na-table-box th, .na-table-box td.na-text { white-space: normal; }
.na-table-box td.na-wrap { white-space: normal; min-width: 18em; }
.na-table-box .na-table-notes { margin: 0.4em 0 0 0; font-size: 0.85em;
  color: var(--jp-ui-font-color2, #64748b); }
</style>"""
"""scoped to the table's box, and specific enough to win over JupyterLab's rules for output tables;
a notebook output is not a widget: views.css is not there. Headers and words break at their spaces
only when the output is narrower than the table, so it fits without a scroll; numbers never."""


@dataclass(frozen=True)
class Column(Generic[R]):
    """One column: its header, a row's cell, and what it means."""

    key: str
    header: str
    cell: Callable[[R], str]
    meaning: str
    """the header's tooltip"""
    note: str = ""
    """said under the table whenever the column is shown: what a reader needs to read it"""
    words: bool = False
    """flush left; numbers are flush right, so their digits line up"""
    wrap: bool = False
    """sentences (a note): in HTML wrapped to the room the output has, not one long line"""
    fold: str | None = None
    """when every row has the same cell, the caption says it once (with this unit) instead"""
    optional: bool = False
    """left out when no row has a value"""
    color: Callable[[R], str | None] | None = None
    """a colour to mark a row's cell with in HTML (the mode's)"""


@dataclass(frozen=True)
class Table(Sequence[R]):
    """Rows under a title, shown through ``columns``: ``str()`` for a terminal, HTML in a
    notebook; indexing and iterating give the rows themselves."""

    title: str
    columns: tuple[Column[R], ...]
    rows: tuple[R, ...]
    footnotes: tuple[str, ...] = ()
    """said once under the table, after the columns' notes: what cells point at by number
    (``[1]``), so a long reason does not widen its column"""

    @overload
    def __getitem__(self, index: int) -> R: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[R]: ...
    def __getitem__(self, index: int | slice) -> R | Sequence[R]:
        return self.rows[index]

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        return self.to_text()

    def layout(self) -> tuple[str, list[Column[R]], list[list[str]]]:
        """(the caption, the columns shown, each row's cells in them)."""
        cells = {column.key: [column.cell(row) for row in self.rows] for column in self.columns}
        caption, shown = [self.title], []
        for column in self.columns:
            values = cells[column.key]
            if column.fold is not None and self.rows and len(set(values)) == 1:
                if values[0] != ABSENT:  # (an RTT never injected goes without saying)
                    caption.append(f"{column.header} {values[0]}{column.fold}")
            elif not (column.optional and all(value == ABSENT for value in values)):
                shown.append(column)
        rows = [[cells[column.key][i] for column in shown] for i in range(len(self.rows))]
        return " · ".join(caption), shown, rows

    def notes(self) -> list[str]:
        """What the columns shown need explained, one line each, then the footnotes."""
        return [*(column.note for column in self.layout()[1] if column.note), *self.footnotes]

    def to_text(self, *, notes: bool = True) -> str:
        """Fixed-width text: the caption, aligned columns, then the notes."""
        caption, columns, rows = self.layout()
        lines = [[column.header for column in columns], *rows]
        widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
        text = [
            "  ".join(
                cell.ljust(width) if column.words else cell.rjust(width)
                for cell, width, column in zip(line, widths, columns, strict=True)
            ).rstrip()
            for line in lines
        ]
        return "\n".join([caption, *text, *(self.notes() if notes else [])])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """A text frontend's (a console's, a text export's) rendering: the text, not the
        dataclass's fields."""
        printer.text(self.to_text())

    def _repr_html_(self) -> str:
        caption, columns, rows = self.layout()
        head = "".join(
            f'<th class="{_align(c)}" data-key="{c.key}" title="{_e(c.meaning)}">'
            f"{_e(c.header)}</th>"
            for c in columns
        )
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="{_align(c)}" data-key="{c.key}"{_marked(c, row)}>{_e(cell)}</td>'
                for c, cell in zip(columns, cells, strict=True)
            )
            + "</tr>"
            for row, cells in zip(self.rows, rows, strict=True)
        )
        notes = "".join(f"<div>{_lines(note)}</div>" for note in self.notes())
        return (
            f'{_STYLE}<div class="na-table-box"><table class="na-table">'
            f"<caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>"
            + (f'<div class="na-table-notes">{notes}</div>' if notes else "")
            + "</div>"
        )


def number(value: float | None, digits: int = 1, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (``+`` in front if ``signed``), ABSENT for None."""
    if value is None:
        return ABSENT
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _align(column: Column[R]) -> str:
    return ("na-text" if column.words else "na-num") + (" na-wrap" if column.wrap else "")


def _marked(column: Column[R], row: R) -> str:
    color = column.color(row) if column.color else None
    return f' style="border-left: 0.4em solid {_e(color)}"' if color else ""


def _lines(text: str) -> str:
    """``text`` as HTML, its lines kept apart (the phase table's note: a phase a line)."""
    return "<br/>".join(_e(line) for line in text.splitlines())


def _e(text: str) -> str:
    return html.escape(text, quote=True)
