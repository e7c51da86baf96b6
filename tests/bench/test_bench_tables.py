"""Benchmark tables: the same columns as text and as HTML, fitted to what the rows hold."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from html import escape
from typing import Any

import IPython.lib.pretty

from notebook_agents._table import Column, Table
from notebook_agents.bench.livekit_warnings import warning_note
from notebook_agents.bench.stats import ModeSummary, compare, summary_table
from notebook_agents.modes import MODE_COLORS, ContextMode
from tests.bench.test_bench_stats import latencies, result_of, trials_for


def html_of(table: Table[Any]) -> ET.Element:
    """The table's HTML as an element tree (it is well-formed XML too)."""
    return ET.fromstring(f"<root>{table._repr_html_()}</root>")


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


def two_rtts() -> Table[ModeSummary]:
    """reused+copied at RTT 0 and 20 with truth, and fresh+copied at 20 (one failure)."""
    base = latencies(20, seed=13)
    trials = trials_for(base, rtt=0.0, truth=0.0)
    trials += trials_for([v + 40 for v in base], rtt=20.0, truth=40.0, failed=1)
    trials += trials_for([v + 100 for v in base], session="fresh", rtt=20.0, truth=100.0)
    return summary_table(result_of(trials))


def test_text_has_a_row_per_group_and_aligned_columns() -> None:
    table = two_rtts()
    caption, header, *lines = table.to_text(notes=False).splitlines()
    assert caption.startswith("handoff → B's reply starts (reply_ms), ms")
    assert header.split() == [
        "mode", "RTT", "n", "median", "p90", "p95", "IQR", "95%", "CI", "truth", "excess",
        "in", "RTTs", "vs", "RTT", "0", "failed",
    ]  # fmt: skip
    assert len(lines) == len(table) == 3
    assert len({len(line) for line in [header, *lines]}) == 1
    assert lines[1].split()[:2] == ["reused+copied", "20"] and lines[1].split()[-1] == "1"
    assert lines[2].split()[:2] == ["fresh+copied", "20"] and lines[2].split()[-1] == "0"


def test_a_text_frontend_shows_the_text_not_the_fields() -> None:
    """A console (jupyter console, a text export) prints IPython's plain-text rendering; it
    was the dataclass's repr, its rows' fields and all."""
    table = two_rtts()
    assert IPython.lib.pretty.pretty(table) == table.to_text()


def test_a_column_the_same_in_every_row_is_said_once_in_the_caption() -> None:
    table = two_rtts()
    caption = table.to_text().splitlines()[0]
    assert caption.endswith(" · provider openai · level agent · history 10 turns")
    several = result_of(trials_for([50.0], history=0) + trials_for([60.0], history=10))
    assert "history" in summary_table(several).to_text().splitlines()[1].split()


def test_columns_without_any_value_are_left_out_with_their_notes() -> None:
    foreign = summary_table(result_of(trials_for(latencies(10, seed=8), rtt=None)))
    text = foreign.to_text()
    for absent in ("truth", "excess", "RTTs", "vs RTT 0", "RTT"):
        assert absent not in text
    assert [note.split(":")[0] for note in foreign.notes()] == ["95% CI"]


def test_notes_say_what_the_ci_and_vs_rtt_0_are() -> None:
    notes = two_rtts().notes()
    assert [note.split(":")[0] for note in notes] == ["95% CI", "truth", "excess", "vs RTT 0"]
    assert "bootstrap 95% confidence interval" in notes[0]
    assert "excess at RTT 0" in notes[3] and "beyond its truth" in notes[3]
    assert two_rtts().to_text().endswith("\n".join(notes))


def test_html_has_the_texts_cells_with_meanings_and_mode_colours() -> None:
    table = two_rtts()
    root = html_of(table)
    caption, columns, rows = table.layout()
    (html_table,) = root.iter("table")
    assert text_of(next(html_table.iter("caption"))) == caption
    heads = list(html_table.iter("th"))
    assert [text_of(th) for th in heads] == [column.header for column in columns]
    assert all(th.get("title") for th in heads)  # each header says what it means on hover
    cells = [[text_of(td) for td in tr.iter("td")] for tr in html_table.iter("tr")][1:]
    assert cells == rows
    modes = [td for td in html_table.iter("td") if td.get("data-key") == "mode"]
    assert [td.get("style") for td in modes] == [
        f"border-left: 0.4em solid {MODE_COLORS[text_of(td)]}" for td in modes
    ]
    notes = [text_of(div) for div in root.iter("div") if div.get("class") == "na-table-notes"]
    assert notes == ["".join(table.notes())]


def test_a_notes_lines_stay_lines_in_html() -> None:
    """The phase table's note names each phase on a line of its own, as the text shows it;
    in HTML the lines ran together into one paragraph before."""
    lines = ["phase: what happened", "  drain: the tool's output synced", "  connect: a websocket"]
    column = Column("phase", "phase", str, "the phase", note="\n".join(lines), words=True)
    table = Table("phases", (column,), ("drain",))
    assert table.to_text().splitlines()[-3:] == lines
    (notes,) = [div for div in html_of(table).iter("div") if div.get("class") == "na-table-notes"]
    (note,) = list(notes)
    assert [note.text, *(br.tail for br in note.iter("br"))] == lines


def test_the_cascaded_row_is_cascaded_in_text_and_html() -> None:
    table = summary_table(result_of(trials_for([40.0, 41.0], level="cascaded", session="none")))
    assert table[0].mode == "cascaded+copied"
    for shown in (table.to_text(), table._repr_html_()):
        assert "cascaded+copied" in shown and "none+" not in shown


def test_comparison_names_its_two_sides() -> None:
    data = latencies(50, seed=10)
    a = result_of(trials_for(data))
    b = result_of(trials_for([2 * v for v in data]))
    table = compare(a, b, names=("untraced", "traced"))
    caption, header, line = table.to_text(notes=False).splitlines()
    assert caption.endswith(
        ": untraced vs traced · provider openai · level agent · RTT 20 ms · history 10 turns"
    )
    assert header.split() == ["mode", "untraced", "traced", "ratio", "95%", "CI"]
    assert line.split()[0] == "reused+copied" and line.split()[3] == "2.000"
    assert table.notes() == ["95% CI: the ratio's bootstrap 95% confidence interval"]


def test_trials_group_by_the_mode_that_ran_and_say_which_was_asked_and_why() -> None:
    ran = trials_for([130.0, 131.0], session="fresh", context="copied")
    asked = [
        dataclasses.replace(t, asked_session="reused", asked_context="copied", reason="B pins it")
        for t in trials_for([132.0], session="fresh", context="copied")
    ]
    table = summary_table(result_of(ran + asked))
    (row,) = table
    assert row.mode == "fresh+copied" and row.summary is not None and row.summary.n == 3
    assert row.asked == "reused+copied ×1 [1]"
    text = table.to_text()
    assert "asked" in text.splitlines()[1].split() and "reused+copied ×1 [1]" in text
    assert text.endswith("\n[1] B pins it")
    # a table whose trials all ran as asked has no such column
    assert "asked" not in summary_table(result_of(ran)).to_text().splitlines()[1].split()


LONG = (
    "the model cannot change a live session's tools (capabilities.mutable_tools is False) "
    "and B's tools are not A's tool objects"
)


def asked_reused(session: str, context: ContextMode, reason: str, n: int = 2) -> list[Any]:
    return [
        dataclasses.replace(t, asked_session="reused", asked_context=context, reason=reason)
        for t in trials_for([40.0 + i for i in range(n)], session=session, context=context)
    ]


def test_a_long_reason_is_said_once_under_the_table_not_in_its_column() -> None:
    """The asked column held each reason in full: ~150 characters wide, the text table ~300,
    pushing "vs RTT 0" and "failed" out of sight. Now its cells point at numbered notes."""
    trials = [
        *asked_reused("fresh", "copied", LONG),
        *asked_reused("fresh", "empty", LONG),
        *[dataclasses.replace(t, provider="gemini") for t in asked_reused("fresh", "copied", "X")],
    ]
    table = summary_table(result_of(trials))
    assert [(row.provider, row.asked) for row in table] == [
        ("gemini", "reused+copied ×2 [1]"),  # numbered in table order
        ("openai", "reused+copied ×2 [2]"),
        ("openai", "reused+empty ×2 [2]"),
    ]
    text = table.to_text()
    assert max(len(line) for line in text.splitlines()[1:4]) < 110
    assert text.count(LONG) == 1
    assert table.notes()[-2:] == ["[1] X", f"[2] {LONG}"]
    html = table._repr_html_()
    assert html.count(escape(LONG)) == 1
    cells = [text_of(td) for td in html_of(table).iter("td") if td.get("data-key") == "asked"]
    assert cells == [row.asked for row in table]


def test_every_table_of_a_result_numbers_a_reason_alike() -> None:
    """The CLI prints the tables' notes once under them all: one reason, one number."""
    trials = [*asked_reused("fresh", "copied", "B pins it"), *asked_reused("fresh", "empty", LONG)]
    result = result_of(trials)
    notes = [summary_table(result, timing).notes()[-2:] for timing in ("reply_ms", "handoff_ms")]
    assert notes[0] == notes[1] == ["[1] B pins it", f"[2] {LONG}"]
    assert compare(result, result).footnotes == tuple(notes[0])


def test_each_provider_has_its_own_rows() -> None:
    openai = trials_for([50.0])
    gemini = [dataclasses.replace(t, provider="gemini") for t in trials_for([70.0])]
    table = summary_table(result_of(openai + gemini))
    assert [(row.provider, row.summary.median if row.summary else None) for row in table] == [
        ("gemini", 70.0),
        ("openai", 50.0),
    ]
    assert "provider" in table.to_text().splitlines()[1].split()


def test_what_livekit_warned_is_a_short_cell_and_its_sentence_a_note() -> None:
    """The livekit warned column held each warning's sentence in full: ~200 characters a row,
    the text table ~500 wide and the HTML past a notebook's output. Now its cells name the
    warning, on how many, and point at a note numbered with the asked column's."""
    reused = [
        dataclasses.replace(t, livekit_warned=["tool_answered", "turns_kept"])
        for t in trials_for([40.0, 41.0])
    ]
    race = [
        dataclasses.replace(t, livekit_warned=["tool_reply_timeout"])
        for t in trials_for([50.0, 51.0], session="fresh", context="empty")
    ]
    gemini = [dataclasses.replace(t, provider="gemini") for t in reused + race]
    table = summary_table(result_of(gemini))
    assert [row.warned for row in table] == [
        "tool_answered 2/2 [1]; turns_kept 2/2 [2]",
        "tool_reply_timeout 2/2 [3]",
    ]
    text = table.to_text()
    assert max(len(line) for line in text.splitlines()[1:4]) < 110
    sentence = warning_note("turns_kept")
    assert "B's empty context is livekit's view only" in sentence
    assert text.count(sentence) == 1 and f"[2] {sentence}" in table.notes()
    assert table._repr_html_().count(escape(sentence)) == 1
    cells = [text_of(td) for td in html_of(table).iter("td") if td.get("data-key") == "warned"]
    assert cells == [row.warned for row in table]


def test_warnings_and_reasons_are_numbered_alike_in_every_table_of_a_result() -> None:
    """The CLI says each note once under all the tables: a warning's number and a reason's
    are one sequence, the same in the summary of every timing and the comparison."""
    asked = asked_reused("fresh", "copied", LONG)
    race = [
        dataclasses.replace(t, livekit_warned=["tool_reply_timeout"])
        for t in trials_for([50.0, 51.0], session="fresh", context="empty")
    ]
    result = result_of(asked + race)
    table = summary_table(result)
    assert [(row.asked, row.warned) for row in table] == [
        ("reused+copied ×2 [1]", None),
        (None, "tool_reply_timeout 2/2 [2]"),
    ]
    assert table.footnotes == (f"[1] {LONG}", f"[2] {warning_note('tool_reply_timeout')}")
    assert summary_table(result, "handoff_ms").footnotes == table.footnotes
    assert compare(result, result).footnotes == (f"[1] {LONG}",)
