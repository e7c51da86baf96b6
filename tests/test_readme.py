"""The README's examples run as written: its runner tour (save and load included) and its
``ReplyRules`` rule, each driving a real livekit session against the emulator."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai

from notebook_agents import NotebookRunner, Trace
from notebook_agents.bench.stats import summary_table
from notebook_agents.emulator import Emulator
from notebook_agents.modes import REALTIME_MODES, mode_label
from notebook_agents.suites import SuiteResult

from .conftest import API_KEY
from .upstream import greeter_weather

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block(containing: str) -> str:
    """The README's one ```python block that contains ``containing``."""
    blocks: list[str] = re.findall(r"^```python\n(.*?)^```$", README.read_text(), re.S | re.M)
    found = [block for block in blocks if containing in block]
    assert len(found) == 1, f"{len(found)} python blocks of the README hold {containing!r}"
    return found[0]


async def run(block: str, namespace: dict[str, Any]) -> None:
    """Run ``block`` as a notebook cell does: top-level ``await`` allowed."""
    code = compile(block, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if (pending := eval(code, namespace)) is not None:
        await pending


async def run_tour(emulator: Emulator, runners: list[NotebookRunner]) -> dict[str, Any]:
    """The README's tour on the Concierge; its names as the tour leaves them (its runner kept
    in ``runners``, to be stopped whatever happens)."""
    namespace: dict[str, Any] = {"server": concierge(emulator)}
    try:
        await run(python_block("NotebookRunner(server)"), namespace)
    finally:
        if "runner" in namespace:
            runners.append(namespace["runner"])
    return namespace


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


async def test_the_reply_rule_example_answers_as_the_readme_says(
    runners: list[NotebookRunner],
) -> None:
    block = python_block("ReplyRules(")
    namespace: dict[str, Any] = {}
    await run(block, namespace)
    emulator: Emulator = namespace["emu"]
    try:
        runner = NotebookRunner(concierge(emulator)).start()
        runners.append(runner)
        await runner.ready()
        answer = await runner.send_text("When are you open?")
        assert answer == "You are the Concierge. We are open 9 to 5."
        assert f'# "{answer}"' in block  # the answer the README promises
        # anything else still gets the default rules
        assert await runner.send_text("what is 2 plus 3") == "You are the Concierge. 2 + 3 = 5."
    finally:
        emulator.stop()


async def test_the_judges_example_gives_the_scripted_verdicts(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    block = python_block("VerdictReply(")
    runner = NotebookRunner(concierge(emulator)).start()
    runners.append(runner)
    await runner.ready()
    namespace: dict[str, Any] = {"emu": emulator, "runner": runner}
    try:
        await run(block, namespace)  # the message's judge passed: it raised nothing
        evaluation = namespace["evaluation"]
        assert len(evaluation.judgments) == 1 and evaluation.all_passed
        assert "evaluation.all_passed  # True" in block
        # the rule scripts a fail too
        bye = await runner.run("bye")
        message = bye.expect.next_event().is_message(role="assistant")
        with pytest.raises(AssertionError, match="Judgement failed: looked for a hello"):
            await message.judge(namespace["judge"], intent="greets the caller")
    finally:
        if "judge" in namespace:
            await namespace["judge"].aclose()


def test_the_voiceview_bullet_says_what_push_to_talk_does_and_its_calls() -> None:
    """VoiceView's push-to-talk ends the turn on release, through calls a cell can make too."""
    (bullet,) = [
        part for part in README.read_text().split("\n- ") if part.startswith("`VoiceView(runner)`")
    ]
    bullet = " ".join(bullet.split())
    assert "push-to-talk" in bullet and "release" in bullet
    for call in ("start_turn", "end_turn"):
        assert f"`runner.{call}()`" in bullet
        assert callable(getattr(NotebookRunner, call))


async def test_the_suite_example_gives_the_verdicts_its_file_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_livekit_env: None
) -> None:
    """The README's scenarios file and the cell running it: one scenario passes, one fails."""
    (scenarios,) = re.findall(r"^```yaml\n(.*?)^```$", README.read_text(), re.S | re.M)
    (tmp_path / "scenarios.yaml").write_text(scenarios)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "agent", greeter_weather)
    namespace: dict[str, Any] = {}
    try:
        await run(python_block("run_suite("), namespace)
    finally:
        if "emulator" in namespace:
            namespace["emulator"].stop()
    suite: SuiteResult = namespace["suite"]
    assert [(s.label, s.outcome.value) for s in suite] == [
        ("hands off to weather", "passed"),
        ("greeter looks up the weather", "failed"),
    ]


def test_the_checks_section_says_where_it_runs_and_whose_names_are_yours() -> None:
    """A reader cannot import the examples' agents: the section names the notebook and files
    that run it all, and each example that uses an agent or emulator it does not make says the
    name is the reader's own."""
    text = README.read_text()
    section = text.split("## Checking your agents", 1)[1].split("\n## ", 1)[0]
    intro = section.split("```", 1)[0]
    notebooks = README.parent / "notebooks"
    for name in ("05_checking_agents.ipynb", "weather_agent.py", "weather.scenarios.yaml"):
        assert name in intro and (notebooks / name).is_file(), name
    assert "make lab" in intro
    blocks = re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)
    for block in blocks:
        for name in ("greeter_server", "WeatherAgent", "make_server", "emu"):
            made = re.search(rf"^{name} = ", block, re.M)
            if re.search(rf"\b{name}\b", block) and not made:
                assert re.search(rf"# yours:.*\b{name}\b", block), f"{name} in:\n{block}"


async def test_the_your_agents_example_measures_a_user_pair_in_every_mode() -> None:
    from .test_bench_your_agents import FrontDesk

    namespace: dict[str, Any] = {"FrontDesk": FrontDesk}
    await run(python_block("UserAgents(FrontDesk"), namespace)
    result = namespace["result"]
    assert [t.error for t in result.failed_trials()] == []
    assert len(result.trials) == 4 * 3
    assert all(t.asked_mode == t.mode and t.truth_handoff_ms for t in result.trials)
    rows = summary_table(result, "handoff_ms")
    assert [row.mode for row in rows] == [mode_label(*mode) for mode in REALTIME_MODES]
