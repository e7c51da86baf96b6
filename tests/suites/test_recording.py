"""From a call to a regression suite: a conversation held in the notebook becomes a scenario
(``notebook_agents.suites.to_scenario``) that passes under run_suite and pytest, and fails
when the agent is changed, on agents written here as a user writes them."""

from __future__ import annotations

import difflib
import importlib.util
import re
import secrets
import shutil
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml
from livekit.agents import AgentServer
from livekit.plugins import openai

from notebook_agents import AgentProcess, NotebookRunner, TurnError
from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_samples
from notebook_agents.suites import (
    Outcome,
    SuiteFileError,
    load_suite,
    run_suite,
    to_scenario,
)
from notebook_agents.suites.suite_file import append_scenario
from notebook_agents.trace import Trace
from tests.conftest import API_KEY, started
from tests.doc_examples import DOCS, python_block, run
from tests.runner.test_runner import until
from tests.suites.test_suites import outcomes_under_pytest
from tests.upstream import greeter_weather

CLINIC = '''
"""A clinic's front desk: Reception greets and hands billing questions to Billing."""

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai


class Reception(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Reception. You greet callers.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Hand the caller to billing."""
        return Billing()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing. You handle invoices.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def lookup_invoice(self, number: str) -> str:
        """Look up an invoice by its number."""
        return f"invoice {number} is paid"


class Refunds(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Refunds. You give money back.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def lookup_invoice(self, number: str) -> str:
        """Look up an invoice to refund by its number."""
        return f"invoice {number} can be refunded"


def make_server(base_url: str | None = None, api_key: str | None = None, *, hears: bool = False):
    """The server; its model at ``base_url`` (else where OPENAI_BASE_URL says), text only
    unless it ``hears``."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        given = {"base_url": base_url, "api_key": api_key}
        model = openai.realtime.RealtimeModel(
            **{key: value for key, value in given.items() if value},
            **({} if hears else {"modalities": ["text"]}),
        )
        await AgentSession(llm=model).start(agent=Reception(), room=ctx.room)

    return server
'''
"""the user's agents: two that the front desk hands between (and a third it does not), a
handoff tool, and a lookup tool with an argument"""

CHANGES = {
    "hands off elsewhere": (
        ("return Billing()", "return Refunds()"),
        1,
        "next_event().is_agent_handoff(new_agent_type=Billing)",
        "Expected new_agent 'Billing', got 'Refunds'",
    ),
    "takes other arguments": (
        (
            'lookup_invoice(self, number: str) -> str:\n        """Look up an invoice by',
            'lookup_invoice(self, invoice: str) -> str:\n        """Look up an invoice by',
        ),
        2,
        'next_event().is_function_call(name="lookup_invoice", arguments={"number": "A12"})',
        "For key 'number', expected A12, got None",
    ),
    "calls another tool": (
        ("async def transfer_to_billing(self)", "async def billing_transfer(self)"),
        1,
        'next_event().is_function_call(name="transfer_to_billing")',
        "Expected call name 'transfer_to_billing', got 'billing_transfer'",
    ),
}
"""each change a user may make to the agents: (the edit of CLINIC, the turn whose
expectation then fails, that expectation, livekit's message)"""

CHECKING = DOCS / "guides" / "checking.md"

TYPED = ["hello", "transfer to billing", "lookup invoice number=A12"]
"""the call: a greeting answered, a handoff, a tool with an argument"""

TYPED_EXPECTATIONS = [
    ['next_event().is_message(role="assistant")', "no_more_events()"],
    [
        'next_event().is_function_call(name="transfer_to_billing")',
        "next_event().is_function_call_output(is_error=False)",
        "next_event().is_agent_handoff(new_agent_type=Billing)",
        'next_event().is_message(role="assistant")',  # Billing's on_enter
        "no_more_events()",
    ],
    [
        'next_event().is_function_call(name="lookup_invoice", arguments={"number": "A12"})',
        "next_event().is_function_call_output(is_error=False)",
        'next_event().is_message(role="assistant")',
        "no_more_events()",
    ],
]


def user_module(directory: Path, name: str = "clinic", text: str = CLINIC) -> ModuleType:
    """``text`` as the user's module ``name``.py in ``directory``, imported as a notebook
    imports it (it is in ``sys.modules``: the classes a suite names are looked up there)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def modules() -> Iterator[Callable[..., ModuleType]]:
    """Imports the user's modules under names of their own; forgets them at the end."""
    names: list[str] = []

    def make(directory: Path, text: str = CLINIC) -> ModuleType:
        names.append(f"clinic_{secrets.token_hex(4)}")
        return user_module(directory, names[-1], text)

    yield make
    for name in names:
        sys.modules.pop(name, None)


async def typed_call(
    runners: list[NotebookRunner], clinic: ModuleType, emulator: Emulator
) -> NotebookRunner:
    runner = await started(
        runners, NotebookRunner(clinic.make_server(emulator.base_url(), API_KEY))
    )
    await runner.greeting()
    for text in TYPED:
        await runner.run(text)
    return runner


def scenario_data(path: Path, label: str) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    return next(s for s in data["scenarios"] if s["label"] == label)


async def test_a_typed_call_becomes_a_scenario_that_passes_when_run(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
) -> None:
    clinic = modules(tmp_path / "app")
    runner = await typed_call(runners, clinic, emulator)
    path = tmp_path / "app" / "scenarios.yaml"

    scenario = to_scenario(runner, "pays an invoice", path)

    assert scenario.label == "pays an invoice" and scenario.id.startswith("SCN_")
    written = scenario_data(path, "pays an invoice")
    assert list(written) == ["id", "label", "turns"]  # the id first, as lk writes it
    assert [turn["user"] for turn in written["turns"]] == TYPED  # the greeting is no turn
    assert [turn["expect"] for turn in written["turns"]] == TYPED_EXPECTATIONS
    assert [turn.said for turn in scenario.turns] == TYPED
    suite = load_suite(path)
    assert suite.id.startswith("SCNG_") and suite.labels == ["pays an invoice"]

    # the server itself: its model is made in the entrypoint, a fresh one for each job
    result = await run_suite(path, clinic.make_server(emulator.base_url(), API_KEY))
    (ran,) = result
    assert (ran.outcome, ran.reason) == (Outcome.PASSED, "")
    # the same from the trace alone, a saved call loaded again
    saved = runner.trace.save(tmp_path / "call.jsonl")
    again = to_scenario(Trace.load(saved), "pays again", path)
    assert [t.expect for t in again.turns] == [t.expect for t in scenario.turns]


@pytest.mark.parametrize("change", list(CHANGES))
async def test_the_scenario_fails_where_the_changed_agent_does_otherwise(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
    change: str,
) -> None:
    runner = await typed_call(runners, modules(tmp_path / "app"), emulator)
    path = tmp_path / "scenarios.yaml"
    to_scenario(runner, "pays an invoice", path)
    (old, new), turn, expectation, message = CHANGES[change]
    assert old in CLINIC
    changed = modules(tmp_path / "changed", CLINIC.replace(old, new))

    (ran,) = await run_suite(path, changed.make_server(emulator.base_url(), API_KEY))

    assert (ran.outcome, ran.turn, ran.expectation) == (Outcome.FAILED, turn, expectation)
    assert message in ran.reason


PYTEST_CONFTEST = textwrap.dedent(
    """
    import pytest

    from notebook_agents import Emulator
    from clinic import make_server


    @pytest.fixture
    def agent_server():
        with Emulator() as emulator:
            yield make_server(emulator.base_url(), "sk-test")
    """
)
"""the user's conftest.py: their agent, on an emulator, for each scenario"""


@pytest.mark.slow
async def test_pytest_passes_the_recorded_scenario_and_fails_it_on_a_changed_handoff(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
) -> None:
    runner = await typed_call(runners, modules(tmp_path / "notebook"), emulator)
    to_scenario(runner, "pays an invoice", tmp_path / "notebook" / "scenarios.yaml")
    (old, new), *_ = CHANGES["hands off elsewhere"]
    outcomes = {}
    for project, text in [("kept", CLINIC), ("changed", CLINIC.replace(old, new))]:
        directory = tmp_path / project
        directory.mkdir()
        (directory / "clinic.py").write_text(text)
        (directory / "conftest.py").write_text(PYTEST_CONFTEST)
        suite = shutil.copy(tmp_path / "notebook" / "scenarios.yaml", directory)
        outcomes[project] = outcomes_under_pytest(directory, Path(suite))
    assert outcomes == {
        "kept": {"pays an invoice": "passed"},
        "changed": {"pays an invoice": "failed"},
    }
    report = ET.parse(tmp_path / "changed" / "report.xml").getroot()
    failure = next(report.iter("failure")).attrib["message"]
    assert "next_event().is_agent_handoff(new_agent_type=Billing)" in failure
    assert "Expected new_agent 'Billing', got 'Refunds'" in failure


EXISTING = """\
# the front desk's suite: kept by hand
name: Front desk
scenarios:
  - label: says hello   # the simplest call
    turns:
      - user: hello
        expect: ['next_event().is_message(role="assistant")']

# recorded calls go below
"""


async def test_a_scenario_goes_at_the_end_of_a_file_whose_text_stays_and_a_label_is_not_reused(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
) -> None:
    clinic = modules(tmp_path)
    path = tmp_path / "scenarios.yaml"
    path.write_text(EXISTING)
    runner = await typed_call(runners, clinic, emulator)

    to_scenario(runner, "pays an invoice", path)

    text = path.read_text()
    assert text.startswith(EXISTING)  # comments, order, quoting: all as they were
    assert text[len(EXISTING) :].startswith("  - id: SCN_")  # in the list's indentation
    assert load_suite(path).labels == ["says hello", "pays an invoice"]
    result = await run_suite(path, clinic.make_server(emulator.base_url(), API_KEY))
    assert [s.outcome for s in result] == [Outcome.PASSED, Outcome.PASSED]

    with pytest.raises(SuiteFileError) as refused:
        to_scenario(runner, "says hello", path)
    assert str(refused.value) == (
        f"{path}:4: the label 'says hello' is scenarios[0]'s already: labels name the "
        "results, so give this scenario another label, or delete that one from the file "
        "first; the file is unchanged"
    )
    assert path.read_text() == text


async def test_a_call_with_no_turn_or_a_turn_gone_wrong_is_refused_writing_nothing(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
) -> None:
    failing = CLINIC.replace(
        'You handle invoices.")\n\n    async def on_enter(self) -> None:\n',
        'You handle invoices.")\n\n    async def on_enter(self) -> None:\n'
        '        raise RuntimeError("the billing desk is closed")\n',
    )
    clinic = modules(tmp_path, failing)
    runner = await started(
        runners, NotebookRunner(clinic.make_server(emulator.base_url(), API_KEY))
    )
    await runner.greeting()
    path = tmp_path / "scenarios.yaml"
    with pytest.raises(SuiteFileError, match=r"^the call has no user turn yet, .* talk to the"):
        to_scenario(runner, "greets", path)

    await runner.run("hello")
    with pytest.raises(SuiteFileError, match=r"there is no folder .*/missing to write the sc"):
        to_scenario(runner, "says hello", tmp_path / "missing" / "scenarios.yaml")
    with pytest.raises(TypeError, match=r"^to_scenario takes the call's runner \(Notebook"):
        to_scenario(runner.session, "says hello", path)  # type: ignore[arg-type]
    with pytest.raises(TurnError):
        await runner.run("transfer to billing")
    with pytest.raises(SuiteFileError) as refused:
        to_scenario(runner, "hands over", path)
    assert str(refused.value).startswith(
        "turn 1 ('transfer to billing') went wrong (Billing.on_enter raised "
        "RuntimeError('the billing desk is closed')), so a scenario of it would not pass"
    )
    assert "record a call whose turns went right" in str(refused.value)
    assert not path.exists()


RECORDED = {
    "id": "SCN_recorded2345",
    "label": "recorded",
    "turns": [{"user": "hello", "expect": ['next_event().is_message(role="assistant")']}],
}
"""a scenario as to_scenario gives append_scenario"""


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("name: a\nscenarios:\n  - label: first\n", id="indented list, then the end"),
        pytest.param(
            "scenarios:\n- label: first\n  tags: {a: b}\n# a comment\n\nname: a  # the name\n",
            id="list at the key's column, then a key",
        ),
        pytest.param("scenarios:\n    - label: first", id="no line end at the end"),
        pytest.param("name: a\r\nscenarios:\r\n  - label: first\r\n", id="CRLF line ends"),
        pytest.param("{name: a, scenarios: [{label: first}]}  # flow\n", id="flow style"),
        pytest.param("\ufeffscenarios:\n  - label: 'first'   # quoted\n", id="a BOM"),
    ],
)
def test_appending_inserts_the_scenario_and_changes_nothing_else(tmp_path: Path, text: str) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_bytes(text.encode())

    suite = append_scenario(path, RECORDED)

    assert suite.labels == ["first", "recorded"] and suite["recorded"].id == RECORDED["id"]
    written = path.read_bytes().decode()
    edits = difflib.SequenceMatcher(None, text, written, autojunk=False).get_opcodes()
    assert [op for op, *_ in edits if op != "equal"] == ["insert"]  # one insertion, nothing else
    if "\r\n" in text:
        assert "\n" not in written.replace("\r\n", "")


def test_a_new_file_is_made_with_a_name_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "clinic.scenarios.yaml"
    suite = append_scenario(path, RECORDED)
    assert (suite.name, suite.labels) == ("clinic", ["recorded"])
    assert suite.id.startswith("SCNG_") and path.read_text().startswith("id: SCNG_")


def test_a_file_that_would_not_load_is_left_as_it_was(tmp_path: Path) -> None:
    unparsed = {**RECORDED, "turns": [{"user": "hi", "expect": ["next_event().is_mesage()"]}]}
    path = tmp_path / "scenarios.yaml"
    with pytest.raises(SuiteFileError, match=r"is_mesage\(\) is not one of livekit's expect"):
        append_scenario(path, unparsed)
    assert not path.exists()  # not made
    path.write_text(EXISTING)
    with pytest.raises(SuiteFileError, match=r"is_mesage\(\) is not one of livekit's expect"):
        append_scenario(path, unparsed)
    assert path.read_text() == EXISTING
    assert [p.name for p in tmp_path.iterdir()] == ["scenarios.yaml"]  # no temporary left


def test_a_file_that_does_not_load_is_refused_as_load_suite_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - label: a\n    turn: []\n")
    with pytest.raises(SuiteFileError, match=r":3: scenarios\[0\]\.turn: unknown field `turn`"):
        append_scenario(path, RECORDED)
    assert path.read_text() == "scenarios:\n  - label: a\n    turn: []\n"


@pytest.mark.slow
async def test_a_spoken_call_becomes_a_scenario_with_its_wavs_beside_it_that_passes(
    emulator: Emulator,
    runners: list[NotebookRunner],
    modules: Callable[..., ModuleType],
    tmp_path: Path,
) -> None:
    clinic = modules(tmp_path / "app")
    hearing = clinic.make_server(emulator.base_url(), API_KEY, hears=True)
    runner = await started(runners, NotebookRunner(hearing, audio=True))
    await runner.greeting()
    await runner.send_audio(synthesize("transfer to billing"))
    await runner.run("lookup invoice number=A12")  # a typed turn in the same call
    path = tmp_path / "suite" / "scenarios.yaml"
    path.parent.mkdir()

    scenario = to_scenario(runner, "pays by voice", path)

    spoken, typed = scenario.turns
    assert spoken.audio == path.parent / f"{scenario.id}.turn0.wav"  # beside the file
    assert (typed.audio, typed.user) == (None, "lookup invoice number=A12")
    written = scenario_data(path, "pays by voice")
    assert written["turns"][0]["audio"] == f"{scenario.id}.turn0.wav"  # relative to the file
    assert [turn["expect"] for turn in written["turns"]] == TYPED_EXPECTATIONS[1:]
    heard, rate = wav_samples(spoken.audio.read_bytes())
    assert rate == SAMPLE_RATE and np.array_equal(heard, runner.spoken[0].samples)

    result = await run_suite(path, clinic.make_server(emulator.base_url(), API_KEY, hears=True))
    (ran,) = result
    assert (ran.outcome, ran.reason) == (Outcome.PASSED, "")
    assert ran.trace is not None
    assert [e.data["text"] for e in ran.trace.of_kind("user_transcript") if e.data["final"]] == [
        "transfer to billing"  # the WAV, heard again
    ]

    # the trace alone keeps no audio: said, and nothing written
    before = sorted(path.parent.iterdir()), path.read_text()
    with pytest.raises(SuiteFileError) as refused:
        to_scenario(runner.trace, "pays by voice again", path)
    assert str(refused.value) == (
        "turn 0 ('transfer to billing') was spoken and its audio was not kept: a Trace keeps "
        "no audio: pass the runner that spoke it, to_scenario(runner, ...), which keeps what "
        "send_audio() was given"
    )
    assert (sorted(path.parent.iterdir()), path.read_text()) == before

    # a live microphone's turn (VoiceView's, through hear()): its audio is not kept either
    messages = len(runner.trace.of_kind("agent_message"))
    live = np.concatenate([synthesize("lookup invoice"), np.zeros(SAMPLE_RATE, np.int16)])
    runner.hear(live, SAMPLE_RATE)
    await until(
        lambda: len(runner.trace.of_kind("agent_message")) > messages, "the live turn answered"
    )
    with pytest.raises(SuiteFileError) as refused:
        to_scenario(runner, "pays by voice again", path)
    assert re.fullmatch(
        r"turn 2 \('.+'\) was spoken and its audio was not kept: the runner keeps the audio "
        r"of send_audio\(\)/run_audio\(\) turns only, not a live microphone's \(VoiceView, "
        r"hear\(\), push-to-talk\): speak the turn with send_audio\(\) to record it",
        str(refused.value),
    )
    assert (sorted(path.parent.iterdir()), path.read_text()) == before


AGENT_SCRIPT = CLINIC + "\n\nserver = make_server()  # its model where OPENAI_BASE_URL says\n"
"""the same agents as a script run with livekit's console (``AgentProcess``)"""


@pytest.mark.slow
async def test_a_call_with_an_agent_in_another_process_becomes_a_scenario_that_passes(
    emulator: Emulator, no_livekit_env: None, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    agent = AgentProcess(script, emulator=emulator)
    try:
        await agent.start().ready()
        await agent.greeting()
        for text in TYPED:
            await agent.run(text)
        path = tmp_path / "scenarios.yaml"
        scenario = to_scenario(agent, "pays an invoice", path)
    finally:
        agent.stop()

    # the process says each agent's class, but the class lives there, not here, and
    # livekit's RunResult holds a stand-in of no class of the user's: the handoff is held
    # to being one
    expected = [list(chain) for chain in TYPED_EXPECTATIONS]
    expected[1][2] = "next_event().is_agent_handoff()"
    assert [[e.text for e in turn.expect] for turn in scenario.turns] == expected
    (ran,) = await run_suite(path, lambda: AgentProcess(script, emulator=emulator))
    assert (ran.outcome, ran.reason) == (Outcome.PASSED, "")


async def test_the_checking_guides_recording_example_writes_a_scenario_that_passes(
    emulator: Emulator,
    runners: list[NotebookRunner],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/guides/checking.md's "From a call to a regression suite", on livekit PR #5229's
    Greeter/Weather agents: run as written, its scenario passes."""
    monkeypatch.chdir(tmp_path)

    def fresh_server() -> AgentServer:
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
        return greeter_weather.make_server(model)

    runner = await started(runners, NotebookRunner(fresh_server()))
    namespace: dict[str, Any] = {"runner": runner}
    await run(python_block(CHECKING, "to_scenario("), namespace, CHECKING)

    (ran,) = await run_suite("scenarios.yaml", fresh_server)
    assert (ran.label, ran.outcome) == ("weather in Paris", Outcome.PASSED)
    written = scenario_data(tmp_path / "scenarios.yaml", "weather in Paris")
    assert written["id"] == namespace["scenario"].id
    # the excerpt the guide shows is the turn as written
    assert written["turns"][0]["expect"] == [
        line.strip().removeprefix("- ")
        for line in CHECKING.read_text().split("```text\n", 1)[1].split("```")[0].splitlines()
        if line.strip().startswith("- ") and "user:" not in line
    ]
