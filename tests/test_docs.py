"""The guides' examples run as written, each driving a real livekit session against the emulator
(the names an example marks ``# yours:`` given as an app would have them), and the facts of the
pages a user relies on hold: what push-to-talk calls, where the checking section's complete
version lives, that every command of the command-line page parses."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import griffe
import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai

from notebook_agents import NotebookRunner, Trace
from notebook_agents.__main__ import COMMANDS
from notebook_agents.bench.stats import summary_table
from notebook_agents.emulator import Emulator
from notebook_agents.modes import REALTIME_MODES, mode_label
from notebook_agents.suites import SuiteResult
from notebook_agents.views import WaterfallView

from .conftest import API_KEY
from .doc_examples import DOCS, ROOT, python_block, python_blocks, run
from .upstream import greeter_weather

GUIDES = DOCS / "guides"
RUNNER, EMULATOR, CHECKING = GUIDES / "runner.md", GUIDES / "emulator.md", GUIDES / "checking.md"
PHASES, VIEWS, VOICE = GUIDES / "phases.md", GUIDES / "views.md", GUIDES / "voice.md"


def concierge(emulator: Emulator) -> AgentServer:
    """A cascaded text agent on ``emulator``'s Chat Completions, as an app would write it."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.LLM(base_url=emulator.base_url(), api_key=API_KEY, model="gpt-4o-mini")
        session: AgentSession[None] = AgentSession(llm=model)
        agent = Agent(instructions="You are the Concierge. Greet callers.")
        await session.start(agent=agent, room=ctx.room)

    return server


async def run_tour(emulator: Emulator, runners: list[NotebookRunner]) -> dict[str, Any]:
    """The runner guide's tour on the Concierge; its names as the tour leaves them (its runner
    kept in ``runners``, to be stopped whatever happens)."""
    namespace: dict[str, Any] = {"server": concierge(emulator)}
    try:
        await run(python_block(RUNNER, "NotebookRunner(server)"), namespace, RUNNER)
    finally:
        if "runner" in namespace:
            runners.append(namespace["runner"])
    return namespace


async def test_the_runner_tour_runs_and_its_saved_trace_loads(
    emulator: Emulator,
    runners: list[NotebookRunner],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # where the example saves call.jsonl
    namespace = await run_tour(emulator, runners)
    runner: NotebookRunner = namespace["runner"]
    assert not runner.running  # the tour ends with stop()
    loaded = Trace.load(tmp_path / "call.jsonl")
    said = {(e.kind, e.data.get("text")) for e in loaded.events}
    assert ("user_message", "Hello!") in said
    assert ("agent_message", 'You are the Concierge. You said: "Hello!".') in said
    # what was saved is the trace up to the save: stop() only added its end
    kinds = [e.kind for e in runner.trace.events]
    assert [e.kind for e in loaded.events] == kinds[: len(loaded.events)]


async def test_the_turn_phases_waterfall_and_views_examples_read_the_tours_call(
    emulator: Emulator,
    runners: list[NotebookRunner],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = await run_tour(emulator, runners)
    capsys.readouterr()
    await run(python_block(PHASES, "turn_phases("), namespace, PHASES)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 and re.match(r"\S.* \d+ ms \[", printed[0]), printed  # one turn
    await run(python_block(PHASES, "WaterfallView("), namespace, PHASES)
    assert isinstance(namespace["view"], WaterfallView)
    await run(python_block(VIEWS, "StateView("), namespace, VIEWS)


async def test_the_emulator_example_points_both_plugins_at_it() -> None:
    namespace: dict[str, Any] = {}
    try:
        await run(python_block(EMULATOR, "openai.realtime.RealtimeModel("), namespace, EMULATOR)
        assert isinstance(namespace["realtime"], openai.realtime.RealtimeModel)
        assert isinstance(namespace["chat"], openai.LLM)
    finally:
        if "emu" in namespace:
            namespace["emu"].stop()


async def test_the_reply_rule_example_answers_as_the_page_says(
    runners: list[NotebookRunner],
) -> None:
    block = python_block(EMULATOR, "ReplyRules(")
    namespace: dict[str, Any] = {}
    await run(block, namespace, EMULATOR)
    emulator: Emulator = namespace["emu"]
    try:
        runner = NotebookRunner(concierge(emulator)).start()
        runners.append(runner)
        await runner.ready()
        answer = await runner.send_text("When are you open?")
        assert answer == "You are the Concierge. We are open 9 to 5."
        assert f'# "{answer}"' in block  # the answer the page promises
        # anything else still gets the default rules
        assert await runner.send_text("what is 2 plus 3") == "You are the Concierge. 2 + 3 = 5."
    finally:
        emulator.stop()


async def test_the_gemini_switch_example_answers_offline() -> None:
    """The Gemini guide's one-line switch (its environment example:
    tests/emulator/test_gemini_live.py)."""
    page = GUIDES / "gemini.md"
    namespace: dict[str, Any] = {}
    try:
        await run(python_block(page, "http_options=emu.gemini_http_options("), namespace, page)
        session = namespace["model"].session()
        try:
            await session.generate_reply()
        finally:
            await session.aclose()
        (log,) = namespace["emu"].connections
        assert log.kind == "gemini_live" and log.latency.rtt_ms == 20
    finally:
        if "emu" in namespace:
            namespace["emu"].stop()


async def test_the_checking_example_expects_mocks_and_replies_as_written(
    emulator: Emulator, runners: list[NotebookRunner], capsys: pytest.CaptureFixture[str]
) -> None:
    """The checking guide's first example on livekit PR #5229's Greeter/Weather agents (its
    expectations raise if a turn went otherwise), then the handoff phases example on its call,
    whose models used the network it names."""
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(rtt_ms=20), api_key=API_KEY, modalities=["text"]
    )
    block = python_block(CHECKING, "mock_tools(WeatherAgent")
    namespace: dict[str, Any] = {
        "greeter_server": greeter_weather.make_server(model),
        "WeatherAgent": greeter_weather.WeatherAgent,
    }
    try:
        await run(block, namespace, CHECKING)
    finally:
        if "runner" in namespace:
            runners.append(namespace["runner"])
    assert not namespace["runner"].running  # it ends with stop()
    capsys.readouterr()
    await run(python_block(PHASES, "handoff_phases("), namespace, PHASES)
    printed = capsys.readouterr().out
    assert re.match(r"GreeterAgent → WeatherAgent · reused\+copied \d+ ms\n", printed), printed
    assert re.search(r"^  session_update ", printed, re.M), printed  # and its phases


async def test_the_judges_example_gives_the_scripted_verdicts(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    block = python_block(CHECKING, "says_hello(")
    runner = NotebookRunner(concierge(emulator)).start()
    runners.append(runner)
    await runner.ready()
    namespace: dict[str, Any] = {"emu": emulator, "runner": runner}
    try:
        await run(block, namespace, CHECKING)  # the message's judge passed: it raised nothing
        evaluation = namespace["evaluation"]
        assert len(evaluation.judgments) == 1 and evaluation.all_passed
        assert "evaluation.all_passed  # True" in block
        # the example ends by removing its rule: a judge gets the unscripted fail again
        bye = await runner.run("bye")
        message = bye.expect.next_event().is_message(role="assistant")
        with pytest.raises(AssertionError, match="Judgement failed: The emulator does not judge"):
            await message.judge(namespace["judge"], intent="greets the caller")
    finally:
        if "judge" in namespace:
            await namespace["judge"].aclose()


async def test_the_suite_example_gives_the_verdicts_its_file_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_livekit_env: None
) -> None:
    """The checking guide's scenarios file and the cell running it: one scenario passes, one
    fails, the persona scenario is not runnable; then the simulated caller's cell plays that
    one, as its rule scripts the caller, and its verdict is the scripted judge's; run 5 times
    on a model failing 1 response in 7, the first is flaky as it says."""
    # the first: the suite (the others show one field each)
    scenarios = re.findall(r"^```yaml\n(.*?)^```$", CHECKING.read_text(), re.S | re.M)[0]
    (tmp_path / "scenarios.yaml").write_text(scenarios)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "agent", greeter_weather)
    namespace: dict[str, Any] = {}
    repeated = python_block(CHECKING, "now_and_then_failing")
    try:
        await run(python_block(CHECKING, "fresh_server():"), namespace, CHECKING)
        suite: SuiteResult = namespace["suite"]
        assert [(s.label, s.outcome.value) for s in suite] == [
            ("hands off to weather", "passed"),
            ("greeter looks up the weather", "failed"),
            ("caller asks about the weather", "not runnable"),
        ]
        await run(python_block(CHECKING, "caller_llm="), namespace, CHECKING)
        suite = namespace["suite"]
        assert [s.outcome.value for s in suite] == ["passed", "failed", "passed"]
        call = namespace["call"]
        assert call.transcript.splitlines() == [
            "agent: You are a friendly greeter. How can I help you?",
            "caller: You are the caller. transfer to weather",
            # the weather agent's on_enter reply, on the greeter's context it copied
            'agent: You are a weather agent. You said: "You are the caller. transfer to weather".',
            "caller: You are the caller. lookup weather location=Paris",
            "agent: You are a weather agent. The tool returned: It is sunny in Paris.",
        ]
        assert call.judgment.reasoning == "looked for the forecast"
        await run(repeated, namespace, CHECKING)
    finally:
        if "model" in namespace:
            await namespace["model"].aclose()
        if "emulator" in namespace:
            namespace["emulator"].stop()
    suite = namespace["suite"]
    assert [s.label for s in suite.flaky] == ["hands off to weather"]
    assert suite["hands off to weather"].repetition == "3/5 passed · flaky"
    assert "# '3/5 passed · flaky'" in repeated


def test_the_checking_guide_says_where_it_runs_and_whose_names_are_yours() -> None:
    """A reader cannot import the examples' agents: the guide names the notebook and files
    that run it all, and each example that uses an agent or emulator it does not make says the
    name is the reader's own."""
    text = CHECKING.read_text()
    intro = text.split("```", 1)[0]
    notebooks = ROOT / "notebooks"
    for name in ("05_checking_agents.ipynb", "weather_agent.py", "weather.scenarios.yaml"):
        assert name in intro and (notebooks / name).is_file(), name
    assert "make lab" in intro
    for block in python_blocks(CHECKING):
        for name in ("greeter_server", "WeatherAgent", "make_server", "emu"):
            made = re.search(rf"^{name} = ", block, re.M)
            if re.search(rf"\b{name}\b", block) and not made:
                assert re.search(rf"# yours:.*\b{name}\b", block), f"{name} in:\n{block}"


def test_the_voice_guide_says_what_push_to_talk_does_and_its_calls() -> None:
    """VoiceView's push-to-talk ends the turn on release, through calls a cell can make too."""
    section = VOICE.read_text().split("## A microphone and a speaker", 1)[1].split("\n## ")[0]
    section = " ".join(section.split())
    assert "push-to-talk" in section.lower() and "release" in section
    for call in ("start_turn", "end_turn"):
        assert f"`runner.{call}()`" in section
        assert callable(getattr(NotebookRunner, call))


@pytest.mark.slow
async def test_the_your_agents_example_measures_a_user_pair_in_every_mode() -> None:
    from tests.bench.test_bench_your_agents import FrontDesk

    page = GUIDES / "benchmark.md"
    namespace: dict[str, Any] = {"FrontDesk": FrontDesk}
    await run(python_block(page, "YourAgents(FrontDesk"), namespace, page)
    result = namespace["result"]
    assert [t.error for t in result.failed_trials()] == []
    assert len(result.trials) == 4 * 3
    assert all(t.asked_mode == t.mode and t.truth_handoff_ms for t in result.trials)
    rows = summary_table(result, "handoff_ms")
    assert [row.mode for row in rows] == [mode_label(*mode) for mode in REALTIME_MODES]


def test_every_command_of_the_docs_parses_as_written() -> None:
    """Each ``notebook-agents ...`` line of the docs' shell blocks is a command the parser
    takes: its subcommand and every option exist and their values are accepted."""
    commands = [
        line.strip()
        for page in DOCS.rglob("*.md")
        for block in re.findall(r"^```sh\n(.*?)^```$", page.read_text(), re.S | re.M)
        for line in block.splitlines()
        if re.match(r"\s*(\.venv/bin/)?notebook-agents ", line)
    ]
    assert len(commands) >= 8, commands
    for command in commands:
        name, *args = shlex.split(command)[1:]
        parser = argparse.ArgumentParser(prog=f"notebook-agents {name}", exit_on_error=False)
        importlib.import_module(COMMANDS[name]).add_arguments(parser)
        parser.parse_args(args)


def test_the_reference_shows_no_attribute_value_that_only_repeats_its_name() -> None:
    """mkdocstrings renders the package as griffe reads it: with the docs' extension, an
    attribute set from the parameter of its name (``self.reply = reply``) has no value to
    show as ``reply = reply``; a constant keeps its value."""
    hiding = griffe.load_extensions(f"{DOCS / 'repeated_values.py'}:HideValuesRepeatingTheName")
    assert "notebook_agents.runner.errors.TurnError.reply" in _echoed_values(None)  # can fail
    assert _echoed_values(hiding) == []
    store = griffe.load("notebook_agents.trace.store", search_paths=[ROOT], extensions=hiding)
    assert str(store["TRACE_FORMAT"].value) == "'notebook-agents.trace/5'"


def _echoed_values(extensions: griffe.Extensions | None) -> list[str]:
    """Every attribute of the package whose value, as griffe reads it, is its own name."""
    package = griffe.load("notebook_agents", search_paths=[ROOT], extensions=extensions)
    assert isinstance(package, griffe.Module)
    echoed: list[str] = []
    objects: list[griffe.Object] = [package]
    while objects:
        members = [m for m in objects.pop().members.values() if isinstance(m, griffe.Object)]
        objects += members
        echoed += [
            m.path for m in members if isinstance(m, griffe.Attribute) and str(m.value) == m.name
        ]
    return echoed
