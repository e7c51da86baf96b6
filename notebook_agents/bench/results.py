"""Benchmark results: every trial with its configuration, versions and machine; JSON and CSV.

A results file names its format on its first key, so an unrelated, truncated or newer file is
refused with an error that says which and what to do, instead of half-loading.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

FORMAT = "notebook-agents.bench"
FORMAT_VERSION = 1

Level = Literal["agent", "session", "cascaded"]
SessionMode = Literal["reuse", "fresh", "none"]
ContextMode = Literal["copied", "empty"]

MODES: tuple[tuple[SessionMode, ContextMode], ...] = (
    ("reuse", "copied"),
    ("reuse", "empty"),
    ("fresh", "copied"),
    ("fresh", "empty"),
)
"""the four realtime modes, in the order tables and plots show them"""

TIMINGS = ("handoff_ms", "update_ms", "reply_ms", "first_text_ms", "first_audio_ms")
TRUTHS = ("truth_handoff_ms", "truth_reply_ms")


@dataclass
class Trial:
    """One handoff, timed from t0 = A's tool returning B. Timings are None where absent."""

    level: Level
    session: SessionMode
    context: ContextMode
    rtt_ms: float | None
    """the injected RTT (emulator), None against a foreign endpoint"""
    history_turns: int
    trial: int
    ok: bool = True
    error: str | None = None
    handoff_ms: float | None = None
    update_ms: float | None = None
    reply_ms: float | None = None
    first_text_ms: float | None = None
    first_audio_ms: float | None = None
    truth_handoff_ms: float | None = None
    truth_reply_ms: float | None = None
    traced: bool = False
    """a Trace was attached during this trial"""

    @property
    def mode(self) -> str:
        return mode_label(self.session, self.context)


CSV_COLUMNS = tuple(f.name for f in dataclasses.fields(Trial))


def mode_label(session: str, context: str) -> str:
    """``"reuse+copied"``."""
    return f"{session}+{context}"


@dataclass
class BenchmarkConfig:
    """What was asked for: the grid of trials and where they ran."""

    levels: list[Level] = field(default_factory=lambda: ["agent"])
    rtts_ms: list[float] = field(default_factory=lambda: [0.0, 20.0, 100.0])
    history_turns: list[int] = field(default_factory=lambda: [10])
    trials: int = 20
    warmup: int = 1
    timeout_s: float = 30.0
    target: str = "emulator"
    """"emulator" (run as its own process) or the base_url of an OpenAI-compatible service"""
    model: str = "gpt-realtime"
    connect_rtts: float = 3.0
    traced: bool = False
    modes: list[str] | None = None
    """only these modes (``"reuse+copied"``, ...); None: every mode of each level"""


@dataclass
class BenchmarkResult:
    config: BenchmarkConfig
    trials: list[Trial] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    """ISO 8601 start time"""
    duration_s: float = 0.0

    def ok_trials(self) -> list[Trial]:
        return [t for t in self.trials if t.ok]

    def failed_trials(self) -> list[Trial]:
        return [t for t in self.trials if not t.ok]

    def with_trials(self, trials: Iterable[Trial]) -> BenchmarkResult:
        """The same run restricted to ``trials`` (e.g. only the traced ones)."""
        return dataclasses.replace(self, trials=list(trials))

    def split_traced(self) -> tuple[BenchmarkResult, BenchmarkResult]:
        """(without a Trace, with one): the two halves of a ``traced`` run."""
        return (
            self.with_trials(t for t in self.trials if not t.traced),
            self.with_trials(t for t in self.trials if t.traced),
        )

    def select(self, **criteria: Any) -> list[Trial]:
        """Trials whose fields equal ``criteria`` (e.g. ``level="agent", rtt_ms=20``)."""
        return [t for t in self.trials if all(getattr(t, k) == v for k, v in criteria.items())]

    # -- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "config": dataclasses.asdict(self.config),
            "versions": self.versions,
            "machine": self.machine,
            "started": self.started,
            "duration_s": self.duration_s,
            "trials": [dataclasses.asdict(t) for t in self.trials],
        }

    def save_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return path

    @classmethod
    def load_json(cls, path: str | Path) -> BenchmarkResult:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError) as e:
            raise ResultsFileError(path, f"cannot be read ({e})") from None
        except json.JSONDecodeError as e:
            raise ResultsFileError(path, f"is not JSON ({e.msg} at line {e.lineno})") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | Path = "<dict>") -> BenchmarkResult:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ResultsFileError(
                source, f"is not a notebook-agents benchmark result (no format {FORMAT!r})"
            )
        version = data.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise ResultsFileError(
                source,
                f"has format version {version!r}, newer than this notebook-agents reads "
                f"({FORMAT_VERSION}): upgrade notebook-agents to load it",
            )
        try:
            config = BenchmarkConfig(**data["config"])
            trials = [_trial_from(record) for record in data["trials"]]
            return cls(
                config=config,
                trials=trials,
                versions=dict(data.get("versions", {})),
                machine=dict(data.get("machine", {})),
                started=str(data.get("started", "")),
                duration_s=float(data.get("duration_s", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsFileError(source, f"is malformed ({type(e).__name__}: {e})") from None

    # -- CSV -------------------------------------------------------------------------------

    def save_csv(self, path: str | Path) -> Path:
        """One row per trial; empty cells for absent timings."""
        path = Path(path)
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for trial in self.trials:
                row = dataclasses.asdict(trial)
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return path

    @staticmethod
    def load_csv(path: str | Path) -> list[Trial]:
        """The trials of a CSV written by ``save_csv`` (the CSV carries no config)."""
        path = Path(path)
        with path.open(newline="") as rows:
            reader = csv.DictReader(rows)
            missing = set(CSV_COLUMNS) - set(reader.fieldnames or ())
            if missing:
                raise ResultsFileError(path, f"lacks the columns {sorted(missing)}")
            try:
                return [_trial_from(_parse_row(row)) for row in reader]
            except (TypeError, ValueError) as e:
                raise ResultsFileError(path, f"has a malformed row ({e})") from None


class ResultsFileError(ValueError):
    """A results file that cannot be used: names the file and what is wrong with it."""

    def __init__(self, source: str | Path, problem: str) -> None:
        super().__init__(f"{source} {problem}")


def _trial_from(record: Any) -> Trial:
    if not isinstance(record, dict):
        raise TypeError(f"a trial must be an object, not {type(record).__name__}")
    trial = Trial(**record)
    for name in (*TIMINGS, *TRUTHS):
        value = getattr(trial, name)
        if value is not None and (not isinstance(value, int | float) or math.isnan(value)):
            raise ValueError(f"{name}={value!r} is not a number")
    return trial


def _parse_row(row: dict[str, str]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for name, raw in row.items():
        if name in (*TIMINGS, *TRUTHS, "rtt_ms"):
            parsed[name] = float(raw) if raw != "" else None
        elif name in ("history_turns", "trial"):
            parsed[name] = int(raw)
        elif name in ("ok", "traced"):
            parsed[name] = raw == "True"
        elif name == "error":
            parsed[name] = raw or None
        else:
            parsed[name] = raw
    return parsed


def values(trials: Sequence[Trial], timing: str) -> list[float]:
    """The present values of one timing over ok trials."""
    return [v for t in trials if t.ok and (v := getattr(t, timing)) is not None]
