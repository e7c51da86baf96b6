"""Where the front-end modules live: ``notebook_agents/widgets`` in a wheel, ``widgets/`` here."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def widgets_dir() -> Path:
    installed = _PACKAGE / "widgets"
    return installed if installed.is_dir() else _PACKAGE.parent / "widgets"


def asset(name: str) -> Path:
    """A file of the front end, e.g. ``asset("state_view.js")``; it must exist."""
    path = widgets_dir() / name
    if not path.is_file():
        # a broken install or build, not a caller's doing
        raise FileNotFoundError(f"front-end file {name} is missing from {widgets_dir()}")
    return path


def joined_modules(*names: str) -> str:
    """Front-end files as one ES module (a view's ``_esm``): parts shared by several views
    (``scenario_form.js``) first, the view's own module, with its default export, last."""
    return "\n".join(asset(name).read_text() for name in names)
