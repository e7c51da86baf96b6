"""VoiceView in the kernel: it needs a runner with a microphone, forwards the browser's
binary microphone buffers to it, and sends the agent's audio back as binary buffers."""

from __future__ import annotations

import numpy as np
import pytest

from notebook_agents import NotebookRunner, RunnerError
from notebook_agents.emulator import Emulator
from notebook_agents.views import VoiceView

from .test_runner_voice import voice_server


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
