"""LocalDevices: the machine's microphone and speaker through sounddevice (PortAudio), on a
real PortAudio device: JACK's dummy backend, a sound card without hardware. A caller's voice
is played into the agent's microphone port; the agent's speaker port is recorded."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from notebook_agents import NotebookRunner
from notebook_agents.devices import DeviceError, LocalDevices, sounddevice_module
from notebook_agents.emulator import Emulator
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.resampling import resample
from notebook_agents.trace import TraceEvent
from tests.runner.test_runner_voice import GreetingConcierge, voice_server

JACK_RATE = 48_000


def _jack(tool: str, server: str, *args: str) -> str:
    done = subprocess.run([tool, "-s", server, *args], capture_output=True, text=True, timeout=10)
    return done.stdout


@pytest.fixture(scope="module")
def jack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JACK server of our own on the dummy backend, PortAudio's default for this process."""
    jackd = shutil.which("jackd")
    if jackd is None:
        pytest.fail("the device tests need JACK: sudo apt-get install jackd2 libportaudio2")
    name = f"notebook-agents-{os.getpid()}"
    log = (tmp_path_factory.mktemp("jack") / "jackd.log").open("w")
    server = subprocess.Popen(
        [jackd, "-n", name, "--no-realtime", "-d", "dummy", "-r", str(JACK_RATE), "-p", "960"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while "system:playback_1" not in _jack("jack_lsp", name):
        assert server.poll() is None, f"jackd exited: see {log.name}"
        assert time.monotonic() < deadline, "jackd did not start within 10 s"
        time.sleep(0.05)  # polling a server that starts on its own, not a synchronization
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JACK_DEFAULT_SERVER", name)
        sd = sounddevice_module()
        sd._terminate()  # PortAudio finds JACK's device only when it starts
        sd._initialize()
        try:
            yield name
        finally:
            sd._terminate()
            server.terminate()
            server.wait(10)
            log.close()
            sd._initialize()


def _new_ports(server: str, before: set[str]) -> dict[str, str]:
    """The ports registered since ``before``: ``{"in": name, "out": name}``."""
    now = set(_jack("jack_lsp", server).split()) - before
    return {
        "in": next(p for p in now if ":in_" in p),
        "out": next(p for p in now if ":out_" in p),
    }


@pytest.mark.slow
async def test_a_call_through_the_machines_microphone_and_speaker(
    jack: str, emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    sd = sounddevice_module()
    runner = NotebookRunner(voice_server(emulator, GreetingConcierge), audio=True)
    runners.append(runner)
    events: dict[str, asyncio.Event] = {k: asyncio.Event() for k in ("greeted", "handed")}

    def on_event(event: TraceEvent) -> None:
        greeted = event.kind == "agent_state" and event.data["old"] == "speaking"
        if greeted:  # the greeting is over: the caller may speak
            events["greeted"].set()
        if event.kind == "handoff" and event.data["from"]:
            events["handed"].set()

    runner.trace.subscribe(on_event)  # (a trace records once the runner starts)
    before = set(_jack("jack_lsp", jack).split())
    with LocalDevices(runner) as devices:
        agent = _new_ports(jack, before)
        # the test's own ends of the line: a caller speaking, a recorder listening
        caller = np.concatenate(
            [resample(synthesize("transfer to billing please"), SAMPLE_RATE, JACK_RATE),
             np.zeros(JACK_RATE * 3, np.int16)]
        )  # fmt: skip
        said = {"at": 0, "go": False}
        recorded: list[np.ndarray] = []

        def speak(out: np.ndarray, frames: int, _t: Any, _s: Any) -> None:
            start = said["at"]
            chunk = caller[start : start + frames] if said["go"] else caller[:0]
            out[: chunk.size, 0], out[chunk.size :, 0] = chunk, 0
            said["at"] = start + chunk.size

        def record(data: np.ndarray, _f: int, _t: Any, _s: Any) -> None:
            recorded.append(data[:, 0].copy())

        mouth = sd.OutputStream(samplerate=JACK_RATE, channels=1, dtype="int16", callback=speak)
        ear = sd.InputStream(samplerate=JACK_RATE, channels=1, dtype="int16", callback=record)
        line_before = before | set(agent.values())
        with mouth, ear:
            line = _new_ports(jack, line_before)
            _jack("jack_connect", jack, line["out"], agent["in"])  # the caller's voice -> mic
            _jack("jack_connect", jack, agent["out"], line["in"])  # speaker -> the recorder
            runner.start()  # the line is up: the call begins, with the agent's greeting
            await runner.ready()
            await asyncio.wait_for(events["greeted"].wait(), 30)
            said["go"] = True  # the caller speaks once the greeting is over
            await asyncio.wait_for(events["handed"].wait(), 30)
        was_running = devices.running
    assert was_running and not devices.running

    heard = [e.data["text"] for e in runner.trace.of_kind("user_transcript") if e.data["final"]]
    assert heard == ["transfer to billing please"]
    (handoff,) = [h for h in runner.trace.of_kind("handoff") if h.data["from"]]
    assert (handoff.data["from"], handoff.data["to"]) == ("GreetingConcierge", "Billing")
    # the greeting came out of the speaker port: as long as the recording of it, not silence
    out_of_speaker = np.concatenate(recorded)
    loud = np.abs(out_of_speaker.astype(np.int32)) > 1000
    greeting_s = runner.recording.replies[0].size / SAMPLE_RATE
    assert loud.sum() / JACK_RATE > 0.3 * greeting_s


def test_without_sounddevice_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)
    with pytest.raises(DeviceError, match=r"pip install 'notebook-agents\[audio\]'"):
        sounddevice_module()


def test_without_portaudio_the_error_names_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As sounddevice fails on a machine without the library: OSError at import."""
    (tmp_path / "sounddevice.py").write_text('raise OSError("PortAudio library not found")\n')
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DeviceError, match=r"apt-get install libportaudio2.*VoiceView"):
        sounddevice_module()


def test_a_device_that_does_not_exist_leaves_nothing_open(
    jack: str, emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(voice_server(emulator), audio=True)
    devices = LocalDevices(runner, microphone="no such microphone")
    with pytest.raises(DeviceError, match="could not open"):
        devices.start()
    assert not devices.running
