"""The package's top level: a few names, one per task, each importing; the names it held
before keep working one more release, each warning where it lives now."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import notebook_agents
from notebook_agents import NotebookAgentsError
from notebook_agents._displays import SHOWN_AS

MOVED_OFF = sorted(notebook_agents._MOVED_OFF.items())


def test_the_top_level_is_small_and_every_name_in_it_imports() -> None:
    assert len(notebook_agents.__all__) <= 30
    assert not set(notebook_agents.__all__) & set(notebook_agents._MOVED_OFF)
    namespace: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no name of the face is a deprecated one
        exec("from notebook_agents import *", namespace)
    assert set(notebook_agents.__all__) <= set(namespace)
    assert namespace["NotebookAgentsError"] is NotebookAgentsError
    assert set(notebook_agents.__all__) <= set(dir(notebook_agents))


@pytest.mark.parametrize(("name", "where"), MOVED_OFF, ids=[name for name, _ in MOVED_OFF])
def test_a_name_moved_off_the_top_level_still_works_and_says_where_it_lives(
    name: str, where: tuple[str, str]
) -> None:
    module, new_name = where
    with pytest.warns(DeprecationWarning) as caught:
        moved = getattr(notebook_agents, name)
    assert moved is getattr(importlib.import_module(module), new_name)
    assert [str(w.message) for w in caught] == [
        f"`from notebook_agents import {name}` is deprecated and goes in the next release:"
        f" use `from {module} import {new_name}`"
    ]


def test_the_warning_points_at_the_users_import() -> None:
    cell = compile("from notebook_agents import RACES, turn_phases", "<cell 3>", "exec")
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning) as caught:
        exec(cell, namespace)
    assert {w.filename for w in caught} == {"<cell 3>"}
    assert namespace["RACES"] is importlib.import_module("notebook_agents.races").RACES


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'notebook_agents' has no attribute 'Nope'"):
        notebook_agents.Nope  # noqa: B018


def test_the_package_and_the_emulators_command_start_without_livekit_agents() -> None:
    """The face imports each name when it is first used: ``import notebook_agents`` (and so
    the emulator's command, an agent's process) loads no livekit.agents, no widget code."""
    probe = (
        "import sys, notebook_agents, notebook_agents.emulator.cli;"
        "print(sorted(m for m in sys.modules if m.startswith(('livekit.agents', 'anywidget'))))"
    )
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"


def test_a_face_name_first_used_is_its_homes_object() -> None:
    import notebook_agents.runner

    assert notebook_agents.NotebookRunner is notebook_agents.runner.NotebookRunner


def test_each_view_named_for_a_result_type_exists() -> None:
    for kind, (module, name) in SHOWN_AS.items():
        home, _, class_name = kind.rpartition(".")
        assert isinstance(getattr(importlib.import_module(home), class_name), type), kind
        assert callable(getattr(importlib.import_module(module), name)), (module, name)
