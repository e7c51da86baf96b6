"""pytest run as a user runs it: in a subprocess, on a folder of theirs, with the package's
plugin; what each test gave, read from its JUnit report."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIVEKIT_SERVER = ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET")
"""a LiveKit server's settings: a test's agents run offline, without them"""
_OUTCOMES = {"failure": "failed", "error": "error", "skipped": "skipped"}
_XDIST_WORKER = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")
"""what pytest-xdist tells a worker: a user's run started from one (``make quick``) is not"""


@dataclass(frozen=True)
class Reported:
    """One test's outcome (passed, failed, error, skipped) and its failure's message."""

    outcome: str
    message: str = ""


def pytest_in_subprocess(
    folder: Path,
    *paths: Path,
    env: Mapping[str, str] | None = None,
    unset: Iterable[str] = LIVEKIT_SERVER,
    options: Iterable[str] = (),
    timeout: float = 180,
) -> tuple[dict[str, Reported], str]:
    """pytest on ``folder`` (or ``paths`` in it), with ``options``, its rootdir and the
    conftest.py it may hold the only ones: each test by name, and what pytest printed."""
    report = folder / "report.xml"
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), environment.get("PYTHONPATH")])
    )
    for name in (*unset, *_XDIST_WORKER):
        environment.pop(name, None)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "pytest_notebook_agents"),
            *("-p", "no:cacheprovider", "--rootdir", str(folder), "-q"),
            *(f"--junitxml={report}", "--confcutdir", str(folder), *options),
            *(str(path) for path in (paths or (folder,))),
        ],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    printed = done.stdout + done.stderr
    assert report.exists(), printed
    reported = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        found = [child for child in case if child.tag in ("failure", "error", "skipped")]
        reported[case.attrib["name"]] = (
            Reported(_OUTCOMES[found[0].tag], found[0].attrib.get("message", ""))
            if found
            else Reported("passed")
        )
    return reported, printed
