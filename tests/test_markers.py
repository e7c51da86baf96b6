"""The markers select what they say (tests/conftest.py's rules, the modules' ``pytestmark``):
every browser test is ``browser``, a kernel test is ``kernel``, and the inner loop
(docs/contributing.md) runs a good share of the suite and none of what it leaves out."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARKERS = ("kernel", "browser", "slow", "voice", "videosdk")
INNER_LOOP_LEAVES_OUT = ("slow", "browser", "kernel", "videosdk")
MAKEFILE = REPO / "Makefile"
CONTRIBUTING = REPO / "docs" / "contributing.md"

# pytest's collection of tests/ in another process, each test's node id with its markers
COLLECT = """
import json, sys
import pytest

class Markers:
    def __init__(self):
        self.of = {}

    def pytest_collection_finish(self, session):
        for item in session.items:
            self.of[item.nodeid] = sorted({mark.name for mark in item.iter_markers()})

markers = Markers()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[markers])
print(json.dumps({"exit": int(code), "markers": markers.of}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def markers_of() -> dict[str, set[str]]:
    collected = subprocess.run(
        [sys.executable, "-c", COLLECT], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    found = json.loads(collected.stderr.strip().splitlines()[-1])
    assert found["exit"] == 0, collected.stdout[-3000:]
    return {node: set(names) for node, names in found["markers"].items()}


def test_the_markers_are_registered_and_a_typo_fails_the_run(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(MARKERS) <= registered
    assert pytestconfig.option.strict_markers


def test_the_inner_loop_is_one_selection_in_the_makefile_the_docs_and_here() -> None:
    """``make quick``'s markers are those the contributing page gives and this module checks."""
    (expression,) = re.findall(r"^INNER_LOOP := (.+)$", MAKEFILE.read_text(), re.MULTILINE)
    assert expression == " and ".join(f"not {marker}" for marker in INNER_LOOP_LEAVES_OUT)
    page = CONTRIBUTING.read_text()
    assert "make quick" in page and f'-m "{expression}"' in page


@pytest.mark.slow  # it collects the whole suite, in a process of its own
def test_every_browser_test_is_marked_browser_and_nothing_else_is(
    markers_of: dict[str, set[str]],
) -> None:
    for node, names in markers_of.items():
        assert ("browser" in names) == node.startswith("tests/browser/"), node


@pytest.mark.slow
def test_a_test_starting_a_kernel_is_marked_kernel(markers_of: dict[str, set[str]]) -> None:
    assert "kernel" in markers_of["tests/runner/test_runner_kernel.py::test_drain_is_never_awaited"]
    # through a helper another test module defines (nbclient's NotebookClient, in a kernel)
    notebook = "tests/test_notebooks.py::test_notebook_runs_offline[01_prototype.ipynb]"
    assert "kernel" in markers_of[notebook]
    # one test of a module that starts a Kernel, not its neighbours
    gemini = "tests/emulator/test_gemini_live.py::test_{}"
    assert (
        "kernel"
        in markers_of[
            gemini.format("a_kernel_shut_down_with_its_emulator_running_leaves_no_ca_file")
        ]
    )
    assert "kernel" not in markers_of[gemini.format("the_round_trip_delays_every_exchange")]


@pytest.mark.slow
def test_each_marker_selects_tests_and_the_inner_loop_a_good_share_of_them(
    markers_of: dict[str, set[str]],
) -> None:
    # the VideoSDK tests are collected only where the videosdk extra is installed
    expected = [m for m in MARKERS if m != "videosdk" or importlib.util.find_spec("videosdk")]
    for marker in expected:
        assert any(marker in names for names in markers_of.values()), marker
    inner_loop = [n for n, names in markers_of.items() if not names & set(INNER_LOOP_LEAVES_OUT)]
    assert not any(node.startswith("tests/browser/") for node in inner_loop)
    assert len(inner_loop) >= len(markers_of) // 2, (len(inner_loop), len(markers_of))
