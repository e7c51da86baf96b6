"""A suite's ``new_agent_type=`` names mean the user's classes: the ones the scenario's server
ran, then those of the modules the user's server and notebook imported; never the package's
own, never by importing what the file names. The agents are the user's, written in a module of
theirs (``clinic.py``) and imported as the README shows."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from livekit.agents import AgentServer
from livekit.plugins import openai

from notebook_agents.emulator import Emulator
from notebook_agents.suites import Outcome, SuiteFileError, run_suite
from tests.conftest import API_KEY
from tests.kernel import Kernel
from tests.suites.test_suites import ROOT, outcomes_under_pytest

CLINIC = '''
"""A three-agent clinic, as its developer writes it."""

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk of a clinic. You route callers.")

    async def on_enter(self) -> None:
        self.session.generate_reply()

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Hand the caller to billing."""
        return Billing()

    @function_tool
    async def transfer_to_appointments(self) -> Agent:
        """Hand the caller to appointments."""
        return Appointments()


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are billing. You answer questions about invoices.")

    async def on_enter(self) -> None:
        self.session.generate_reply()


class Appointments(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are appointments. You book visits.")

    async def on_enter(self) -> None:
        self.session.generate_reply()


def make_server(model) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        await AgentSession(llm=model).start(agent=FrontDesk(), room=ctx.room)

    return server
'''
"""the user's module: three agents and the function making their server"""

CLINIC_SUITE = """
name: Clinic
scenarios:
  - label: billing
    turns:
      - user: transfer to billing
        expect:
          - next_event().is_function_call(name="transfer_to_billing")
          - next_event().is_function_call_output()
          - next_event().is_agent_handoff(new_agent_type=Billing)
  - label: appointments
    turns:
      - user: transfer to appointments
        expect: ['contains_agent_handoff(new_agent_type=Appointments)']
  - label: billing is no appointment
    turns:
      - user: transfer to billing
        expect: ['contains_agent_handoff(new_agent_type=FrontDesk)']
  - label: a caller with a bill
    instructions: You are a caller with a question about your last invoice.
  - label: billing is polite
    turns:
      - user: transfer to billing
        expect:
          - contains_agent_handoff(new_agent_type=Billing)
          - 'contains_message(role="assistant").judge(llm, intent="is polite")'
"""
"""the clinic's suite: three scenarios that run (one fails), two that cannot here"""

EXPECTED = {
    "billing": Outcome.PASSED,
    "appointments": Outcome.PASSED,
    "billing is no appointment": Outcome.FAILED,
    "a caller with a bill": Outcome.NOT_RUNNABLE,
    "billing is polite": Outcome.NOT_RUNNABLE,
}


@pytest.fixture
def clinic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``clinic.py`` in the user's folder, imported as ``from clinic import make_server``."""
    (tmp_path / "clinic.py").write_text(CLINIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module("clinic")
    finally:
        sys.modules.pop("clinic", None)


@pytest.fixture
def make_clinic(
    clinic: ModuleType, emulator: Emulator, no_livekit_env: None
) -> Callable[[], AgentServer]:
    def fresh_server() -> AgentServer:
        model = openai.realtime.RealtimeModel(
            base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
        )
        server: AgentServer = clinic.make_server(model)
        return server

    return fresh_server


def test_importing_the_package_defines_no_agent_class() -> None:
    """The package's own agents (the race cases', the bench's pair, AgentProcess's stand-in)
    are made when used: a user's ``Billing`` never meets one of the package's."""
    walk = textwrap.dedent(
        """
        import json
        import notebook_agents, notebook_agents.races, notebook_agents.runner
        from livekit.agents import Agent

        def subclasses(cls):
            for sub in cls.__subclasses__():
                yield sub
                yield from subclasses(sub)

        print(json.dumps(sorted(
            f"{c.__module__}.{c.__qualname__}" for c in subclasses(Agent)
            if c.__module__.split(".")[0] == "notebook_agents"
        )))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", walk],
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == []


@pytest.mark.slow
async def test_the_users_billing_is_billing_beside_the_race_lab(
    make_clinic: Callable[[], AgentServer], tmp_path: Path
) -> None:
    """Issue 32: with the race lab in the same kernel, ``new_agent_type=Billing`` was ambiguous
    ("several: clinic.Billing, notebook_agents.races.closing_session.Billing")."""
    from notebook_agents.races import RACES, run_race

    await run_race(RACES["closing_session"], triggered=False)  # its own Billing ran here
    path = tmp_path / "scenarios.yaml"
    path.write_text(CLINIC_SUITE)

    result = await run_suite(path, make_clinic)

    assert {s.label: s.outcome for s in result} == EXPECTED, [s.reason for s in result]
    failed = result["billing is no appointment"]
    assert "No AgentHandoffEvent matching criteria found" in failed.reason


CLINIC_CONFTEST = """
import pytest
from livekit.plugins import openai

import notebook_agents.races  # the race lab, used in the same project
from clinic import make_server
from notebook_agents import Emulator


@pytest.fixture
def agent_server():
    with Emulator() as emulator:
        yield lambda: make_server(
            openai.realtime.RealtimeModel(
                base_url=emulator.base_url(), api_key="sk-test", modalities=["text"]
            )
        )
"""


@pytest.mark.slow
def test_pytest_gives_the_users_billing_the_same_verdicts(tmp_path: Path) -> None:
    (tmp_path / "clinic.py").write_text(CLINIC)
    (tmp_path / "conftest.py").write_text(CLINIC_CONFTEST)
    path = tmp_path / "clinic.scenarios.yaml"
    path.write_text(CLINIC_SUITE)

    outcomes = outcomes_under_pytest(tmp_path, path)

    as_pytest = {Outcome.PASSED: "passed", Outcome.FAILED: "failed"}
    assert outcomes == {label: as_pytest.get(o, "skipped") for label, o in EXPECTED.items()}


SENTINEL = """
from pathlib import Path

Path(__file__).with_name("imported.txt").write_text("its top-level code ran")

from livekit.agents import Agent


class Billing(Agent):
    pass
"""


async def test_a_module_the_file_names_is_never_imported(
    make_clinic: Callable[[], AgentServer], tmp_path: Path
) -> None:
    (tmp_path / "sentinel_agents.py").write_text(SENTINEL)
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: transfer to billing\n"
        "        expect:\n"
        "          - contains_function_call(name='transfer_to_billing')\n"
        "          - contains_agent_handoff(new_agent_type=sentinel_agents.Billing)\n"
    )
    with pytest.raises(SuiteFileError) as raised:
        await run_suite(path, make_clinic)

    assert not (tmp_path / "imported.txt").exists()
    assert "sentinel_agents" not in sys.modules
    assert str(raised.value) == (
        f"{path}:7: scenarios[0].turns[0].expect[1]: new_agent_type=sentinel_agents.Billing: "
        "the module sentinel_agents is not imported, and a scenarios file imports nothing: "
        "import it first (in the notebook, or in your server's module)"
    )


async def test_a_dotted_name_resolves_among_the_modules_imported(
    make_clinic: Callable[[], AgentServer], tmp_path: Path
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n  - label: a\n    turns:\n      - user: transfer to billing\n"
        "        expect: ['contains_agent_handoff(new_agent_type=clinic.Billing)']\n"
    )
    result = await run_suite(path, make_clinic)
    assert result["a"].outcome is Outcome.PASSED, result["a"].reason


PROTOTYPED = CLINIC_SUITE.split("  - label: billing is no appointment")[0]
"""the clinic's two handoffs"""
AMBIGUOUS = """
name: Clinic
scenarios:
  - label: greeting
    turns:
      - user: hello
        expect: ['contains_agent_handoff(new_agent_type=Appointments)']
"""
"""a file naming ``Appointments`` before any agent has handed off: the notebook's and the
module's are both candidates"""
AFTER_BILLING = """
name: Clinic
scenarios:
  - label: billing
    turns:
      - user: transfer to billing
        expect:
          - contains_agent_handoff(new_agent_type=Billing)
      - user: hello
        expect: ['contains_agent_handoff(new_agent_type=Appointments)']
"""
"""``Appointments`` where no Appointments runs, after clinic's Billing ran: clinic's is meant
(the module of the agents that ran), and the expectation fails as livekit says"""
MAIN_NAMED = """
name: Clinic
scenarios:
  - label: appointments
    turns:
      - user: transfer to appointments
        expect: ['contains_agent_handoff(new_agent_type=__main__.Appointments)']
"""


@pytest.mark.slow
def test_a_class_prototyped_in_a_cell_is_never_picked_for_the_one_that_ran(
    tmp_path: Path,
) -> None:
    """Issue 32: an ``Appointments`` defined in a cell, also in the user's module, was picked
    for every expectation, which then failed with "Expected new_agent 'Appointments', got
    'Appointments'"."""
    (tmp_path / "clinic.py").write_text(CLINIC)
    (tmp_path / "prototyped.scenarios.yaml").write_text(PROTOTYPED)
    (tmp_path / "ambiguous.scenarios.yaml").write_text(AMBIGUOUS)
    (tmp_path / "main_named.scenarios.yaml").write_text(MAIN_NAMED)
    (tmp_path / "after_billing.scenarios.yaml").write_text(AFTER_BILLING)
    with Kernel(cwd=str(tmp_path)) as kernel:
        kernel.run_ok(
            textwrap.dedent(
                f"""
                from livekit.agents import Agent
                from livekit.plugins import openai

                from clinic import make_server
                from notebook_agents import Emulator, run_suite

                emulator = Emulator().start()


                def fresh_server():
                    return make_server(
                        openai.realtime.RealtimeModel(
                            base_url=emulator.base_url(), api_key={API_KEY!r},
                            modalities=["text"],
                        )
                    )
                """
            )
        )
        kernel.run_ok(
            "class Appointments(Agent):\n"
            "    def __init__(self):\n"
            "        super().__init__(instructions='A prototype of appointments.')\n"
        )
        kernel.run_ok("suite = await run_suite('prototyped.scenarios.yaml', fresh_server)", 120)
        outcomes = kernel.eval("{s.label: [s.outcome.value, s.reason] for s in suite}")
        assert outcomes == {"billing": ["passed", ""], "appointments": ["passed", ""]}

        ambiguous = kernel.run("await run_suite('ambiguous.scenarios.yaml', fresh_server)", 120)
        assert ambiguous.error is not None and ambiguous.error["ename"] == "SuiteFileError"
        assert ambiguous.error["evalue"] == (
            "ambiguous.scenarios.yaml:7: scenarios[0].turns[0].expect[0]: "
            "new_agent_type=Appointments names 2 classes and none of them ran in this "
            "scenario: __main__.Appointments, clinic.Appointments; write the one you mean "
            "with its module, e.g. new_agent_type=clinic.Appointments"
        )

        kernel.run_ok("after = await run_suite('after_billing.scenarios.yaml', fresh_server)", 120)
        after = kernel.eval("[after['billing'].outcome.value, after['billing'].reason]")
        assert after[0] == "failed" and "__main__" not in after[1], after

        kernel.run_ok("named = await run_suite('main_named.scenarios.yaml', fresh_server)", 120)
        reason = kernel.eval("named['appointments'].reason")
        assert "got 'Appointments'" not in reason
        assert (
            "(expected new_agent __main__.Appointments, got clinic.Appointments: two classes "
            "named Appointments)" in reason
        )
        kernel.run_ok("emulator.stop()")
