"""The kernel machine's own microphone and speaker on a runner's session, through
``sounddevice`` (PortAudio): ``pip install notebook-agents[audio]``.

The microphone streams into the session as it records (``runner.hear``); the agent's replies
play as they are given (``runner.on_agent_audio``), cut when the caller barges in. Either
side is optional. For a kernel without a sound card (a remote one), use ``VoiceView``.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from typing_extensions import Self

from ._lifecycle import StartStop
from .errors import NotebookAgentsError
from .runner import NotebookRunner, RunnerError
from .speech import SAMPLE_RATE
from .speech.resampling import ResampleStream

BLOCK_S = 0.02
"""what the microphone delivers at a time, and the speaker asks for: 20 ms"""


class DeviceError(NotebookAgentsError, RuntimeError):
    """The audio devices cannot be used; the message names the fix."""


def sounddevice_module() -> Any:
    """``sounddevice``, or a ``DeviceError`` that says what to install."""
    try:
        import sounddevice
    except ImportError:
        raise DeviceError(
            "local audio needs sounddevice: pip install 'notebook-agents[audio]'"
        ) from None
    except OSError as e:  # sounddevice is there, the PortAudio library is not
        raise DeviceError(
            f"local audio needs the PortAudio library ({e}): on Debian or Ubuntu "
            "`sudo apt-get install libportaudio2`, on macOS `brew install portaudio`; "
            "or talk through the browser with VoiceView(runner)"
        ) from None
    return sounddevice


class LocalDevices(StartStop):
    """A microphone and a speaker of this machine on ``runner``'s session.

    ``microphone`` / ``speaker``: a device number or name as ``sounddevice.query_devices()``
    lists them, None for the default, or False for none.
    """

    def __init__(
        self,
        runner: NotebookRunner,
        *,
        microphone: int | str | bool | None = None,
        speaker: int | str | bool | None = None,
    ) -> None:
        self.runner = runner
        self.microphone = microphone
        self.speaker = speaker
        self._streams: list[Any] = []
        self._stop_listening: Callable[[], None] = _nothing
        self._microphone_rate = SAMPLE_RATE
        self._queued: collections.deque[np.ndarray] = collections.deque()
        self._lock = threading.Lock()
        self._resampler: ResampleStream | None = None

    @property
    def running(self) -> bool:
        return bool(self._streams)

    def start(self) -> Self:
        """Open the devices; a ``DeviceError`` names what is missing, and nothing stays open."""
        sd = sounddevice_module()
        if self.running:
            return self
        try:
            if self.microphone is not False:
                stream = _mono_stream(sd.InputStream, sd, self.microphone, self._recorded)
                self._microphone_rate = int(stream.samplerate)
                self._streams.append(stream)
            if self.speaker is not False:
                stream = _mono_stream(sd.OutputStream, sd, self.speaker, self._play)
                self._resampler = ResampleStream(SAMPLE_RATE, int(stream.samplerate))
                self._streams.append(stream)
                self._stop_listening = self.runner.on_agent_audio(self._given)
            for stream in self._streams:
                stream.start()
        except (sd.PortAudioError, ValueError, RunnerError) as e:
            self.stop()
            raise DeviceError(f"the audio devices could not open: {e}") from None
        return self

    def stop(self) -> None:
        """Close the devices; safe to call again."""
        self._stop_listening()
        self._stop_listening = _nothing
        streams, self._streams = self._streams, []
        for stream in streams:
            stream.close()
        with self._lock:
            self._queued.clear()

    def _recorded(self, samples: np.ndarray, frames: int, time: Any, status: Any) -> None:
        """PortAudio's thread: the microphone's block, into the session."""
        with contextlib.suppress(RunnerError):  # the call ended: the block goes nowhere
            self.runner.hear(samples[:, 0].copy(), self._microphone_rate)

    def _given(self, samples: np.ndarray | None) -> None:
        """The session's thread: the agent's reply to play, or None to cut it."""
        if samples is None:
            with self._lock:
                self._queued.clear()
            return
        assert self._resampler is not None  # made with the speaker's stream
        played = self._resampler.push(samples)
        with self._lock:
            self._queued.append(played)

    def _play(self, out: np.ndarray, frames: int, time: Any, status: Any) -> None:
        """PortAudio's thread: fill the speaker's block from what the agent gave, else silence."""
        filled = 0
        with self._lock:
            while filled < frames and self._queued:
                chunk = self._queued[0]
                take = min(frames - filled, chunk.size)
                out[filled : filled + take, 0] = chunk[:take]
                filled += take
                if take == chunk.size:
                    self._queued.popleft()
                else:
                    self._queued[0] = chunk[take:]
        out[filled:, 0] = 0


def _nothing() -> None:
    pass


def _mono_stream(
    kind: Any, sd: Any, choice: int | str | bool | None, callback: Callable[..., None]
) -> Any:
    """A PCM16 mono stream of the chosen device at its own rate: some (JACK's) take no
    other; the session's 24 kHz is resampled to and from it."""
    device = None if choice is None or isinstance(choice, bool) else choice
    direction = "input" if kind is sd.InputStream else "output"
    rate = int(sd.query_devices(device, direction)["default_samplerate"])
    return kind(
        device=device,
        samplerate=rate,
        channels=1,
        dtype="int16",
        blocksize=round(rate * BLOCK_S),
        callback=callback,
    )
