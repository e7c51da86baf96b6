"""Notebook 07 in JupyterLab in headless chromium: the LiveKit and the VideoSDK session of the
same handoff drawn side by side by the same views, light and dark."""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import open_notebook, run_all
from .lab import REPO
from .test_timeline_layout_browser import box, overlap
from .themes import in_both_themes

FRAMEWORKS = ("LiveKit", "VideoSDK")


def test_frameworks_notebook_draws_both_sessions_side_by_side(
    lab: tuple[str, Path], page: Page
) -> None:
    base, root = lab
    shutil.copy(REPO / "notebooks" / "07_frameworks.ipynb", root / "07_frameworks.ipynb")
    open_notebook(page, base, "07_frameworks.ipynb")
    run_all(page)
    expect(page.locator(".jp-OutputArea-output[data-mime-type*=error]")).to_have_count(0)

    # each view twice, LiveKit's left of VideoSDK's, side by side in one output
    timelines, states, chats = (
        page.locator(view) for view in (".na-timeline", ".na-state", ".na-chat")
    )
    for views in (timelines, states, chats):
        expect(views).to_have_count(2, timeout=120_000)
        left, right = box(views.nth(0)), box(views.nth(1))
        assert left[2] <= right[0] + 1 and not overlap(left, right), (left, right)

    for i, framework in enumerate(FRAMEWORKS):
        timeline = timelines.nth(i)
        timeline.scroll_into_view_if_needed()
        expect(timeline.locator(".na-lane-label")).to_have_text(["FrontDesk", "Billing"])
        expect(timeline.locator(".na-handoff-arrow")).to_have_count(1)
        expect(timeline.locator(".na-handoff-label")).to_contain_text(["copied"])
        # the session ended: each view says so
        expect(states.nth(i).locator(".na-agent")).to_have_text("Billing")
        expect(states.nth(i).locator(".na-closed")).to_have_text("session closed")
        chat = chats.nth(i)
        expect(chat.locator(".na-line-handoff")).to_contain_text("FrontDesk → Billing")
        expect(chat.locator(".na-line-user_message").first).to_contain_text(
            "Please get the weather, city: Paris"
        )
        expect(chat.locator(".na-chat-status")).to_contain_text("This call has ended.")
        for view in (timeline, states.nth(i), chat):  # under its framework's name
            column = view.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][1]")
            assert column.inner_text().startswith(framework)

    shown = {
        "states": states.first,
        "chats": chats.first,
        "timelines": timelines.first,
    }
    assert in_both_themes(page, ".na-timeline, .na-state, .na-chat", "nb07", shown) == []
