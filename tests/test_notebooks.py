"""The notebooks are documentation: each runs offline, top to bottom, in a real kernel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = (
    "01_prototype.ipynb",
    "02_handoff_benchmark.ipynb",
    "03_teaching_handoffs.ipynb",
    "04_voice.ipynb",
    "05_checking_agents.ipynb",
    "06_handoff_races.ipynb",
    "07_frameworks.ipynb",
)
"""the notebooks the project ships, by name: tested from notebooks/ and nowhere else, so a
notebook of the user's (in `make lab`'s workspace, or anywhere) is never run or checked"""
NEEDS_VIDEOSDK = ("07_frameworks.ipynb",)
"""run by test_videosdk_notebook.py, in the environment with the videosdk extra"""
NOTEBOOKS = [ROOT / "notebooks" / name for name in SHIPPED]
RUN_HERE = [path for path in NOTEBOOKS if path.name not in NEEDS_VIDEOSDK]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # the kernels import the package from this checkout, not from wherever it was installed
    # from (an editable install of another worktree), unless PYTHONPATH names a copy first
    paths = [*filter(None, [os.environ.get("PYTHONPATH")]), str(ROOT)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


def test_the_shipped_notebooks_are_the_ones_in_git() -> None:
    """A notebook added to notebooks/ is tested once it is listed in ``SHIPPED``; an untracked
    one (a user's) is none of the tests' business."""
    tracked = subprocess.run(
        ["git", "ls-files", "--", "notebooks/*.ipynb"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(Path(name).name for name in tracked) == list(SHIPPED)
    assert all(path.is_file() for path in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def clone_with_lab_set_up(tmp_path: Path) -> Path:
    """A git clone of this checkout whose ``.venv`` is set up; its jupyter, the one thing not
    run, writes the arguments it was given to ``.venv/jupyter-args``."""
    clone = tmp_path / "clone"
    for name in git(ROOT, "ls-files").splitlines():  # the files as they are in this checkout
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, clone / name)
    git(clone, "init", "--quiet")
    git(clone, "add", ".")
    jupyter = clone / ".venv" / "bin" / "jupyter"
    jupyter.parent.mkdir(parents=True)
    jupyter.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/../jupyter-args"\n')
    jupyter.chmod(0o755)
    (clone / ".venv" / ".installed").touch()
    return clone


@pytest.mark.slow
@pytest.mark.timeout(300)  # ruff twice and pytest twice: a minute alone, more on a loaded machine
def test_a_users_notebooks_where_make_lab_opens_never_break_make_test(tmp_path: Path) -> None:
    """In a clone, ``make lab`` seeds the folder it opens; Run All saves a shipped notebook
    there with its outputs and the user adds one of theirs: ``make test``'s lint and notebook
    checks still pass, run only the shipped notebooks, and git sees none of it."""
    clone = clone_with_lab_set_up(tmp_path)
    (clone / ".venv-videosdk").mkdir()  # set up too: nothing is built here
    (clone / ".venv-videosdk" / ".installed").touch()
    make_lab = ["make", "--no-print-directory", "lab"]
    subprocess.run(make_lab, cwd=clone, check=True, capture_output=True, env=SHELL_ENV)
    args = (clone / ".venv" / "jupyter-args").read_text()
    opened = clone / re.search(r"--ServerApp\.root_dir=(\S+)", args)[1]  # type: ignore[index]
    assert sorted(path.name for path in opened.glob("*.ipynb")) == list(SHIPPED)

    executed = nbformat.read(opened / SHIPPED[0], as_version=4)
    cell = next(c for c in executed.cells if c.cell_type == "code")
    cell.execution_count, cell.outputs = 1, [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(executed, opened / SHIPPED[0])
    mine = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys,os\nx=1")])
    mine.cells[0].execution_count = 1
    nbformat.write(mine, opened / "mine.ipynb")
    subprocess.run(
        make_lab, cwd=clone, check=True, capture_output=True, env=SHELL_ENV
    )  # again, next morning
    assert nbformat.read(opened / SHIPPED[0], as_version=4) == executed  # never overwritten

    bin_dir = Path(sys.executable).parent
    for check in (["ruff", "check", "."], ["ruff", "format", "--check", "."]):
        ran = subprocess.run([str(bin_dir / check[0]), *check[1:]], cwd=clone, capture_output=True)
        assert ran.returncode == 0, ran.stdout.decode() + ran.stderr.decode()
    # the notebook checks use no fixture of conftest.py, whose imports (livekit's) cost most
    pytest_run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--noconftest", "-q"]
    collected = subprocess.run(
        [*pytest_run, "--collect-only", "tests/test_notebooks.py"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    runs = re.findall(r"test_notebook_runs_offline\[(.+?)\]", collected)
    assert runs == [path.name for path in RUN_HERE], collected
    checks = subprocess.run(
        [*pytest_run, "tests/test_notebooks.py", "-k", "in_git or stored_without_outputs"],
        cwd=clone, capture_output=True, text=True,
    )  # fmt: skip
    assert checks.returncode == 0 and f"{len(SHIPPED) + 1} passed" in checks.stdout, checks.stdout
    assert git(clone, "status", "--porcelain", "--untracked-files=all").count("??") == 0


SHELL_ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
"""make as typed in a shell: not a sub-make of the make running these tests (`make test`'s
jobserver, which it cannot reach, and its --output-sync, which holds output back)"""


HELD_PYTHON = """#!/bin/sh
echo "$@" >> "$0.calls"
until [ -e "$0.released" ]; do sleep 0.1; done
exit 1
"""
"""the interpreter the VideoSDK environment is built with: it records each call, holds until
the test releases it, then fails"""


@pytest.mark.slow  # make's 5 s poll for the build
def test_make_lab_opens_jupyterlab_while_the_videosdk_environment_builds_beside_it(
    tmp_path: Path,
) -> None:
    """Only notebook 07 needs ``.venv-videosdk`` (minutes and 1.4 GB to build): ``make lab``
    starts JupyterLab without waiting for it and builds it in the background, logged. One
    build at a time: a second ``make lab`` meanwhile starts none, ``make test`` waits for it.
    JupyterLab opens with no question about fetching Jupyter's news (shown whenever the
    setting is unset)."""
    clone = clone_with_lab_set_up(tmp_path)
    python = tmp_path / "python"
    python.write_text(HELD_PYTHON)
    python.chmod(0o755)
    calls, released = tmp_path / "python.calls", tmp_path / "python.released"
    builder = clone / ".venv-videosdk" / "build.pid"
    make = ["make", "--no-print-directory", f"PYTHON={python}"]
    waiting: subprocess.Popen[str] | None = None
    try:
        opened = subprocess.run(
            [*make, "lab"], cwd=clone, capture_output=True, text=True, env=SHELL_ENV
        )
        assert opened.returncode == 0, opened.stdout + opened.stderr
        assert (clone / ".venv" / "jupyter-args").is_file()  # JupyterLab started
        assert "tail -f .venv-videosdk/build.log" in opened.stdout
        wait_until(lambda: calls.is_file(), "the VideoSDK environment's build started")
        again = subprocess.run(
            [*make, "lab"], cwd=clone, capture_output=True, text=True, env=SHELL_ENV
        )
        assert again.returncode == 0 and "still being built" in again.stdout, again.stdout
        waiting = subprocess.Popen(  # what make test's VideoSDK suite needs first
            [*make, ".venv-videosdk/.installed"],
            cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=SHELL_ENV,
        )  # fmt: skip
        assert waiting.stdout is not None
        assert "waiting for make lab's build" in waiting.stdout.readline()
    finally:
        released.touch()
        if waiting is not None:
            waited = waiting.communicate(timeout=60)[0]
    wait_until(lambda: not builder.exists(), "the build beside JupyterLab ended")
    assert "-m venv .venv-videosdk" in (clone / ".venv-videosdk" / "build.log").read_text()
    # then make test's build ran: one after the other, never two at once
    assert waiting is not None and waiting.returncode != 0, waited
    assert "-m venv .venv-videosdk" in waited, waited
    assert calls.read_text().splitlines() == ["-m venv .venv-videosdk"] * 2
    # the announcements plugin asks "get notified about official Jupyter news?" while "none"
    notification = lab_setting(clone / ".venv", "@jupyterlab/apputils-extension:notification")
    assert notification["fetchNews"] == "false"


def test_make_lab_videosdk_0_opens_jupyterlab_and_builds_no_videosdk_environment(
    tmp_path: Path,
) -> None:
    """``.venv-videosdk`` is 1.4 GB that only notebook 07 uses: ``VIDEOSDK=0`` leaves it out."""
    clone = clone_with_lab_set_up(tmp_path)
    python = tmp_path / "python"
    python.write_text(HELD_PYTHON)
    python.chmod(0o755)
    opened = subprocess.run(
        ["make", "--no-print-directory", f"PYTHON={python}", "lab", "VIDEOSDK=0"],
        cwd=clone, capture_output=True, text=True, env=SHELL_ENV,
    )  # fmt: skip
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert (clone / ".venv" / "jupyter-args").is_file()  # JupyterLab started
    assert "not building .venv-videosdk (VIDEOSDK=0)" in opened.stdout, opened.stdout
    assert not (clone / ".venv-videosdk").exists()
    assert not (tmp_path / "python.calls").exists()


def lab_setting(venv: Path, plugin: str) -> dict[str, Any]:
    """The settings of JupyterLab's ``plugin`` that ``venv``'s JupyterLab gives its front end
    (its schema's defaults, as the venv's overrides change them; no user's), as
    jupyterlab_server makes them."""
    from jupyterlab.commands import get_app_dir  # type: ignore[import-untyped]
    from jupyterlab_server.settings_utils import get_settings

    app_dir = Path(get_app_dir())
    settings = venv / app_dir.relative_to(sys.prefix) / "settings"
    found, _ = get_settings(
        str(settings), str(app_dir / "schemas"), str(venv / "no-user-settings"), plugin
    )
    defaults = {name: field["default"] for name, field in found["schema"]["properties"].items()}
    return {**defaults, **found["settings"]}


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.05)  # polling a file another process writes: no event to wait on


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", RUN_HERE, ids=lambda p: p.name)
def test_notebook_runs_offline(path: Path) -> None:
    notebook = answered(nbformat.read(path, as_version=4))
    if path.name == "03_teaching_handoffs.ipynb":
        notebook.cells.append(nbformat.v4.new_code_cell(CALLS_03))
    outputs, text = executed_cleanly(notebook, path)
    if path.name == "01_prototype.ipynb":
        assert "You are the Concierge." in text
        assert "You are Billing." in text  # the billing agent spoke after the handoff
        assert "'session': 'reused'" in text
        assert widget_views(outputs) == 4  # state, agent graph, chat, timeline
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 2
    if path.name == "02_handoff_benchmark.ipynb":
        assert "0 failed" in text and "fresh+copied" in text and "truth 6 RTT" in text
        assert widget_views(outputs) == 1  # the benchmark, with its distribution plot
        # two figures besides the view's: the cost vs RTT and the phases per mode (the
        # distributions are not shown twice)
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 2
        tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
        assert len(tables) == 2 and "handoff_ms" in tables[0] and "vs RTT 0:" in tables[0]
        # each mode's handoff phase by phase at one RTT, each beside its truth and the client's
        phases = tables[1]
        assert "handoff phases" in phases and "RTT 50" in phases and "session_update" in phases
        assert 'data-key="truth_ms"' in phases and 'data-key="client_ms"' in phases
        # the session update after a long history, per mode
        assert len(re.findall(r"session_update +\d+\.\d ms", text)) == 3
        # the user's own pair, every mode as asked, each with its truth and excess
        assert len(re.findall(r"ran as asked: True +reply +\d+\.\d ms, truth", text)) == 4
    if path.name == "04_voice.ipynb":
        # a synthesized caller was heard, answered aloud, and handed over by voice
        assert 'You are the Concierge. You said: "hello there".' in text
        assert "You are Billing. How can I help you?" in text
        assert re.search(r"agent Concierge +after \d+ ms", text)  # the caller's wait, measured
        players = [o for o in outputs if "<audio" in o.get("data", {}).get("text/html", "")]
        assert len(players) == 2  # the caller's voice and the agents' recording
        assert widget_views(outputs) == 4  # state, voice, timeline, waterfall
        # where the wait went, phase by phase: the turns' table, livekit's figures beside
        (phases,) = [
            o["data"]["text/html"]
            for o in outputs
            if "na-table" in o.get("data", {}).get("text/html", "")
        ]
        assert "where the wait went" in phases and "end_of_turn" in phases
        assert 'data-key="livekit_ms"' in phases and "unexplained" in phases
        # the same words again in a call with a shorter max_delay, each wait measured
        for name in ("max_delay 2.5 s", "max_delay 1.0 s"):
            assert re.search(rf"{name}: waited \d+ ms \(.*first_audio \d+ ms\)", text), name
    if path.name == "05_checking_agents.ipynb":
        # the failed expectation shown as the notebook's own display, the cell's error after it
        assert "Expectation failed: result.expect.next_event().is_function_call(" in text
        errors = [o for o in outputs if o.output_type == "error"]
        assert [e.ename for e in errors] == ["AssertionError"]  # that cell's, and no other
        assert "It is sunny in Oslo." in text and "judged: pass" in text
        assert "1 failed, 1 passed" in text  # the scenario file under pytest: the suite's verdicts
        assert widget_views(outputs) == 3  # the timelines of the runner and the process, the suite
    if path.name == "06_handoff_races.ipynb":
        # each race ran, its verdict printed and shown on a timeline; the asserts all held
        assert text.count("HAPPENED: ") == 5 and text.count("did not happen: ") == 3
        assert "an activity is already running" in text
        assert "interrupted the model's answer to it" in text  # the Gemini section
        assert widget_views(outputs) == 8  # one timeline per race run
        # each timeline marks where its race showed (or what shows a fixed one did not)
        assert re.findall(r"marked on the timeline: (.+) \((\w+), t=", text) == [
            ("closing session used", "Reception"),
            ("hand-back refused", "Survey"),
            ("Bob's own reply", "Bob"),
            ("ack timed out", "Greeter"),
            ("handoff kept", "Greeter"),
            ("handoff dropped", "Router"),
            ("run completed", "Intake"),
            ("tool reply cut off", "Alice"),
            ("tool reply never came", "Alice"),
        ]
        assert "the task completes instead" in text  # the control, quiet
    if path.name == "03_teaching_handoffs.ipynb":
        # every claim the text makes is an assert cell of its own: reaching the end proves them
        assert "Exercise 1 passed" in text and "Exercise 2 passed" in text
        assert "the handoff waited" in text and "update_chat_ctx timed out" in text
        # a late tool-result ack: later turns answered from a conversation in another order
        assert "the items both hold are in another order" in text
        assert "Weather · model" in text and "<- out of order" in text
        assert widget_views(outputs) == 6  # state, graph, chat, timeline + one per failure call
        # the first call, the one the views at the top show, is still up; the others are not
        assert "calls: call=running held=stopped failing=stopped check=stopped" in text
        assert sum("image/png" in output.get("data", {}) for output in outputs) == 1
        solutions = tagged(notebook, "solution")
        assert len(solutions) == 2  # one per exercise, folded: text, never run by Shift+Enter
        assert all(c.cell_type == "markdown" and "<details>" in c.source for c in solutions)


CALLS_03 = (
    "print('calls:', *(f'{c}={globals()[c].state.value}' for c in "
    "('call', 'held', 'failing', 'check')))"
)
"""run after notebook 03: which of its calls are still up"""


@pytest.mark.timeout(120)
def test_an_unanswered_exercise_fails_its_check_saying_what_is_missing() -> None:
    """As shipped, the exercises are stubs: each check stops Run All with a hint, not a pass."""
    path = ROOT / "notebooks" / "03_teaching_handoffs.ipynb"
    notebook = nbformat.read(path, as_version=4)
    cells = notebook.cells
    exercises = [cells.index(c) for c in tagged(notebook, "exercise")]
    assert len(exercises) == 2
    set_up = [c for c in cells[: heading(notebook, "## 1.")] if c.cell_type == "code"]
    hints = {
        "ThankfulWeather": "Weather kept the caller after 'thanks'",
        "BriefingWeather": "the Greeter came back without what was said to Weather",
    }
    for at in exercises:  # the stub, then its check
        notebook.cells = [*set_up, cells[at], cells[at + 1]]
        with pytest.raises(CellExecutionError) as failed:
            execute(notebook, path)
        name = cells[at].source.split("(")[0].removeprefix("class ")
        # what the learner sees under the cell: a short notice with the hint, no traceback
        shown = str(failed.value).split("------------------")[-1].strip()
        assert shown.startswith(f"Not yet: {hints[name]}") and "\n" not in shown


def executed_cleanly(
    notebook: nbformat.NotebookNode, path: Path
) -> tuple[list[nbformat.NotebookNode], str]:
    """Run ``notebook``; its code cells' outputs and their text, after checking nothing went
    wrong or red in them."""
    execute(notebook, path)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
        for output in outputs
    )
    assert "Traceback" not in text and "never retrieved" not in text  # worker noise stays out
    # nothing in red either: a warning under a cell (a figure's layout giving up) fails it too
    stderr = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert stderr == []
    return outputs, text


def execute(notebook: nbformat.NotebookNode, path: Path) -> None:
    NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": path.parent}}
    ).execute()


def tagged(notebook: nbformat.NotebookNode, tag: str) -> list[nbformat.NotebookNode]:
    return [c for c in notebook.cells if tag in c.metadata.get("tags", [])]


def heading(notebook: nbformat.NotebookNode, prefix: str) -> int:
    return next(
        i
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "markdown" and c.source.startswith(prefix)
    )


def answered(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` with each exercise's stub replaced by the code of its folded solution."""
    solutions = iter(tagged(notebook, "solution"))
    for cell in tagged(notebook, "exercise"):
        solution = next(solutions).source
        cell.source = solution.split("```python\n", 1)[1].split("\n```", 1)[0]
    return notebook


def widget_views(outputs: list[Any]) -> int:
    return sum("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
