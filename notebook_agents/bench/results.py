"""Benchmark results: every trial with its configuration, versions and machine; JSON and CSV.

A results file names its format on its first key, so an unrelated, truncated or newer file is
refused with an error that says which and what to do, instead of half-loading.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._records import FieldError, arms, build, fields_of, not_utf8, value
from ..analysis.phases.names import HANDOFF_PHASES
from ..errors import NotebookAgentsError
from ..modes import ContextMode, SessionMode, mode_label

FORMAT = "notebook-agents.bench"
FORMAT_VERSION = 5
"""5: a trial names what livekit warned during it that bears on the handoff
(``livekit_warned``, ``LIVEKIT_WARNINGS``' names). 4: a trial names its provider, and its
session and context are what ran, beside what was asked (``asked_session``,
``asked_context``) and why they differ (``reason``); the config may name your agents and the
providers. 3: a trial may hold its handoff's phases (``--phases``);
2: the session mode is named as in the trace (``reused``), version 1 said ``reuse``.
Every earlier version loads."""

Level = Literal["agent", "session", "cascaded"]
Modality = Literal["text", "audio"]

TIMINGS = ("handoff_ms", "update_ms", "reply_ms", "first_text_ms", "first_audio_ms")
TIMING_NAMES = {
    "handoff_ms": "handoff → B's on_enter",
    "update_ms": "B's session bring-up",
    "reply_ms": "handoff → B's reply starts",
    "first_text_ms": "handoff → B's first text",
    "first_audio_ms": "handoff → B's first audio",
}
"""what each timing measures, in words, for titles, captions and axes; the handoff is t0, the
moment A's tool returns B"""
TRUTHS = ("truth_handoff_ms", "truth_reply_ms", "truth_first_audio_ms")


@dataclass
class PhaseTiming:
    """One phase of a trial's handoff (``HANDOFF_PHASES`` names them), in milliseconds."""

    ms: float
    truth_ms: float | None = None
    """the network's share of it, from the emulator's model"""
    livekit_ms: float | None = None
    """livekit's own figure for it (its span's duration, the connect's ``acquire_time``...)"""
    critical: bool = True
    """on the handoff's critical path; else it ran beside (a set-up during a connect)"""

    @property
    def client_ms(self) -> float | None:
        """The phase beyond the network's share: the client's own time."""
        return None if self.truth_ms is None else self.ms - self.truth_ms


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
    truth_first_audio_ms: float | None = None
    traced: bool = False
    """a Trace was attached during this trial"""
    phases: dict[str, PhaseTiming] = field(default_factory=dict)
    """its handoff's phases by name, in the order they ran (``--phases``; else empty)"""
    provider: str = "openai"
    """whose realtime model ran the trial (``PROVIDERS``)"""
    asked_session: SessionMode | None = None
    """the session mode asked for; ``session`` is the one the trace says ran (None: the same)"""
    asked_context: ContextMode | None = None
    """the context mode asked for; ``context`` is the one the trace says ran (None: the same)"""
    reason: str | None = None
    """why what ran is not what was asked (livekit's reuse conditions, your agent's code)"""
    livekit_warned: list[str] = field(default_factory=list)
    """what livekit warned during the trial that bears on its handoff, by name
    (``bench.livekit_warnings.LIVEKIT_WARNINGS``: the tool_reply_race's 5 s wait...)"""

    @property
    def mode(self) -> str:
        """The mode that ran, as the tables name it: ``reused+copied``."""
        return mode_label(self.session, self.context)

    @property
    def asked_mode(self) -> str:
        """The mode that was asked for."""
        return mode_label(self.asked_session or self.session, self.asked_context or self.context)


_LATER_COLUMNS = ("provider", "asked_session", "asked_context", "reason", "livekit_warned")
"""columns a CSV from before format 5 may lack"""
_LISTS = ("livekit_warned",)
"""fields a CSV cell holds as its items joined by ``;``"""
_TRIAL_FIELDS = tuple(
    f.name for f in dataclasses.fields(Trial) if f.name not in ("phases", "provider")
)
CSV_COLUMNS = ("provider", *_TRIAL_FIELDS[:3], "mode", *_TRIAL_FIELDS[3:])
"""a trial's fields, its provider first and, after its session and context, the mode that ran
as the tables name it (``cascaded+copied``), to pivot on; derived, so loading ignores it. A
result with phases has four more columns per phase after these (``phase_columns``)."""
_PHASE_FIELDS = tuple(f.name for f in dataclasses.fields(PhaseTiming))
_PHASE_PREFIX = "phase_"


def phase_column(phase: str, name: str) -> str:
    """The CSV column of ``phase``'s field ``name``: ``phase_drain_truth_ms``."""
    return f"{_PHASE_PREFIX}{phase}_{name}"


def phase_names(trials: Iterable[Trial]) -> list[str]:
    """The phases the trials hold, in ``HANDOFF_PHASES``' order (others after, as found)."""
    found = dict.fromkeys(name for trial in trials for name in trial.phases)
    return [name for name in HANDOFF_PHASES if name in found] + [
        name for name in found if name not in HANDOFF_PHASES
    ]


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
    model: str | None = None
    """the realtime model's name; None: each provider's default (OpenAI: gpt-realtime)"""
    connect_rtts: float = 3.0
    traced: bool = False
    modes: list[str] | None = None
    """only these modes (``"reused+copied"``, ``"cascaded+empty"``...); None: all of a level"""
    modality: Modality = "text"
    """what B's realtime reply is: ``text``, or ``audio`` (speech, paced as it plays), which
    gives each trial its ``first_audio_ms``"""
    phases: bool = False
    """split each agent-level trial's handoff into its phases (a Trace attached to each)"""
    providers: list[str] = field(default_factory=lambda: ["openai"])
    """whose realtime models to measure, each against the emulator (``PROVIDERS``)"""
    agents: Any = None
    """your agents instead of the bench's pair: a ``YourAgents`` (A's class and the trigger)
    or a ``YourServer``; a saved result keeps their name"""

    def __post_init__(self) -> None:
        """Refuse a run that cannot work: a trial needs time and must end, and at least one."""
        if not 0 < self.timeout_s < math.inf:
            raise FieldError(
                f"found {self.timeout_s!r}, expected seconds > 0 and finite", ("timeout_s",)
            )
        if self.trials < 1:
            raise FieldError(f"found {self.trials!r}, expected at least 1 trial", ("trials",))
        if self.warmup < 0:
            raise FieldError(f"found {self.warmup!r}, expected 0 or more", ("warmup",))


@dataclass
class BenchmarkResult:
    config: BenchmarkConfig
    trials: list[Trial] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    started: str = ""
    """ISO 8601 start time"""
    duration_s: float = 0.0

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
            "config": _config_record(self.config),
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
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise ResultsFileError(path, f"is {not_utf8(e)}; is this a results file?") from None
        except OSError as e:
            raise ResultsFileError(path, f"cannot be read ({e})") from None
        except json.JSONDecodeError as e:
            raise ResultsFileError(path, f"is not JSON ({e.msg} at line {e.lineno})") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | Path = "<dict>") -> BenchmarkResult:
        """A result from ``to_dict``'s form; ResultsFileError names a field that is wrong."""
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
        fields = {k: v for k, v in data.items() if k not in ("format", "format_version")}
        if version < 2:
            fields = _renamed_reuse(fields)
        try:
            if "trials" not in fields:  # every saved result lists them: this one was cut short
                raise FieldError("missing, expected a list", ("trials",))
            return build(cls, fields)
        except FieldError as e:
            raise ResultsFileError(source, f"is invalid at {e}") from None

    # -- CSV -------------------------------------------------------------------------------

    def save_csv(self, path: str | Path) -> Path:
        """One row per trial; empty cells for absent timings, and for a phase a trial lacks."""
        path = Path(path)
        phases = phase_names(self.trials)
        columns = [phase_column(p, name) for p in phases for name in _PHASE_FIELDS]
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=[*CSV_COLUMNS, *columns])
            writer.writeheader()
            for trial in self.trials:
                row = {k: getattr(trial, k) for k in ("provider", *_TRIAL_FIELDS)}
                row["mode"] = trial.mode
                for name in _LISTS:
                    row[name] = ";".join(row[name])
                for phase, timing in trial.phases.items():
                    for name in _PHASE_FIELDS:
                        row[phase_column(phase, name)] = getattr(timing, name)
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return path

    @staticmethod
    def load_csv(path: str | Path) -> list[Trial]:
        """The trials of a CSV written by ``save_csv`` (the CSV carries no config)."""
        path = Path(path)
        try:
            with path.open(newline="", encoding="utf-8") as rows:
                return _trials_from_csv(path, csv.DictReader(rows))
        except UnicodeDecodeError as e:
            raise ResultsFileError(path, f"is {not_utf8(e)}; is this a results CSV?") from None
        except csv.Error as e:
            raise ResultsFileError(path, f"is not CSV ({e})") from None


def _config_record(config: BenchmarkConfig) -> dict[str, Any]:
    """The config as JSON keeps it: your agents by their name (code is not data)."""
    agents = config.agents
    record = dataclasses.asdict(dataclasses.replace(config, agents=None))
    record["agents"] = agents if agents is None or isinstance(agents, str) else agents.name
    return record


def _renamed_reuse(fields: dict[str, Any]) -> dict[str, Any]:
    """A version-1 result with its session mode ``reuse`` named ``reused``, as it is now."""

    def renamed(value: Any) -> Any:
        if value == "reuse":
            return "reused"
        return value.replace("reuse+", "reused+") if isinstance(value, str) else value

    trials = fields.get("trials")
    if isinstance(trials, list):
        fields["trials"] = [
            {**t, "session": renamed(t.get("session"))} if isinstance(t, dict) else t
            for t in trials
        ]
    config = fields.get("config")
    if isinstance(config, dict) and isinstance(config.get("modes"), list):
        fields["config"] = {**config, "modes": [renamed(m) for m in config["modes"]]}
    return fields


class BenchmarkConfigError(NotebookAgentsError, ValueError):
    """A benchmark that cannot run as asked, refused before any trial starts: a command-line
    flag the bench cannot read, a config whose parts do not go together (a provider, level
    and target), your agents that cannot be loaded. The message names the flag or field and
    the fix."""


class ResultsFileError(NotebookAgentsError, ValueError):
    """A results file that cannot be used: names the file and what is wrong with it."""

    def __init__(self, source: str | Path, problem: str) -> None:
        super().__init__(f"{source} {problem}")


def _trials_from_csv(path: Path, reader: csv.DictReader[str]) -> list[Trial]:
    missing = set(_TRIAL_FIELDS) - set(_LATER_COLUMNS) - set(reader.fieldnames or ())
    if missing:
        raise ResultsFileError(path, f"lacks the columns {sorted(missing)}")
    fields = fields_of(Trial)
    trials = []
    for row in reader:
        where = f"line {reader.line_num}"
        if None in row:  # csv puts cells past the header's columns under None
            raise ResultsFileError(path, f"is invalid at {where}: more cells than columns")
        # a short row's absent cells (None) are empty ones; an unknown column is left to
        # build, which names it
        record = {
            name: [part for part in (raw or "").split(";") if part]
            if name in _LISTS
            else _from_cell(raw or "", fields[name].hint if name in fields else Any)
            for name, raw in row.items()
            # mode: derived from session and context; phases: their own columns
            if name != "mode" and not name.startswith(_PHASE_PREFIX)
        }
        try:
            record["phases"] = _phases_from_cells(row)
            trials.append(build(Trial, record))
        except FieldError as e:
            raise ResultsFileError(path, f"is invalid at {where}, {e}") from None
    return trials


def _phases_from_cells(row: dict[str, str]) -> dict[str, Any]:
    """A row's ``phase_<phase>_<field>`` cells as ``Trial.phases``' record: a phase whose
    cells are all empty is one the trial did not have."""
    cells: dict[str, dict[str, str]] = {}
    for column, raw in row.items():
        if not column.startswith(_PHASE_PREFIX):
            continue
        rest = column.removeprefix(_PHASE_PREFIX)
        # longest first: ``_truth_ms`` before ``_ms``
        name = next(
            (n for n in sorted(_PHASE_FIELDS, key=len, reverse=True) if rest.endswith(f"_{n}")),
            None,
        )
        if name is None:
            raise FieldError(
                f"not a phase column (they end in {', '.join('_' + n for n in _PHASE_FIELDS)})",
                (column,),
            )
        cells.setdefault(rest.removesuffix(f"_{name}"), {})[name] = raw or ""
    fields = fields_of(PhaseTiming)
    phases: dict[str, Any] = {}
    for phase, found in cells.items():
        if any(found.values()):
            phases[phase] = {}
            for name, raw in found.items():
                try:
                    phases[phase][name] = value(
                        _from_cell(raw, fields[name].hint), fields[name].hint, name
                    )
                except FieldError as e:
                    raise FieldError(e.problem, (phase_column(phase, name),)) from None
    return phases


def _from_cell(raw: str, hint: Any) -> Any:
    """A CSV cell as the JSON value it stands for: empty is null where null is allowed, a
    number or boolean where one is wanted; text that does not parse stays text, for ``build``
    to report."""
    if raw == "" and type(None) in arms(hint):
        return None
    for arm in arms(hint):
        if arm is bool and raw in ("True", "False"):  # as save_csv writes them
            return raw == "True"
        if arm in (int, float):
            with contextlib.suppress(ValueError):
                return arm(raw)
    return raw


def timing_title(timing: str) -> str:
    """``"handoff → B's reply starts (reply_ms)"``: the timing in words, and its name in code."""
    name = TIMING_NAMES.get(timing)
    return f"{name} ({timing})" if name else timing


def values(trials: Sequence[Trial], timing: str) -> list[float]:
    """The present values of one timing over ok trials."""
    return [v for t in trials if t.ok and (v := getattr(t, timing)) is not None]
