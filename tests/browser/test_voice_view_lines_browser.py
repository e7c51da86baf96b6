"""VoiceView's line selector in JupyterLab in headless chromium: the kernel names the lines
your voice may cross, the page draws them, and the one chosen there is the runner's
``conditions`` (what ``hear`` passes the microphone through)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from notebook_agents.speech.line import PRESETS

from .conftest import run_cell, run_notebook, screenshot
from .test_voice_view_browser import CELLS
from .themes import in_both_themes

LINES = [
    CELLS[0],
    """from notebook_agents.speech import Noise, Telephone

runner = NotebookRunner(server, audio=True).start()
await runner.ready()
runner.conditions = [Noise(15, "road"), Telephone()]
VoiceView(runner)""",
]


def test_the_line_chosen_on_the_page_is_the_runners(lab: tuple[str, Path], page: Page) -> None:
    run_notebook(page, lab, "voice_lines.ipynb", LINES)
    select = page.locator(".na-voice .na-voice-conditions")
    # the runner's own line first, named as it reads, chosen; then the presets
    own = "road noise at 15 dB SNR, telephone (8 kHz mu-law)"
    expect(select).to_have_value(own, timeout=60_000)
    options = select.locator("option")
    expect(options).to_have_text([own, *PRESETS])
    view = {"view": page.locator(".na-voice")}
    assert in_both_themes(page, ".na-voice", "voice_view_lines", view) == []

    select.select_option("café (babble, 10 dB SNR)")
    run_cell(page, "print(runner.conditions, runner.trace.caller_conditions)")
    expect(page.locator(".jp-OutputArea-output").last).to_contain_text(
        "babble noise at 10 dB SNR [{'noise': {'snr_db': 10, 'kind': 'babble', 'seed': 0}}]",
        timeout=30_000,
    )
    expect(select).to_have_value("café (babble, 10 dB SNR)")
    select.scroll_into_view_if_needed()
    screenshot(page, "voice_view_lines_chosen")
