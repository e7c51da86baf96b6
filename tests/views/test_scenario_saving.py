""" "Save as scenario" in ChatView and SuiteView, Python side: the form's message writes the
call the view shows into a scenarios file, and the file (or why not) comes back in traits."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.suites import Outcome, load_suite, run_suite
from notebook_agents.views import ChatView, SuiteView
from tests.conftest import API_KEY, started
from tests.suites.test_recording import TYPED, TYPED_EXPECTATIONS, user_module


@pytest.fixture
def clinic(tmp_path: Path) -> Iterator[ModuleType]:
    """The user's agents (tests/suites/test_recording.py's), imported as a notebook does."""
    yield user_module(tmp_path / "app", "clinic_views")
    sys.modules.pop("clinic_views", None)


async def test_chat_views_button_saves_the_call_and_says_where_or_why_not(
    emulator: Emulator, runners: list[NotebookRunner], clinic: ModuleType, tmp_path: Path
) -> None:
    runner = await started(
        runners, NotebookRunner(clinic.make_server(emulator.base_url(), API_KEY))
    )
    view = ChatView(runner)
    await runner.greeting()
    for text in TYPED:
        await runner.run(text)
    view.scenario_path = str(tmp_path / "scenarios.yaml")  # as the form's file box sets it

    view._on_browser_message(view, {"type": "save_scenario", "label": "pays an invoice"}, [])

    assert (view.scenario_saved, view.scenario_error) == (str(tmp_path / "scenarios.yaml"), "")
    scenario = load_suite(tmp_path / "scenarios.yaml")["pays an invoice"]
    assert [[e.text for e in turn.expect] for turn in scenario.turns] == TYPED_EXPECTATIONS

    view._on_browser_message(view, {"type": "save_scenario", "label": "pays an invoice"}, [])
    assert view.scenario_saved == ""
    assert "the label 'pays an invoice' is scenarios[0]'s already" in view.scenario_error
    view._on_browser_message(view, {"type": "save_scenario", "label": "  "}, [])
    assert view.scenario_error.startswith("to_scenario needs a label")
    view.close()


async def test_suite_views_button_saves_the_selected_scenarios_run_as_a_new_one(
    emulator: Emulator, runners: list[NotebookRunner], clinic: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: transfers\n    turns:\n      - user: transfer to billing\n"
        "        expect: ['next_event().is_message(role=\"assistant\")']\n"
    )
    result = await run_suite(path, clinic.make_server(emulator.base_url(), API_KEY))
    assert result["transfers"].outcome is Outcome.FAILED  # the agent hands off first
    view = SuiteView(result)
    view.table.scenario_path = str(path)

    view.table._on_save_message({"type": "save_scenario", "label": "transfers as it does"})
    assert view.table.scenario_error == "select a scenario that ran: its run is what is saved"

    view.select("transfers")
    view.table._on_save_message({"type": "save_scenario", "label": "transfers as it does"})

    assert (view.table.scenario_saved, view.table.scenario_error) == (str(path), "")
    assert load_suite(path).labels == ["transfers", "transfers as it does"]
    rerun = await run_suite(path, clinic.make_server(emulator.base_url(), API_KEY))
    assert [s.outcome for s in rerun] == [Outcome.FAILED, Outcome.PASSED]


async def test_a_save_while_the_agent_answers_waits_for_the_reply(
    emulator: Emulator, runners: list[NotebookRunner], clinic: ModuleType, tmp_path: Path
) -> None:
    """Saved mid-turn, the last turn would be written in part (its reply missing), and fail
    when run: the button says to wait."""
    runner = await started(
        runners, NotebookRunner(clinic.make_server(emulator.base_url(), API_KEY))
    )
    view = ChatView(runner)
    await runner.greeting()
    turn = view.say("hello")
    assert turn is not None and view.pending == 1
    assert view.save_scenario("half a call", tmp_path / "scenarios.yaml") is None
    assert view.scenario_error == "the agent is still answering: save once its reply is in"
    assert not (tmp_path / "scenarios.yaml").exists()
    await asyncio.wrap_future(turn)
    view.close()
