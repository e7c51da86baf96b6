"""The wheel carries the front-end widgets/ folder inside the package."""

from __future__ import annotations

import zipfile
from pathlib import Path

from hatchling.builders.wheel import WheelBuilder

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_widgets_and_the_console_script(tmp_path: Path) -> None:
    wheel = next(
        iter(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"]))
    )
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        scripts = archive.read(entry_points).decode()
    assert "notebook_agents/widgets/README.md" in names
    assert {"notebook_agents/widgets/state_view.js", "notebook_agents/widgets/views.css"} <= names
    assert "notebook_agents/emulator/openai_realtime/connection.py" in names
    assert "notebook-agents = notebook_agents.__main__:main" in scripts
    # pytest finds the scenarios-file plugin in an installed wheel by itself
    assert "[pytest11]\npytest_notebook_agents = pytest_notebook_agents" in scripts
    assert "pytest_notebook_agents.py" in names
    assert "notebook_agents/widgets/suite_view.js" in names
