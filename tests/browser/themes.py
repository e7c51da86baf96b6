"""A view's screenshots in JupyterLab's light and dark theme, with what does not read in either
(as test_theme_browser measures it), for the browser tests of single views."""

from __future__ import annotations

from playwright.sync_api import Locator, Page

from .conftest import next_frame, screenshot
from .lab import ARTIFACTS
from .test_theme_browser import MEASURE, problems, set_theme

THEMES = (("JupyterLab Light", "white", "light"), ("JupyterLab Dark", "#111", "dark"))
"""JupyterLab's name of each theme, its --jp-layout-color0, and the screenshots' suffix"""


def in_both_themes(
    page: Page, views: str, name: str, cells: dict[str, Locator] | None = None
) -> list[str]:
    """Screenshot the page as ``name_light`` and ``name_dark`` (or, given ``cells``, the
    notebook cell around each, as ``name_<key>_light``...); return, one line each, what of
    the ``views`` (a selector) does not read or follow the theme. Ends in the light theme."""
    found: list[str] = []
    try:
        for theme, color0, suffix in THEMES:
            set_theme(page, theme, color0)
            next_frame(page)  # a redraw already asked for is on the page
            measured = page.evaluate(MEASURE, views)
            assert measured["views"] >= 1, f"no {views} on the page"
            found += problems(theme, measured, dark=suffix == "dark")
            if cells is None:
                screenshot(page, f"{name}_{suffix}")
            for key, shown in (cells or {}).items():
                cell = shown.locator("xpath=ancestor::div[contains(@class, 'jp-Cell ')][1]")
                cell.scroll_into_view_if_needed()
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                cell.screenshot(path=str(ARTIFACTS / f"{name}_{key}_{suffix}.png"))
    finally:
        set_theme(page, "JupyterLab Light", "white")  # the lab serves the other tests too
    return found
