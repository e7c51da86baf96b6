"""VoiceView in the kernel: it needs a runner with a microphone, forwards the browser's
binary microphone buffers to it, and sends the agent's audio back as binary buffers; in push
to talk the caller's turn lasts from press to release."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import pytest

from notebook_agents import NotebookRunner, RunnerError
from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, Line, Noise, Telephone, synthesize
from notebook_agents.speech.line import PRESETS
from notebook_agents.trace import Trace, TraceEvent
from notebook_agents.views import ChatView, VoiceView
from tests.conftest import started
from tests.runner.test_runner_voice import realtime_voice_server, voice_server


def test_a_runner_without_a_microphone_is_refused_naming_the_fix(emulator: Emulator) -> None:
    with pytest.raises(RunnerError, match=r"NotebookRunner\(server, audio=True\)"):
        VoiceView(NotebookRunner(voice_server(emulator)))


def test_the_agents_audio_goes_to_the_browser_as_binary_buffers(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = NotebookRunner(voice_server(emulator), audio=True)
    view = VoiceView(runner)
    sent: list[tuple[dict[str, str], list[bytes] | None]] = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append((content, buffers)))
    reply = np.arange(480, dtype=np.int16)
    for listener in runner._agent_audio_listeners:
        listener(reply)
        listener(None)
    assert sent == [({"kind": "agent_audio"}, [reply.tobytes()]), ({"kind": "cut"}, None)]
    view.close()
    assert runner._agent_audio_listeners == []  # closed: it no longer listens


async def speak_live(view: VoiceView, samples: np.ndarray) -> None:
    """As the browser's microphone streams it: 20 ms buffers as they are spoken."""
    for chunk in np.array_split(samples, max(samples.size // 480, 1)):
        view._on_front_end(view, {"kind": "microphone"}, [chunk.tobytes()])
        await asyncio.sleep(0.02)  # the pace a microphone delivers at, not a synchronization


async def first(trace: Trace, wanted: Callable[[TraceEvent], bool]) -> TraceEvent:
    """The first event of ``trace``, recorded already or from now on, that is ``wanted``."""
    loop = asyncio.get_running_loop()
    found: asyncio.Future[TraceEvent] = loop.create_future()

    def settle(event: TraceEvent) -> None:
        if not found.done():
            found.set_result(event)

    def on_event(event: TraceEvent) -> None:
        if wanted(event):
            loop.call_soon_threadsafe(settle, event)

    stop = trace.subscribe(on_event)
    try:
        for event in trace.events:
            on_event(event)
        return await asyncio.wait_for(found, 30)  # a bound on failure, not a sync
    finally:
        stop()


@pytest.mark.slow
async def test_push_to_talk_ends_the_turn_on_release_not_on_a_pause(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """Held through a pause four times the VAD's: nothing is answered until the button is let
    go, then the whole turn is, every word of it; then the session ends turns on its own again.
    The view's heard line shows each stretch of speech as it is transcribed, then the whole
    turn (before: the last stretch only, "thank you")."""
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    view = VoiceView(runner)  # push to talk
    shown: list[str] = []
    view.observe(lambda change: shown.append(change["new"]), names="heard")
    quiet = np.zeros(SAMPLE_RATE * 2, np.int16)
    view._on_front_end(view, {"kind": "pressed"}, [])
    await speak_live(view, np.concatenate([synthesize("hello there"), quiet]))
    # the VAD heard the caller stop (2 s of the pause were spoken after the words: a turn
    # would have ended), and its words are in: the button is held
    await first(runner.trace, lambda e: e.kind == "user_state" and e.data["old"] == "speaking")
    await first(runner.trace, lambda e: e.kind == "user_transcript")
    await speak_live(view, synthesize("thank you"))
    released = runner.trace.now()
    view._on_front_end(view, {"kind": "released"}, [])
    said = await first(runner.trace, lambda e: e.kind == "user_message")
    assert said.t > released, f"a turn ended {released - said.t:.1f} s before the release"
    assert said.data["text"] == "hello there thank you"
    stretches = [e.data["text"] for e in runner.trace.of_kind("user_transcript")]
    assert stretches == ["hello there", "thank you"]  # one final transcript each
    assert shown == ["hello there", "hello there thank you"] and view.heard == said.data["text"]
    reply = await first(runner.trace, lambda e: e.kind == "agent_message")
    assert reply.data["text"] == 'You are the Concierge. You said: "hello there thank you".'
    # the session's own turn detection is back: a spoken turn from a cell ends on its own
    assert await runner.send_audio(synthesize("thank you")) == (
        'You are the Concierge. You said: "thank you".'
    )
    view.close()


async def test_the_end_of_the_call_says_what_works_as_the_chat_box_does(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """Before: "start the runner again to talk", but start() on a stopped runner raises."""
    runner = await started(runners, NotebookRunner(voice_server(emulator), audio=True))
    voice, chat = VoiceView(runner), ChatView(runner)
    runner.stop()
    await first(runner.trace, lambda e: e.kind == "closed")
    assert (
        voice.ended
        == chat.ended
        == ("This call has ended. Start a new call (a new runner) to talk to the agent again.")
    )
    with pytest.raises(RunnerError):
        runner.start()
    voice.close()
    chat.close()


async def test_push_to_talk_on_a_realtime_model_that_ends_turns_itself_names_the_fix(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(realtime_voice_server(emulator), audio=True))
    view = VoiceView(runner)
    view._on_front_end(view, {"kind": "pressed"}, [])
    assert 'turn_detection="manual"' in view.error and "open microphone" in view.error
    view.close()


def test_the_lines_to_choose_are_named_by_the_kernel_and_the_choice_is_the_runners(
    emulator: Emulator,
) -> None:
    runner = NotebookRunner(voice_server(emulator), audio=True)
    view = VoiceView(runner)
    assert view.lines == list(PRESETS) and view.line == "clean"
    view.line = "telephone (8 kHz mu-law)"  # as the browser sets it
    assert runner.conditions == Line(Telephone())
    assert runner.trace.caller_conditions == [{"telephone": {}}]
    view.line = "no such line"
    assert view.error.startswith("no line 'no such line': the lines are clean, café")
    assert runner.conditions == Line(Telephone())
    view.close()
    # a runner's own line is the first choice, named as it reads; lines given are the others
    runner.conditions = Noise(5, "white")
    own = VoiceView(runner, lines={"quiet": [], "phone": Telephone()})
    assert own.lines == ["white noise at 5 dB SNR", "quiet", "phone"]
    assert own.line == "white noise at 5 dB SNR"
    own.line = "quiet"
    assert runner.conditions == Line()
    own.close()
