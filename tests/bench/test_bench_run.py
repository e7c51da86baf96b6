"""The benchmark end to end: real AgentSessions over the real plugin, the emulator as a process."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from notebook_agents.__main__ import main
from notebook_agents.bench import BenchmarkConfig, BenchmarkResult
from notebook_agents.bench.cli import outcome
from notebook_agents.bench.results import Level, Trial
from notebook_agents.bench.run import plan, run_benchmark
from notebook_agents.emulator import Emulator
from notebook_agents.modes import REALTIME_MODES, mode_label
from tests.conftest import API_KEY

REALTIME_LABELS = [mode_label(session, context) for session, context in REALTIME_MODES]


def test_plan_discards_warmup_and_rotates_modes() -> None:
    config = BenchmarkConfig(levels=["agent"], rtts_ms=[0.0], history_turns=[10], trials=3)
    cells = list(plan(config))
    kept = [cell for cell, keep in cells if keep]
    assert len(cells) == 4 * 4 and len(kept) == 4 * 3  # one warm-up round of 4 modes
    firsts = [(kept[i]["session"], kept[i]["context"]) for i in range(0, len(kept), 4)]
    assert len(set(firsts)) == 3  # each round starts with a different mode
    assert Counter((c["session"], c["context"]) for c in kept) == dict.fromkeys(REALTIME_MODES, 3)


@pytest.mark.slow
async def test_every_level_runs_against_the_emulator_with_ground_truth() -> None:
    config = BenchmarkConfig(
        levels=["agent", "session", "cascaded"], rtts_ms=[0.0, 10.0], history_turns=[2], trials=1
    )
    seen: list[int] = []
    result = await run_benchmark(config, progress=lambda done, total, trial: seen.append(done))
    assert seen == list(range(1, 21))  # 2 RTTs x (4 + 4 + 2 modes)
    assert [t.error for t in result.failed_trials()] == []
    for trial in result.trials:
        assert trial.reply_ms is not None and trial.truth_reply_ms is not None
        assert trial.handoff_ms is not None and trial.truth_handoff_ms is not None
        # the network cost is a floor: nothing arrives before its ground truth
        assert trial.reply_ms >= trial.truth_reply_ms
    truth = {t.mode: t.truth_reply_ms or 0.0 for t in result.select(level="agent", rtt_ms=10.0)}
    assert truth["fresh+copied"] > truth["reused+copied"] > 0
    assert result.versions["livekit-agents"].startswith("1.8")
    assert result.machine["cpus"]


@pytest.mark.slow
async def test_the_audio_modality_times_the_first_audio_against_its_truth() -> None:
    config = BenchmarkConfig(
        levels=["agent"], rtts_ms=[20.0], history_turns=[2], trials=1, modality="audio"
    )
    result = await run_benchmark(config)
    assert [t.error for t in result.failed_trials()] == []
    for trial in result.trials:
        assert trial.first_audio_ms is not None and trial.truth_first_audio_ms is not None
        # the caller hears B no sooner than the network allows, and after B's reply started
        assert trial.first_audio_ms >= trial.truth_first_audio_ms
        assert trial.reply_ms is not None and trial.first_audio_ms >= trial.reply_ms
    text_only = await run_benchmark(dataclasses.replace(config, modality="text"))
    assert {t.first_audio_ms for t in text_only.trials} == {None}


@pytest.mark.slow
async def test_failed_trials_are_recorded_never_hang() -> None:
    config = BenchmarkConfig(
        levels=["session"], rtts_ms=[0.0], history_turns=[1], trials=1, warmup=0, timeout_s=15
    )
    # a socket dropped mid-trial, and acks held past the plugin's 5 s timeout
    config.modes = ["fresh+copied"]
    dropped = await run_benchmark(config, emulator_query={"drop_after": 3})
    config.modes = ["reused+copied"]
    delayed = await run_benchmark(config, emulator_query={"ack_delay_ms": 6000})
    for result in (dropped, delayed):
        failed = result.failed_trials()
        assert failed, "a fault must fail its trials"
        assert all(t.error and "timed out after" not in t.error for t in failed)
    assert any("update_chat_ctx timed out" in (t.error or "") for t in delayed.trials)


@pytest.mark.parametrize("level", ["session", "agent"])
async def test_a_foreign_endpoint_has_no_truth(emulator: Emulator, level: Level) -> None:
    """Every level runs against an OpenAI-compatible endpoint of the user's (the agent level
    too, with the gemini extra installed: Gemini's environment is the emulator's only)."""
    config = BenchmarkConfig(
        levels=[level], history_turns=[0], trials=1, warmup=0, target=emulator.base_url()
    )
    result = await run_benchmark(config, api_key=API_KEY)
    assert len(result.trials) == 4 and not result.failed_trials(), result.failed_trials()
    assert all(t.rtt_ms is None and t.truth_reply_ms is None for t in result.trials)
    assert API_KEY not in json.dumps(result.to_dict())


@pytest.mark.slow
def test_cli_writes_results_plots_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["bench", "--rtt", "5", "--trials", "1", "--history", "1"]
    assert main([*argv, "--level", "session,cascaded", "--warmup", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "6 trials" in printed
    # a table per timing, each mode named as everywhere else: the cascaded row too
    tables = [block.strip().splitlines() for block in printed.split("\n\n")]
    captions = [lines[0] for lines in tables if lines[0].startswith("handoff → ")]
    assert captions == [
        "handoff → B's on_enter (handoff_ms), ms · provider openai · RTT 5 ms · history 1 turns",
        "handoff → B's reply starts (reply_ms), ms · provider openai · RTT 5 ms · history 1 turns",
    ]
    for lines in tables[:2]:
        modes = [line.split()[1] for line in lines[2:]]
        assert modes == [*REALTIME_LABELS, "cascaded+copied", "cascaded+empty"]
    assert "none+" not in printed
    assert printed.count("95% CI: the median's bootstrap") == 1  # the notes, once
    result = BenchmarkResult.load_json(out / "results.json")
    assert len(result.trials) == 6
    assert len(BenchmarkResult.load_csv(out / "results.csv")) == 6
    assert list(out.glob("*.png"))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--level", "wizard"], "--level"),
        (["--rtt", "fast"], "--rtt"),
        (["--trials", "0"], "--trials"),
        (["--base-url", "http://127.0.0.1:9/v1"], "API key"),
        (["--phases", "--trace"], "--phases attaches a Trace"),
    ],
)
def test_cli_bad_arguments_name_the_fix(
    argv: list[str],
    needle: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["bench", *argv, "--out", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err


QUICK = ["bench", "--rtt", "0", "--trials", "1", "--history", "1", "--level", "session"]
"""one trial per mode of the cheapest level: a real run that takes a few seconds"""


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon"])
def test_cli_rejects_a_timeout_outside_its_range(
    timeout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*QUICK, "--warmup", "0", "--timeout", timeout, "--out", str(tmp_path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--timeout" in err and "seconds > 0" in err
    assert not list(tmp_path.iterdir())  # refused before anything ran


@pytest.mark.slow
def test_cli_exits_non_zero_when_every_trial_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*QUICK, "--warmup", "0", "--timeout", "0.001", "--out", str(tmp_path)]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "4 trials in" in printed and "all 4 failed: no timing measured" in printed
    assert "timed out after 0.001 s" in printed
    # the failures are still data: the results say why each trial failed
    result = BenchmarkResult.load_json(tmp_path / "results.json")
    assert [t.ok for t in result.trials] == [False] * 4


@pytest.mark.parametrize(
    ("failed", "status", "summary"),
    [
        (0, 0, "4 trials in 2.0 s, none failed"),
        (1, 0, "4 trials in 2.0 s, 1 failed"),  # a partial failure is still a result
        (4, 1, "4 trials in 2.0 s, all 4 failed: no timing measured"),
    ],
)
def test_a_run_fails_only_when_every_trial_failed(failed: int, status: int, summary: str) -> None:
    trials = [Trial("session", s, c, 0.0, 1, 0, reply_ms=1.0) for s, c in REALTIME_MODES]
    for trial in trials[:failed]:
        trial.ok, trial.reply_ms, trial.error = False, None, "boom"
    result = BenchmarkResult(BenchmarkConfig(), trials=trials, duration_s=2.0)
    assert outcome(result) == (summary, status)


@pytest.mark.parametrize("under", ["", "sub/dir"], ids=["a file", "under a file"])
def test_cli_out_on_a_file_is_a_one_line_error(
    under: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "results.txt"
    blocker.write_text("not a directory\n")
    out = blocker / under if under else blocker
    assert main([*QUICK, "--warmup", "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--out {out}" in err and "not a directory" in err


@pytest.mark.slow
def test_cli_phases_split_every_handoff_against_its_truth_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["bench", "--rtt", "0,20", "--trials", "2", "--history", "1", "--warmup", "0"]
    assert main([*argv, "--level", "agent,session", "--phases", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = BenchmarkResult.load_json(out / "results.json")
    assert result.config.phases and not result.failed_trials()
    # an AgentSession's handoff is split; upstream's bare session has none to split
    assert {t.level for t in result.trials if t.phases} == {"agent"}
    assert not [t for t in result.trials if t.level == "session" and t.phases]
    for trial in result.select(level="agent"):
        critical = [name for name, p in trial.phases.items() if p.critical]
        assert critical[:3] == ["tool_return", "on_exit", "drain"]
        assert critical[-3:] == ["reply_created", "first_text", "playout"]
        assert ("connect" in trial.phases) == (trial.session == "fresh")
        assert all(p.truth_ms is not None for p in trial.phases.values())
        # the network's share: the tool's output synced (drain), the reply created
        assert trial.phases["reply_created"].truth_ms == trial.rtt_ms
        if trial.session == "fresh":
            assert trial.phases["connect"].truth_ms == 3 * (trial.rtt_ms or 0.0)
        # the critical phases' truths add up to the benchmark's own ground truth
        path_truth = sum(p.truth_ms or 0.0 for p in trial.phases.values() if p.critical)
        assert path_truth == pytest.approx(trial.truth_reply_ms)
    assert BenchmarkResult.load_csv(out / "results.csv") == result.trials
    # the CLI table: per mode and RTT, each phase's median, truth, client time and the goal
    table = printed[printed.index("handoff phases, ms") :]
    rows = [line.split() for line in table.splitlines()[2:] if line.startswith("fresh+empty")]
    assert [row[2] for row in rows if row[1] == "20"] == [
        "tool_return", "on_exit", "drain", "close", "connect", "(session_update)", "(on_enter)",
        "reply_request", "reply_created", "first_text", "playout", "wait",
    ]  # fmt: skip
    assert "goal: a phase within 0.1 RTT + 3 ms of its truth" in printed
    assert (out / "phases.png").exists() and (out / "phase_client.png").exists()
