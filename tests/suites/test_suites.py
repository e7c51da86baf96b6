"""Scenario suites: a scenarios file runs against an AgentServer (each scenario on a fresh
session, checked with livekit's RunResult.expect), the server's on_simulation_end gives its
veto, and pytest gives the same verdicts from the same file."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, SimulationContext
from livekit.plugins import openai

from notebook_agents import AgentProcess, NotebookRunner
from notebook_agents._displays import mimebundle_of, view_of
from notebook_agents.emulator import Emulator
from notebook_agents.runner import RunnerState
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes
from notebook_agents.suites import Outcome, SuiteFileError, load_suite, run_suite
from notebook_agents.views.suite_view import SuiteView
from notebook_agents.views.timeline_view import TimelineView
from tests.conftest import API_KEY
from tests.plugin_run import pytest_in_subprocess
from tests.runner.test_runner import StuckTool, agent_threads, stuck_tool_server, until
from tests.upstream import greeter_weather

ROOT = Path(__file__).resolve().parents[2]
GREETER_SUITE = Path(__file__).parent / "greeter_suite.yaml"


@pytest.fixture
def make_greeter(emulator: Emulator, no_livekit_env: None) -> Callable[[], AgentServer]:
    """PR #5229's server, unchanged, with a model of its own for each scenario."""

    def make() -> AgentServer:
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
        return greeter_weather.make_server(model)

    return make


async def test_a_suite_gives_each_scenario_its_verdict_its_failure_and_its_trace(
    make_greeter: Callable[[], AgentServer],
) -> None:
    result = await run_suite(GREETER_SUITE, make_greeter)

    assert [(s.label, s.outcome) for s in result] == [
        ("hands off to weather", Outcome.PASSED),
        ("greeter looks up the weather", Outcome.FAILED),
        ("caller asks about the weather", Outcome.NOT_RUNNABLE),
    ]
    assert not result.passed
    handed_off, failed, simulated = result
    assert handed_off.verdict.success and handed_off.reason == ""
    assert len(handed_off.results) == 2 and handed_off.seconds > 0
    assert handed_off.trace is not None
    handoffs = [e.data["to"] for e in handed_off.trace.events if e.kind == "handoff"]
    assert handoffs == ["GreeterAgent", "WeatherAgent"]  # the start, then the transfer
    # the first failing expectation, as written, and livekit's own message for it
    assert failed.turn == 0
    assert failed.expectation == 'contains_function_call(name="lookup_weather")'
    assert "No FunctionCallEvent satisfying criteria found" in failed.reason
    assert failed.simulator_verdict is not None and not failed.simulator_verdict.success
    # a fresh session: the failing scenario starts with the greeter again
    assert failed.trace is not None and failed.trace is not handed_off.trace
    assert {e.agent for e in failed.trace.events if e.agent} == {"GreeterAgent"}
    # a simulated user cannot run offline: said so, never a pass
    assert not simulated.passed and simulated.trace is None
    assert "simulated user" in simulated.reason and "turns:" in simulated.reason

    view = SuiteView(result)
    assert [row["outcome"] for row in view.table.rows] == ["passed", "failed", "not runnable"]
    # the result is data; the views registered how it displays: as this table
    assert isinstance(result.view(), SuiteView)
    assert "application/vnd.jupyter.widget-view+json" in result._repr_mimebundle_()
    assert view.table.rows[1]["expectation"] == failed.expectation
    view.select("hands off to weather")
    (timeline,) = view.details.children
    assert isinstance(timeline, TimelineView) and timeline.trace is handed_off.trace


GREETER_CONFTEST = textwrap.dedent(
    """
        from collections.abc import Callable, Iterator

        import pytest
        from livekit.agents import AgentServer
        from livekit.plugins import openai

        from notebook_agents import Emulator
        from tests.upstream.greeter_weather import make_server


        @pytest.fixture
        def agent_server() -> Iterator[Callable[[], AgentServer]]:
            with Emulator() as emulator:
                yield lambda: make_server(
                    openai.realtime.RealtimeModel(
                        base_url=emulator.base_url(), api_key="sk-test", modalities=["text"]
                    )
                )
    """
)
"""a project's conftest.py running the greeter suite: the server made for each scenario"""


@pytest.mark.slow  # pytest in a process of its own
def test_pytest_gives_the_same_verdicts_from_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(GREETER_CONFTEST)
    outcomes = outcomes_under_pytest(tmp_path, GREETER_SUITE)
    # run_suite's verdicts (the test above): passed, failed, not runnable
    assert outcomes == {
        "hands off to weather": "passed",
        "greeter looks up the weather": "failed",
        "caller asks about the weather": "skipped",
    }


SPOKEN = """
name: Greeter by voice
scenarios:
  - label: asks by voice for the weather
    turns:
      - audio: transfer.wav
        expect:
          - next_event().is_function_call(name="transfer_to_weather")
          - next_event().is_function_call_output()
          - next_event().is_agent_handoff(new_agent_type=WeatherAgent)
          - next_event().is_message(role="assistant")
          - no_more_events()
  - label: a greeting is no transfer
    turns:
      - audio: voices/hello.wav
        expect:
          - contains_agent_handoff(new_agent_type=WeatherAgent)
"""
"""PR #5229's greeter, spoken to: a WAV per turn, next to the file (one in a folder)"""


def spoken_suite(directory: Path) -> Path:
    """``SPOKEN`` in ``directory``, its WAVs said by the project's offline voice."""
    (directory / "voices").mkdir()
    for name, words in [("transfer.wav", "transfer to weather"), ("voices/hello.wav", "hello")]:
        (directory / name).write_bytes(wav_bytes(synthesize(words), SAMPLE_RATE))
    path = directory / "scenarios.yaml"
    path.write_text(SPOKEN)
    return path


@pytest.fixture
def make_hearing_greeter(emulator: Emulator, no_livekit_env: None) -> Callable[[], AgentServer]:
    """PR #5229's server on a realtime model that hears (audio in and out, the default)."""

    def make() -> AgentServer:
        model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        return greeter_weather.make_server(model)

    return make


def _live(kind: type) -> int:
    """How many ``kind`` objects are alive. By their type's MRO, which is what isinstance
    decides for them: isinstance also looks ``__class__`` up on each of this process's ~360,000
    objects, which took a second or more a count."""
    gc.collect()
    return sum(kind in type(o).__mro__ for o in gc.get_objects())


async def test_a_dropped_suite_result_frees_every_scenarios_runner_and_session(
    make_greeter: Callable[[], AgentServer],
) -> None:
    before = _live(NotebookRunner), _live(AgentSession)
    result = await run_suite(GREETER_SUITE, make_greeter)
    assert len(result) == 3 and _live(AgentSession) > before[1]  # its RunResults hold them
    del result
    # this step of the test's task was woken by run_suite's future, which holds the result
    # until the step ends: let it end
    await asyncio.sleep(0)
    assert (_live(NotebookRunner), _live(AgentSession)) == before


@pytest.mark.slow  # real-time spoken turns
@pytest.mark.voice  # WAVs played into the session in real time (by hand: a suite file names them)
async def test_spoken_turns_are_heard_by_the_agent_and_checked(
    make_hearing_greeter: Callable[[], AgentServer], tmp_path: Path
) -> None:
    result = await run_suite(spoken_suite(tmp_path), make_hearing_greeter)

    heard, greeted = result
    assert (heard.outcome, heard.reason) == (Outcome.PASSED, "")
    assert heard.trace is not None
    said = [e.data["text"] for e in heard.trace.of_kind("user_transcript") if e.data["final"]]
    assert said == ["transfer to weather"]  # the WAV, heard by the model through the session
    assert [e.data["to"] for e in heard.trace.of_kind("handoff")][-1] == "WeatherAgent"
    assert greeted.outcome is Outcome.FAILED and greeted.turn == 0
    assert greeted.expectation == "contains_agent_handoff(new_agent_type=WeatherAgent)"
    assert greeted.reason.startswith(
        "turn 0 (spoken: hello.wav): contains_agent_handoff(new_agent_type=WeatherAgent)\n"
        "No AgentHandoffEvent matching criteria found"
    )


async def test_spoken_turns_with_livekit_credentials_are_not_runnable_and_start_nothing(
    make_hearing_greeter: Callable[[], AgentServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With LiveKit's credentials set the runner joins a real room, where no microphone
    plays a WAV: said before the agent is started, never a pass."""
    monkeypatch.setenv("LIVEKIT_URL", "ws://127.0.0.1:9")  # nothing listens: nothing may dial
    monkeypatch.setenv("LIVEKIT_API_KEY", "devkey")
    monkeypatch.setenv("LIVEKIT_API_SECRET", "not-a-secret")
    result = await run_suite(spoken_suite(tmp_path), make_hearing_greeter)
    for scenario in result:
        assert scenario.outcome is Outcome.NOT_RUNNABLE and scenario.trace is None
        assert scenario.reason == (
            "its spoken turns play through the offline session's microphone, and with "
            "LIVEKIT_URL set it would join a real room, where nothing says them: unset "
            "LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to run offline"
        )


async def test_a_function_making_a_runner_runs_each_scenario_on_the_runner_it_makes(
    make_greeter: Callable[[], AgentServer],
) -> None:
    """Any ``AgentRunner`` (here livekit's own, made by hand): its own job, so livekit's
    simulator hooks (the dispatch, ``on_simulation_end``) do not apply."""
    made: list[NotebookRunner] = []

    def make() -> NotebookRunner:
        made.append(NotebookRunner(make_greeter()))
        return made[-1]

    result = await run_suite(GREETER_SUITE, make)

    assert [s.outcome for s in result] == [
        Outcome.PASSED,
        Outcome.FAILED,
        Outcome.NOT_RUNNABLE,
    ]
    assert [s.trace for s in result][:2] == [r.trace for r in made][:2]
    assert [r.state for r in made] == [RunnerState.STOPPED, RunnerState.STOPPED, RunnerState.NEW]
    assert all(s.simulator_verdict is None for s in result)


# the stuck turn's timeout leaves a loaded machine time to reach the tool (the reason names it)
STUCK_SUITE = """
name: A tool that never returns
scenarios:
  - label: the tool never returns
    turns:
      - user: {stuck}
        timeout: 3
        expect:
          - contains_function_call(name="{tool}")
  - label: the next scenario runs
    turns:
      - user: hello
        expect:
          - next_event().is_message(role="assistant")
"""


async def test_a_tool_that_never_returns_is_its_scenarios_error_and_the_next_runs(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    """Its turn timed out, then the stop raised out of run_suite after 10 s (livekit's close
    awaited the tool): no result, and the next scenario never ran."""
    suite = tmp_path / "stuck.yaml"
    suite.write_text(STUCK_SUITE.format(stuck="wait forever", tool="wait_forever"))
    result = await run_suite(suite, lambda: stuck_tool_server(emulator))
    stuck, after = result
    assert (stuck.outcome, stuck.turn) == (Outcome.ERROR, 0)
    assert stuck.reason.startswith(
        "turn 0 (wait forever): the agent did not answer within 3 s: its tool wait_forever() "
        "had not returned"
    )
    assert after.outcome is Outcome.PASSED, after.reason


async def test_a_job_that_would_not_stop_is_its_scenarios_error_and_the_next_runs(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    """A tool blocking its job's loop: the stop says it could not end the job, and that is
    this scenario's error, not the suite's end."""
    suite = tmp_path / "blocked.yaml"
    suite.write_text(STUCK_SUITE.format(stuck="block the loop", tool="block_the_loop"))
    agents: list[StuckTool] = []

    def make() -> NotebookRunner:
        agents.append(StuckTool())
        return NotebookRunner(stuck_tool_server(emulator, agents[-1]), stop_timeout=1)

    try:
        result = await run_suite(suite, make)
    finally:
        for agent in agents:
            agent.unblock.set()
        await until(lambda: agent_threads() == [], "agent_threads()")  # before the emulator ends
    blocked, after = result
    assert blocked.outcome is Outcome.ERROR
    assert "the agent did not answer within 3 s" in blocked.reason
    assert "stopping: the agent's job did not end within stop_timeout=1 s" in blocked.reason
    assert after.outcome is Outcome.PASSED, after.reason


async def test_a_runner_without_spoken_turns_makes_a_spoken_scenario_not_runnable(
    tmp_path: Path,
) -> None:
    made: list[AgentProcess] = []

    def make() -> AgentProcess:
        made.append(AgentProcess())  # another process's agent takes typed turns only
        return made[-1]

    result = await run_suite(spoken_suite(tmp_path), make)
    for scenario in result:
        assert scenario.outcome is Outcome.NOT_RUNNABLE and scenario.trace is None
        assert scenario.reason == (
            "its spoken turns need a runner that takes them (run_audio): AgentProcess takes "
            "typed turns only"
        )
    assert [r.state for r in made] == [RunnerState.NEW, RunnerState.NEW]  # nothing started


HEARING_CONFTEST = GREETER_CONFTEST.replace(', modalities=["text"]', "")
"""the greeter's conftest.py with a model that hears"""


@pytest.mark.slow
def test_pytest_gives_spoken_turns_the_same_verdicts(tmp_path: Path) -> None:
    assert "modalities" not in HEARING_CONFTEST
    (tmp_path / "conftest.py").write_text(HEARING_CONFTEST)
    outcomes = outcomes_under_pytest(tmp_path, spoken_suite(tmp_path))
    # run_suite's verdicts (the test above)
    assert outcomes == {
        "asks by voice for the weather": "passed",
        "a greeting is no transfer": "failed",
    }


def test_the_pytest_plugin_imports_nothing_heavy_until_a_scenarios_file(tmp_path: Path) -> None:
    """pytest loads the plugin in every run of an environment that has notebook-agents: a
    project's own tests must not pay for importing livekit (2-3 s a run when the plugin lived
    in the package)."""
    (tmp_path / "test_own.py").write_text(
        "import sys\n\n\ndef test_nothing_of_ours_is_imported():\n"
        "    assert 'pytest_notebook_agents' in sys.modules\n"
        "    assert 'notebook_agents' not in sys.modules and 'livekit' not in sys.modules\n"
    )
    done = subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "pytest_notebook_agents",
                "-p",
                "no:cacheprovider",
            ),
            *("-q", "--rootdir", str(tmp_path), "--confcutdir", str(tmp_path), str(tmp_path)),
        ],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def outcomes_under_pytest(directory: Path, suite: Path) -> dict[str, str]:
    """pytest run on ``suite`` in a subprocess (its conftest in ``directory``): each test's
    outcome by name (an error counts as failed)."""
    reported, _ = pytest_in_subprocess(directory, directory, suite, timeout=120)
    return {name: "failed" if r.outcome == "error" else r.outcome for name, r in reported.items()}


class Booking(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You book tables.")


def simulated_server(emulator: Emulator, seen: list[dict[str, Any]]) -> AgentServer:
    """A server graded as LiveKit's simulator grades one: the entrypoint reads its scenario
    (``ctx.simulation_context()``), ``on_simulation_end`` vetoes from the userdata."""

    async def on_simulation_end(ctx: SimulationContext) -> None:
        seen.append({"ended": ctx.scenario.label, "simulator": ctx.simulator_verdict.success})
        if reason := ctx.userdata().get("veto"):
            ctx.fail(str(reason))

    server = AgentServer()

    @server.rtc_session(on_simulation_end=on_simulation_end)
    async def entrypoint(ctx: JobContext) -> None:
        simulation = ctx.simulation_context()
        assert simulation is not None
        seen.append({"started": simulation.scenario.label, "userdata": simulation.userdata()})
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
        await AgentSession(llm=model).start(agent=Booking(), room=ctx.room)

    return server


SIMULATED = """
name: Booking
scenarios:
  - label: kept
    userdata: {table: 4}
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']
  - label: vetoed
    userdata: {veto: no table was booked}
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']
  - label: failed anyway
    userdata: {}
    turns:
      - user: hello
        expect: ['next_event().is_function_call()']
"""


async def test_on_simulation_end_gets_the_suites_verdict_and_its_veto_counts(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SIMULATED)
    seen: list[dict[str, Any]] = []
    result = await run_suite(path, simulated_server(emulator, seen))

    kept, vetoed, failed = result
    assert kept.passed and kept.user_verdict is None
    assert vetoed.outcome is Outcome.FAILED
    assert vetoed.reason == "on_simulation_end: no table was booked"
    assert vetoed.simulator_verdict is not None and vetoed.simulator_verdict.success
    # livekit's AND: a veto never rescues a failed run, the simulator's failure stands
    assert failed.outcome is Outcome.FAILED and "is_function_call" in failed.reason
    assert seen == [
        {"started": "kept", "userdata": {"table": 4}},
        {"ended": "kept", "simulator": True},
        {"started": "vetoed", "userdata": {"veto": "no table was booked"}},
        {"ended": "vetoed", "simulator": True},
        {"started": "failed anyway", "userdata": {}},
        {"ended": "failed anyway", "simulator": False},
    ]


async def test_a_judge_without_a_model_is_not_runnable_and_starts_nothing(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: polite\n    turns:\n      - user: hello\n        expect:\n"
        '          - \'next_event().is_message(role="assistant").judge(llm, intent="polite")\'\n'
    )
    seen: list[dict[str, Any]] = []
    (polite,) = await run_suite(path, simulated_server(emulator, seen))
    assert polite.outcome is Outcome.NOT_RUNNABLE and "judge_llm=" in polite.reason
    assert seen == [] and polite.trace is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\n", "scenarios.yaml:1: the file: a scenarios file is livekit's scenarios.yaml"),
        ("scenarios:\n  - turns: []\n", ":2: scenarios[0]: a scenario needs a `label:`"),
        (
            "scenarios:\n  - label: a\n    turn: []\n",
            ":3: scenarios[0].turn: unknown field `turn`: the fields are agent_expectations, "
            "conditions, id,",
        ),
        (
            "scenarios:\n  - label: a\n  - label: a\n",
            ":3: scenarios[1].label: the label 'a' is used twice",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        audio: a.wav\n",
            ":4: scenarios[0].turns[0]: a turn has either `user:`",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - audio: missing.wav\n",
            ":4: scenarios[0].turns[0].audio: no file",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        expect:\n"
            "          - next_event().is_mesage()\n",
            ":6: scenarios[0].turns[0].expect[0]: 'next_event().is_mesage()': is_mesage() is "
            "not one of livekit's expect calls",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        expect:\n"
            "          - next_event().is_message(rol='user')\n",
            ":6: scenarios[0].turns[0].expect[0]: \"next_event().is_message(rol='user')\": "
            "is_message() takes role",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        expect:\n"
            "          - contains_function_call(name=tool_name)\n",
            "name=tool_name must be a literal",
        ),
        (
            "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        expect:\n"
            "          - contains_function_call(arguments={'city': 'Paris'})\n",
            ":6: not valid YAML",
        ),
    ],
)
def test_a_malformed_file_names_its_line_field_and_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(text)
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    assert message in str(raised.value)
    assert str(raised.value).startswith(str(path))


@pytest.mark.parametrize(
    ("audio", "wav", "message"),
    [
        (
            "notes.wav",
            b"words, not sound",
            ":5: scenarios[0].turns[1].audio: {path} is not a PCM16 WAV file (file does not "
            "start with RIFF id): convert it, e.g. with sox",
        ),
        (
            "quiet.wav",
            wav_bytes(np.zeros(0, np.int16), SAMPLE_RATE),
            ":5: scenarios[0].turns[1].audio: {path} holds no samples: record some speech into it",
        ),
        (
            "missing.wav",
            None,
            ":5: scenarios[0].turns[1].audio: no file {path}: a path relative to the scenarios "
            "file",
        ),
        (
            "/proc/self/mem",  # a file that is there and cannot be read
            None,
            ":5: scenarios[0].turns[1].audio: cannot read {path} (Input/output error): give a "
            "readable WAV file",
        ),
    ],
)
async def test_a_wav_missing_or_unheard_is_refused_before_anything_runs(
    tmp_path: Path, audio: str, wav: bytes | None, message: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: hi\n"
        f"      - audio: {audio}\n        expect: ['no_more_events()']\n"
    )
    if wav is not None:
        (tmp_path / audio).write_bytes(wav)
    servers: list[AgentServer] = []

    def make_server() -> AgentServer:
        servers.append(AgentServer())
        return servers[-1]

    with pytest.raises(SuiteFileError) as raised:
        await run_suite(path, make_server)
    assert str(raised.value) == f"{path}{message.format(path=tmp_path / audio)}"
    assert servers == []  # no scenario started


SCENARIO_HEAD = "scenarios:\n  - label: a\n    turns:\n      - user: hi\n        expect:\n"


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        (  # `: ` inside the call: YAML reads a mapping's key and value there
            '          - contains_function_call(name="lookup_weather", arguments={"location": '
            '"Paris"})',
            '          - \'contains_function_call(name="lookup_weather", arguments={"location": '
            '"Paris"})\'',
        ),
        (  # an expectation that starts with `{` or `[` is a YAML mapping or list
            "          - {next_event().is_function_call(name='x')",
            "          - '{next_event().is_function_call(name=''x'')'",
        ),
        ("          - : oops", "          - ': oops'"),
    ],
)
def test_yaml_syntax_in_an_unquoted_expectation_says_quote_it(
    tmp_path: Path, line: str, fixed: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SCENARIO_HEAD + line + "\n")
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:6: not valid YAML")
    assert message.endswith(f"quote the expectation:\n{fixed}")


def test_an_unquoted_expectation_in_a_flow_list_says_quote_each(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: hi\n"
        "        expect: [contains_function_call(arguments={'city': 'Paris'})]\n"
    )
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    assert str(raised.value).startswith(f"{path}:5: not valid YAML")
    assert "quote each expectation in the list" in str(raised.value)


@pytest.mark.parametrize(
    ("line", "read_as", "fixed"),
    [
        ('          - {"name": "x"}', "a mapping", '          - \'{"name": "x"}\''),
        ("          - [next_event()]", "a list", "          - '[next_event()]'"),
        (
            "          - next_event().is_message(role: assistant)",
            "a mapping",
            "          - 'next_event().is_message(role: assistant)'",
        ),
    ],
)
def test_an_expectation_yaml_read_as_a_mapping_or_list_says_quote_it(
    tmp_path: Path, line: str, read_as: str, fixed: str
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SCENARIO_HEAD + line + "\n")
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    assert str(raised.value) == (
        f"{path}:6: scenarios[0].turns[0].expect[0]: YAML read this expectation as {read_as}: "
        f"quote the expectation:\n{fixed}"
    )


async def test_a_misspelt_agent_class_names_its_line_and_the_likely_one(
    make_greeter: Callable[[], AgentServer], tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: hello\n"
        "      - user: transfer to weather\n        expect:\n"
        "          - contains_function_call(name='transfer_to_weather')\n"
        "          - contains_agent_handoff(new_agent_type=WeatherAgnet)\n"
    )
    made: list[AgentServer] = []

    def make() -> AgentServer:
        made.append(make_greeter())
        return made[-1]

    with pytest.raises(SuiteFileError) as raised:
        await run_suite(path, make)
    assert str(raised.value) == (
        f"{path}:8: scenarios[0].turns[1].expect[1]: new_agent_type=WeatherAgnet: none is "
        "defined; did you mean WeatherAgent? If it is defined elsewhere, write its dotted "
        "path, e.g. new_agent_type=my_agents.WeatherAgnet"
    )


async def test_an_agent_class_no_module_defines_is_refused_before_anything_runs(
    make_greeter: Callable[[], AgentServer], tmp_path: Path, runners: list[NotebookRunner]
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: transfer to weather\n"
        "        expect: ['contains_agent_handoff(new_agent_type=RainAgent)']\n"
    )
    with pytest.raises(
        SuiteFileError,
        match=r"new_agent_type=RainAgent: none is defined\. If it is defined elsewhere, write",
    ):
        await run_suite(path, make_greeter)


def test_a_result_without_a_named_view_displays_as_text_and_says_where_views_are_named() -> None:
    """Issue 31: results are plain data below the views; one whose view is not named
    shows its text repr, and asking for its widget says where views are named."""

    class Unshown:
        pass

    assert mimebundle_of(Unshown()) is None
    with pytest.raises(LookupError, match=r"name one in notebook_agents/_displays\.py"):
        view_of(Unshown())
