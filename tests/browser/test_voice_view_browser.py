"""VoiceView in JupyterLab in headless chromium, with a fake microphone that says "transfer
to billing please": the spoken request hands the call over, and the agent's reply plays. Held
down, push to talk keeps the turn open through the microphone's pauses until it is let go; its
button keeps its width whatever it says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect, sync_playwright

from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes

from .cells import AGENTS
from .conftest import hover_until, run_notebook, screenshot
from .lab import ARTIFACTS, launch_chromium
from .test_theme_browser import set_theme
from .themes import THEMES, in_both_themes

CELLS = [
    AGENTS
    + """from livekit.plugins import silero
from notebook_agents.views import VoiceView

URL = emulator.base_url()


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    session = AgentSession(
        vad=silero.VAD.load(),
        stt=openai.STT(base_url=URL, api_key="offline"),
        llm=openai.LLM(base_url=URL, api_key="offline"),
        tts=openai.TTS(base_url=URL, api_key="offline"),
    )
    await session.start(agent=Concierge(greets=True), room=ctx.room)""",
    """runner = NotebookRunner(server, audio=True).start()
await runner.ready()
voice = VoiceView(runner, mode="open_mic")
voice""",
    """from notebook_agents.views import TimelineView

TimelineView(runner.trace)""",
]


REQUEST = synthesize("transfer to billing please")
QUIET_S = 2.0
"""the fake microphone's pause before and after the request"""


@pytest.fixture
def fake_microphone(tmp_path: Path) -> Path:
    """What chromium's fake microphone says, over and over: a pause, the request, a pause."""
    quiet = np.zeros(round(SAMPLE_RATE * QUIET_S), np.int16)
    spoken = np.concatenate([quiet, REQUEST, quiet])
    path = tmp_path / "caller.wav"
    path.write_bytes(wav_bytes(spoken, SAMPLE_RATE))
    return path


@pytest.fixture
def voice_page(fake_microphone: Path) -> Iterator[Page]:
    """A page of a chromium whose microphone is the fake one, allowed without asking."""
    with sync_playwright() as playwright:
        browser = launch_chromium(
            playwright,
            "--use-fake-ui-for-media-stream",
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={fake_microphone}",
            "--autoplay-policy=no-user-gesture-required",
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        browser.close()
        assert errors == [], "the browser reported errors"


def test_a_spoken_request_hands_over_and_the_reply_plays(
    lab: tuple[str, Path], voice_page: Page
) -> None:
    page = voice_page
    run_notebook(page, lab, "voice.ipynb", CELLS)
    voice = page.locator(".na-voice")
    # the greeting, before any click: the microphone is closed until one
    expect(voice.locator(".na-voice-line-said")).to_contain_text(
        "You are the Concierge.", timeout=60_000
    )
    button = voice.locator(".na-voice-button")
    expect(button).to_have_attribute("aria-pressed", "false")

    button.click()
    expect(button).to_have_attribute("aria-pressed", "true")
    shows_the_request_while_it_is_said(page)
    expect(voice.locator(".na-voice-line-heard")).to_contain_text(
        "transfer to billing please", timeout=60_000
    )
    expect(voice.locator(".na-voice-line-agent")).to_contain_text("Billing", timeout=30_000)
    expect(voice.locator(".na-voice-line-said")).to_contain_text("You are Billing.", timeout=30_000)
    # the reply reached the speaker: its analyser hears more than silence
    agent_level = "document.querySelector('.na-voice-meter.na-voice-agent').dataset.level"
    page.wait_for_function(f"() => Number({agent_level}) > 0.01", timeout=30_000)
    # the timeline shows who spoke when, the words on hover
    timeline = page.locator(".na-timeline")
    caller = timeline.locator('.na-speech[data-speaker="user"]').first
    expect(caller).to_be_visible()
    expect(timeline.locator('.na-speech[data-speaker="agent"]').first).to_be_visible()
    # found where it is drawn at each try: the live view draws its bars anew as it redraws
    hover_until(page, caller, timeline.locator(".na-tooltip"), "“transfer to billing please”")
    screenshot(page, "voice_view_live")
    assert in_both_themes(page, ".na-voice", "voice_view") == []
    while_the_request_is_said_in_both_themes(page)

    button.click()  # open mic: a second click closes it
    expect(button).to_have_attribute("aria-pressed", "false")


RECORD_LEVELS = """async (ms) => {
  const you = document.querySelector('.na-voice-meter.na-voice-you');
  const shown = [];
  const start = performance.now();
  while (performance.now() - start < ms) {
    await new Promise(requestAnimationFrame);
    shown.push([(performance.now() - start) / 1000, Number(you.dataset.level)]);
  }
  return shown;
}"""
"""the level the "you" meter shows at each frame for ``ms`` milliseconds: [[seconds, level]]"""


def shows_the_request_while_it_is_said(page: Page) -> None:
    """Over one pass of the fake microphone (the request between its pauses), the "you" meter
    shows the request's level all the while it is said, not a flicker down to empty between
    its syllables, and on the scale of the request's RMS (float samples, full scale 1.0)."""
    level = float(np.sqrt(np.mean((REQUEST / 32768.0) ** 2)))
    seconds = REQUEST.size / SAMPLE_RATE
    shown = np.array(page.evaluate(RECORD_LEVELS, round((seconds + 2 * QUIET_S + 1) * 1000)))
    heard = shown[shown[:, 1] > 0.3 * level, 0]
    assert heard.size, f"the meter never showed the request (its level {level:.3f})"
    # the first time the request was said: up to the first second of quiet after it
    quiet_after = np.flatnonzero(np.diff(heard) > 1.0)
    end = heard[quiet_after[0]] if quiet_after.size else heard[-1]
    said = shown[(shown[:, 0] >= heard[0]) & (shown[:, 0] <= end)]
    assert end - heard[0] > 0.8 * seconds, f"shown for {end - heard[0]:.2f} s of {seconds:.2f}"
    assert said[:, 1].min() > 0.3 * level, (
        f"while the request was said the meter fell to {said[:, 1].min():.3f} "
        f"(its level {level:.3f}): {np.round(said[:, 1], 3).tolist()}"
    )
    # a meter follows the peaks (and chromium's gain control lifts a quiet microphone): above
    # the request's mean level, on its scale (not int16's, not percent, not dB)
    assert 0.5 * level < np.median(said[:, 1]) < 5 * level


def while_the_request_is_said_in_both_themes(page: Page) -> None:
    """The view as the fake microphone says the request again, its "you" meter up, in each
    theme (``voice_view_you_speaking_light`` and ``_dark``). Ends in the light theme."""
    you = "Number(document.querySelector('.na-voice-meter.na-voice-you').dataset.level)"
    try:
        for theme, color0, suffix in THEMES:
            set_theme(page, theme, color0)
            # the microphone's next pass: it says the request every few seconds
            page.wait_for_function(f"() => {you} > 0.1", timeout=30_000)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            path = ARTIFACTS / f"voice_view_you_speaking_{suffix}.png"
            page.locator(".na-voice").screenshot(path=str(path))
    finally:
        set_theme(page, "JupyterLab Light", "white")


PUSH_TO_TALK = [
    CELLS[0],
    """runner = NotebookRunner(server, audio=True).start()
await runner.ready()
VoiceView(runner)""",
    """from notebook_agents.views import StateView

StateView(runner.trace)""",
]


def width_and_neighbour(page: Page) -> tuple[float, float]:
    """The push-to-talk button's width and where the control after it starts."""
    found = page.evaluate(
        """() => [document.querySelector('.na-voice-button').getBoundingClientRect().width,
                  document.querySelector('.na-voice-mode').getBoundingClientRect().left]"""
    )
    return float(found[0]), float(found[1])


def test_push_to_talk_holds_the_turn_through_pauses_until_let_go(
    lab: tuple[str, Path], voice_page: Page
) -> None:
    page = voice_page
    run_notebook(page, lab, "push_to_talk.ipynb", PUSH_TO_TALK)
    voice, user = page.locator(".na-voice"), page.locator(".na-state .na-user-state")
    said, agent = voice.locator(".na-voice-line-said"), voice.locator(".na-voice-line-agent")
    expect(said).to_contain_text("You are the Concierge.", timeout=60_000)
    button = voice.locator(".na-voice-button")
    expect(button).to_have_accessible_name("hold to talk")
    at_rest = width_and_neighbour(page)

    button.hover()
    page.mouse.down()
    expect(button).to_have_attribute("aria-pressed", "true")
    expect(button).to_have_accessible_name("listening… let go to send")
    assert width_and_neighbour(page) == at_rest, "the button changed width as its label did"
    # the request, then 4 s of quiet (the fake microphone's pause, and its next pass), then
    # the request again: a turn ended by silence would have been answered long before
    for state in ("speaking", "listening", "speaking"):
        expect(user).to_have_text(state, timeout=30_000)
    expect(agent).to_contain_text("Concierge")
    expect(said).to_contain_text("You are the Concierge.")
    expect(page.locator(".na-state .na-agent-state")).to_have_text("listening")
    screenshot(page, "voice_view_push_to_talk_held")
    page.mouse.up()  # let go: the turn ends here, and is answered
    expect(button).to_have_attribute("aria-pressed", "false")
    expect(agent).to_contain_text("Billing", timeout=30_000)
    expect(said).to_contain_text("You are Billing.", timeout=30_000)
    assert width_and_neighbour(page) == at_rest

    # open mic says other things: still the same width
    voice.locator(".na-voice-mode").select_option("open_mic")
    expect(button).to_have_accessible_name("talk")
    assert width_and_neighbour(page) == at_rest
    assert in_both_themes(page, ".na-voice", "voice_view_push_to_talk") == []
