"""Benchmark results files: JSON and CSV round trips, and clear errors for unusable files."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from notebook_agents.bench.results import (
    FORMAT_VERSION,
    BenchmarkConfig,
    BenchmarkResult,
    PhaseTiming,
    ResultsFileError,
    Trial,
)
from notebook_agents.modes import REALTIME_MODES

REQUIRED_CSV_COLUMNS = {
    "session", "context", "level", "rtt_ms", "history_turns", "trial", "ok", "error",
    "handoff_ms", "update_ms", "reply_ms", "first_text_ms", "truth_handoff_ms", "truth_reply_ms",
}  # fmt: skip


def make_trials() -> list[Trial]:
    """Every mode at two RTTs, a foreign-target trial, a cascaded one and two failed ones."""
    trials = [
        Trial(
            "agent", session, context, rtt, 10, i,
            handoff_ms=2 * rtt + 0.123 * i, update_ms=rtt + 0.5, reply_ms=3 * rtt + 1.25 + i / 7,
            first_text_ms=3 * rtt + 2.0, truth_handoff_ms=2 * rtt, truth_reply_ms=3 * rtt,
        )
        for rtt in (0.0, 20.0)
        for session, context in REALTIME_MODES
        for i in range(3)
    ]  # fmt: skip
    for trial in trials[:2]:  # two split with --phases, the second with a phase more
        trial.phases = {
            "drain": PhaseTiming(21.5, truth_ms=20.0, livekit_ms=21.75),
            "session_update": PhaseTiming(1.25, truth_ms=0.0, critical=False),
            "reply_created": PhaseTiming(20.5, truth_ms=20.0),
        }
    trials[1].phases = {"connect": PhaseTiming(63.0, truth_ms=60.0), **trials[1].phases}
    trials.append(Trial("agent", "reused", "copied", None, 10, 0, reply_ms=87.5, traced=True))
    trials.append(Trial("cascaded", "none", "empty", 20.0, 0, 0, reply_ms=45.0, first_text_ms=45.0))
    trials.append(Trial("agent", "fresh", "copied", 20.0, 10, 3, ok=False, error="timeout: 30 s"))
    trials.append(
        Trial("session", "reused", "empty", 100.0, 200, 1, ok=False, error='closed,\n"code" 1006')
    )
    return trials


def make_result() -> BenchmarkResult:
    return BenchmarkResult(
        config=BenchmarkConfig(rtts_ms=[0.0, 20.0], trials=3, history_turns=[0, 10, 200]),
        trials=make_trials(),
        versions={"livekit-agents": "1.8.9", "python": "3.11.9"},
        machine={"hostname": "bench-box", "processor": "Some CPU", "cpus": 8},
        started="2026-11-22T04:00:00+00:00",
        duration_s=12.5,
    )


def test_json_round_trip_is_equal(tmp_path: Path) -> None:
    result = make_result()
    loaded = BenchmarkResult.load_json(result.save_json(tmp_path / "results.json"))
    assert loaded == result


def test_a_version_1_result_loads_with_the_session_mode_named_as_now() -> None:
    """Version 1 named the shared realtime session ``reuse``; the trace and views say ``reused``."""
    old = make_result().to_dict()
    old["format_version"] = 1
    old["config"]["modes"] = ["reuse+copied", "fresh+empty"]
    for trial in old["trials"]:
        trial["session"] = "reuse" if trial["session"] == "reused" else trial["session"]
    loaded = BenchmarkResult.from_dict(old)
    assert loaded.trials == make_trials()
    assert loaded.config.modes == ["reused+copied", "fresh+empty"]
    assert {t.mode for t in loaded.trials} >= {"reused+copied", "cascaded+empty"}


def test_a_version_2_result_without_phases_loads() -> None:
    old = make_result().to_dict()
    old["format_version"] = 2
    del old["config"]["phases"]
    for trial in old["trials"]:
        del trial["phases"]
    loaded = BenchmarkResult.from_dict(old)
    assert all(trial.phases == {} for trial in loaded.trials)
    assert [t.reply_ms for t in loaded.trials] == [t.reply_ms for t in make_trials()]


def test_csv_has_four_columns_per_phase_in_the_order_phases_run(tmp_path: Path) -> None:
    path = make_result().save_csv(tmp_path / "results.csv")
    with path.open(newline="") as f:
        header = next(csv.reader(f))
    phases = [c for c in header if c.startswith("phase_")]
    assert phases[:4] == [
        "phase_drain_ms", "phase_drain_truth_ms", "phase_drain_livekit_ms",
        "phase_drain_critical",
    ]  # fmt: skip
    assert [c.removesuffix("_ms") for c in phases[::4]] == [
        "phase_drain", "phase_connect", "phase_session_update", "phase_reply_created",
    ]  # fmt: skip


def test_a_csv_without_phase_columns_loads(tmp_path: Path) -> None:
    """A results.csv written before --phases existed."""
    path = make_result().save_csv(tmp_path / "results.csv")
    _rewrite_csv(
        path,
        lambda rows: [{k: v for k, v in r.items() if not k.startswith("phase_")} for r in rows],
    )
    loaded = BenchmarkResult.load_csv(path)
    assert all(trial.phases == {} for trial in loaded)
    assert [t.reply_ms for t in loaded] == [t.reply_ms for t in make_trials()]


def test_csv_round_trip_keeps_every_trial(tmp_path: Path) -> None:
    result = make_result()
    assert BenchmarkResult.load_csv(result.save_csv(tmp_path / "results.csv")) == result.trials


def test_csv_has_the_promised_columns(tmp_path: Path) -> None:
    path = make_result().save_csv(tmp_path / "results.csv")
    with path.open(newline="") as f:
        header = next(csv.reader(f))
    assert set(header) >= REQUIRED_CSV_COLUMNS


def test_csv_names_each_mode_as_the_tables_do(tmp_path: Path) -> None:
    result = make_result()
    path = result.save_csv(tmp_path / "results.csv")
    with path.open(newline="") as f:
        modes = [row["mode"] for row in csv.DictReader(f)]
    assert modes == [trial.mode for trial in result.trials]
    assert "cascaded+empty" in modes and not any(m.startswith("none") for m in modes)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_failed_trials_round_trip_with_their_error(tmp_path: Path, fmt: str) -> None:
    result = make_result()
    if fmt == "json":
        trials = BenchmarkResult.load_json(result.save_json(tmp_path / "r.json")).trials
    else:
        trials = BenchmarkResult.load_csv(result.save_csv(tmp_path / "r.csv"))
    failed = [(t.ok, t.error, t.reply_ms) for t in trials if not t.ok]
    assert failed == [(False, t.error, None) for t in result.failed_trials()]
    assert all(t.error for t in result.failed_trials())


DELETE = object()


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        pytest.param("format", "someone.else", "not a notebook-agents", id="wrong format"),
        pytest.param("format_version", FORMAT_VERSION + 1, "newer", id="newer format_version"),
        pytest.param("trials", DELETE, "trials", id="no trials"),
        pytest.param("trials.0.level", DELETE, "level", id="trial missing a field"),
        pytest.param("trials.0.reply_ms", float("nan"), "reply_ms", id="NaN timing"),
        pytest.param("trials.0.handoff_ms", "fast", "handoff_ms", id="text timing"),
        pytest.param("trials.0", ["agent"], "trials[0]: found", id="trial not an object"),
    ],
)
def test_unusable_json_is_refused_naming_file_and_problem(
    tmp_path: Path, where: str, value: object, problem: str
) -> None:
    path = damaged_json(tmp_path, where, value)
    with pytest.raises(ResultsFileError) as caught:
        BenchmarkResult.load_json(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


def damaged_json(tmp_path: Path, where: str, value: object) -> Path:
    """A saved result with the value at ``where`` (``"trials.0.level"``) replaced or DELETEd."""
    data = make_result().to_dict()
    # walk the dict and list keys down to the one to damage
    keys: list[Any] = [int(k) if k.isdigit() else k for k in where.split(".")]
    target: Any = data
    for key in keys[:-1]:
        target = target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    path = tmp_path / "results.json"
    # allow_nan: write the NaN a buggy or hand-edited file could hold
    path.write_text(json.dumps(data, allow_nan=True))
    return path


def test_text_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("session,context\nreused,copied\n")
    with pytest.raises(ResultsFileError, match="is not JSON") as caught:
        BenchmarkResult.load_json(path)
    assert str(path) in str(caught.value)


def _rewrite_csv(path: Path, edit: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
    with path.open(newline="") as f:
        rows = edit(list(csv.DictReader(f)))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


CSV_DAMAGE: dict[str, tuple[Callable[[list[dict[str, str]]], list[dict[str, str]]], str]] = {
    "missing column": (
        lambda rows: [{k: v for k, v in r.items() if k != "reply_ms"} for r in rows],
        "reply_ms",
    ),
    "text timing": (lambda rows: [{**r, "reply_ms": "fast"} for r in rows], "line 2, reply_ms"),
    "text trial number": (lambda rows: [{**r, "trial": "first"} for r in rows], "line 2, trial"),
    "unknown column": (lambda rows: [{**r, "colour": "red"} for r in rows], "colour: not a field"),
    "text phase timing": (
        lambda rows: [{**r, "phase_drain_ms": "slow"} for r in rows],
        'line 2, phase_drain_ms: found "slow", expected a finite number',
    ),
    "phase without its time": (
        lambda rows: [{**r, "phase_drain_ms": ""} for r in rows],
        "line 2, phase_drain_ms: found",
    ),
    "unknown phase column": (
        lambda rows: [{**r, "phase_drain_colour": "red"} for r in rows],
        "phase_drain_colour: not a phase column",
    ),
}


@pytest.mark.parametrize("damage", CSV_DAMAGE, ids=list(CSV_DAMAGE))
def test_unusable_csv_is_refused_naming_file_and_problem(tmp_path: Path, damage: str) -> None:
    edit, problem = CSV_DAMAGE[damage]
    path = make_result().save_csv(tmp_path / "results.csv")
    _rewrite_csv(path, edit)
    with pytest.raises(ResultsFileError) as caught:
        BenchmarkResult.load_csv(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("where", "value", "field", "expected"),
    [
        ("trials.0.rtt_ms", "abc", "trials[0].rtt_ms", "a finite number or null"),
        ("trials.1.rtt_ms", float("inf"), "trials[1].rtt_ms", "a finite number or null"),
        ("trials.0.level", "wizard", "trials[0].level", "one of 'agent', 'session', 'cascaded'"),
        ("trials.2.ok", "yes", "trials[2].ok", "true or false"),
        ("trials.0.history_turns", "10", "trials[0].history_turns", "an integer"),
        ("trials.0.trial", 1.5, "trials[0].trial", "an integer"),
        ("trials.0.error", 404, "trials[0].error", "a string or null"),
        ("config.rtts_ms", "0,20", "config.rtts_ms", "a list"),
        ("config.rtts_ms.1", "fast", "config.rtts_ms[1]", "a finite number"),
        ("config.timeout_s", None, "config.timeout_s", "a finite number"),
        ("config.timeout_s", 0, "config.timeout_s", "seconds > 0 and finite"),
        ("config.modes", ["reused+copied", 7], "config.modes[1]", "a string"),
        ("versions", ["1.8.9"], "versions", "an object"),
        ("duration_s", "long", "duration_s", "a finite number"),
        ("started", 2026, "started", "a string"),
        ("trials.0.phases.drain.ms", "slow", "trials[0].phases.drain.ms", "a finite number"),
        ("trials.0.phases", [], "trials[0].phases", "an object"),
    ],
)
def test_wrongly_typed_json_fields_are_refused_naming_the_field(
    tmp_path: Path, where: str, value: object, field: str, expected: str
) -> None:
    path = damaged_json(tmp_path, where, value)
    with pytest.raises(ResultsFileError) as caught:
        BenchmarkResult.load_json(path)
    message = str(caught.value)
    assert message.startswith(f"{path} is invalid at {field}: found ")
    assert f"expected {expected}" in message


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("rtt_ms", "abc", "a finite number or null"),
        ("ok", "maybe", "true or false"),
        ("level", "wizard", "one of 'agent', 'session', 'cascaded'"),
        ("trial", "first", "an integer"),
        ("reply_ms", "nan", "a finite number or null"),
    ],
)
def test_wrongly_typed_csv_cells_are_refused_naming_line_and_column(
    tmp_path: Path, column: str, value: str, expected: str
) -> None:
    path = make_result().save_csv(tmp_path / "results.csv")
    # the header is line 1: the third trial's row is line 4
    _rewrite_csv(
        path, lambda rows: [{**r, column: value} if i == 2 else r for i, r in enumerate(rows)]
    )
    with pytest.raises(ResultsFileError) as caught:
        BenchmarkResult.load_csv(path)
    message = str(caught.value)
    assert message.startswith(f"{path} is invalid at line 4, {column}: found ")
    assert value.lower() in message.lower()  # "nan" is parsed, then refused: found NaN
    assert f"expected {expected}" in message


@pytest.mark.parametrize("suffix", ["json", "csv"])
def test_binary_garbage_is_refused_naming_the_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"results.{suffix}"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00")
    load = BenchmarkResult.load_json if suffix == "json" else BenchmarkResult.load_csv
    with pytest.raises(ResultsFileError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path} ")
    assert "utf-8" in str(caught.value).lower()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout_s", 0.0),
        ("timeout_s", -1.0),
        ("timeout_s", math.inf),
        ("trials", 0),
        ("warmup", -1),
    ],
)
def test_a_config_that_cannot_run_is_refused_naming_the_option(option: str, value: float) -> None:
    options: dict[str, Any] = {option: value}
    with pytest.raises(ValueError, match=rf"^{option}: found "):
        BenchmarkConfig(**options)


def ran_fresh() -> Trial:
    """A trial asked for reused+copied that the trace says ran fresh, on another provider."""
    return Trial(
        "agent", "fresh", "copied", 20.0, 2, 0, reply_ms=130.0, provider="gemini",
        asked_session="reused", asked_context="copied", reason="B pins its own llm (X)",
    )  # fmt: skip


def test_what_was_asked_and_why_it_did_not_run_round_trip(tmp_path: Path) -> None:
    result = make_result()
    result.trials.append(ran_fresh())
    assert BenchmarkResult.load_json(result.save_json(tmp_path / "r.json")) == result
    loaded = BenchmarkResult.load_csv(result.save_csv(tmp_path / "r.csv"))
    assert loaded[-1] == ran_fresh()
    assert (loaded[-1].asked_mode, loaded[-1].mode) == ("reused+copied", "fresh+copied")
    with (tmp_path / "r.csv").open() as rows:
        header = next(csv.reader(rows))
    assert header[:5] == ["provider", "level", "session", "context", "mode"]


def test_a_version_3_result_loads_as_openai_trials_that_ran_as_asked(tmp_path: Path) -> None:
    old = make_result().to_dict()
    old["format_version"] = 3
    for key in ("providers", "agents"):
        del old["config"][key]
    for trial in old["trials"]:
        for key in ("provider", "asked_session", "asked_context", "reason"):
            del trial[key]
    loaded = BenchmarkResult.from_dict(old)
    assert all(t.provider == "openai" and t.asked_mode == t.mode for t in loaded.trials)
    assert loaded.config.providers == ["openai"]
    # and its CSV, without the columns version 4 added
    path = make_result().save_csv(tmp_path / "v3.csv")
    with path.open() as rows:
        table = list(csv.DictReader(rows))
    with path.open("w", newline="") as out:
        kept = [
            c for c in table[0] if c not in ("provider", "asked_session", "asked_context", "reason")
        ]
        writer = csv.DictWriter(out, fieldnames=kept, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(table)
    assert [t.provider for t in BenchmarkResult.load_csv(path)] == ["openai"] * len(table)


def test_what_livekit_warned_round_trips_and_a_version_4_result_loads(tmp_path: Path) -> None:
    result = make_result()
    result.trials[0].livekit_warned = ["tool_reply_timeout", "generation_skipped"]
    assert BenchmarkResult.load_json(result.save_json(tmp_path / "r.json")) == result
    loaded = BenchmarkResult.load_csv(result.save_csv(tmp_path / "r.csv"))
    assert loaded == result.trials
    old = result.to_dict()
    old["format_version"] = 4
    for trial in old["trials"]:
        del trial["livekit_warned"]
    assert all(t.livekit_warned == [] for t in BenchmarkResult.from_dict(old).trials)
    # and its CSV, without the column version 5 added
    path = tmp_path / "r.csv"
    with path.open() as rows:
        table = list(csv.DictReader(rows))
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(
            out, fieldnames=[c for c in table[0] if c != "livekit_warned"], extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(table)
    assert all(t.livekit_warned == [] for t in BenchmarkResult.load_csv(path))
