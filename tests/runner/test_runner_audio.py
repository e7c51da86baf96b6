"""``NotebookRunner(audio=True)``: offline, the agent speaks through a real-time speaker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.runner import AudioError
from notebook_agents.runner._samples import spoken_audio
from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.wav import wav_bytes
from notebook_agents.trace import TraceEvent
from tests.conftest import API_KEY, started
from tests.speech_check import envelope_match


def speaking_server(
    emulator: Emulator, loops: list[asyncio.AbstractEventLoop] | None = None
) -> AgentServer:
    """A cascaded agent with the emulator's LLM and voice, text in, no VAD; its session's
    loop goes into ``loops``."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        if loops is not None:
            loops.append(asyncio.get_running_loop())
        session: AgentSession[None] = AgentSession(
            llm=openai.LLM(base_url=emulator.base_url(), api_key=API_KEY),
            tts=openai.TTS(base_url=emulator.base_url(), api_key=API_KEY),
            vad=None,
            turn_handling={"turn_detection": "manual"},
        )
        await session.start(agent=Agent(instructions="You are Alice."), room=ctx.room)

    return server


@pytest.mark.slow
@pytest.mark.voice
async def test_the_agent_speaks_its_reply_in_real_time_into_the_recording(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(speaking_server(emulator), audio=True))
    session = await runner.ready()
    assert session.output.audio is not None

    reply = await runner.send_text("hello there")
    assert reply == 'You are Alice. You said: "hello there".'
    (spoken,) = runner.recording.replies
    expected = synthesize(reply)
    assert abs(spoken.size - expected.size) < 0.1 * expected.size  # all of it, once
    # the emulator's voice saying the reply (eSpeak varies a little between calls)
    assert envelope_match(spoken, expected) > 0.9
    assert envelope_match(spoken, synthesize("Bob here. How can I help you with billing?")) < 0.5

    # played at the pace of speech: the agent was speaking for as long as its reply lasts
    states = [e for e in runner.trace.of_kind("agent_state")]
    began = next(e.t for e in states if e.data["new"] == "speaking")
    ended = next(e.t for e in states if e.t > began and e.data["old"] == "speaking")
    assert ended - began >= 0.8 * spoken.size / SAMPLE_RATE
    assert runner.recording._repr_html_().startswith('<audio controls src="data:audio/wav')


@pytest.mark.slow
@pytest.mark.voice
async def test_an_interrupted_reply_is_kept_as_far_as_it_was_heard(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    runner = await started(runners, NotebookRunner(speaking_server(emulator, loops), audio=True))
    session = await runner.ready()
    speaking = asyncio.Event()

    def on_event(event: TraceEvent) -> None:
        if event.kind == "agent_state" and event.data["new"] == "speaking":
            speaking.set()

    runner.trace.subscribe(on_event)
    text = "hello there, how are you doing today"
    turn = runner.submit_text(text)
    await speaking.wait()
    loops[0].call_soon_threadsafe(session.interrupt)
    await asyncio.wrap_future(turn)

    (heard_part,) = runner.recording.replies
    whole = synthesize(f'You are Alice. You said: "{text}".')
    assert 0 < heard_part.size < 0.5 * whole.size


async def test_without_audio_the_offline_session_stays_text_only(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(speaking_server(emulator)))
    session = await runner.ready()
    assert session.output.audio is None
    assert await runner.send_text("hello there") == 'You are Alice. You said: "hello there".'
    assert runner.recording.replies == []
    assert "nothing aloud" in runner.recording._repr_html_()


# -- audio the runner cannot take: a clear error first, and the runner still works --------------

SPEECH = synthesize("hello there")
FLOAT_SPEECH = SPEECH / 32768.0

BAD_AUDIO: dict[str, tuple[Any, Any, str]] = {
    # what is given, its rate, what the error says
    "all inf": (np.full(SAMPLE_RATE, np.inf), None, r"contain NaN/inf .* np\.nan_to_num"),
    "a NaN": (np.where(np.arange(SPEECH.size) == 100, np.nan, FLOAT_SPEECH), None, "at frame 100"),
    "float at int16 scale": (SPEECH.astype(np.float32), None, r"full scale at 1\.0"),
    "int32 PCM": (
        SPEECH.astype(np.int32) << 16,
        None,
        r"outside int16's range: pass int16 PCM \(32-bit PCM >> 16\)",
    ),
    "rate=0": (SPEECH, 0, "rate=0 is no sample rate: give the samples' rate in Hz"),
    "rate=-1": (SPEECH, -1, "rate=-1 is no sample rate"),
    "a fractional rate": (SPEECH, 22050.5, "rate=22050.5 is no sample rate"),
    "which axis is channels": (np.zeros((4, 4), np.int16), None, "which axis holds the channels"),
    "3-D": (np.zeros((2, 2, 480), np.int16), None, r"pass mono samples, or \(frames, channels\)"),
    "no samples": (np.zeros(0, np.int16), None, "has no samples"),
    "bytes": (wav_bytes(SPEECH, SAMPLE_RATE), None, "pass a numpy array .* or a WAV file's path"),
}


@pytest.fixture
async def speaking_runner(emulator: Emulator, runners: list[NotebookRunner]) -> NotebookRunner:
    runner = await started(runners, NotebookRunner(speaking_server(emulator), audio=True))
    return runner


@pytest.mark.parametrize(("audio", "rate", "says"), BAD_AUDIO.values(), ids=BAD_AUDIO.keys())
async def test_audio_that_cannot_be_spoken_is_refused_naming_the_fix(
    speaking_runner: NotebookRunner, audio: Any, rate: Any, says: str
) -> None:
    with pytest.raises(AudioError, match=says):
        await speaking_runner.send_audio(audio, rate)
    with pytest.raises(AudioError, match=says):
        speaking_runner.hear(audio, SAMPLE_RATE if rate is None else rate)
    # before: rate=-1 left the turn's listener on the session, and every later turn failed
    assert (
        await speaking_runner.send_text("hello there") == 'You are Alice. You said: "hello there".'
    )


SPEECH_WAV = wav_bytes(SPEECH, SAMPLE_RATE)
HEADER_BYTES = 44
"""a plain PCM WAV file's header (RIFF, fmt and the data chunk's name and size)"""


async def test_a_wav_file_cut_short_in_its_audio_is_refused_naming_what_is_missing(
    speaking_runner: NotebookRunner, tmp_path: Path
) -> None:
    """Before: the part there was spoken silently, and the agent answered half a question. The
    emulator's endpoint still reads such a file as OpenAI's decoder does (test_emulator_
    transcriptions); a caller's own file is refused, with how to speak the part it holds."""
    cut = tmp_path / "cut.wav"
    frames = SPEECH.size
    for held in (frames // 2, frames - 1, 0):
        cut.write_bytes(SPEECH_WAV[: HEADER_BYTES + 2 * held + (held == frames - 1)])
        with pytest.raises(AudioError) as refused:
            await speaking_runner.send_audio(cut)
        assert str(refused.value) == (
            f"{cut} is cut short: its header declares {frames} frames "
            f"({frames / SAMPLE_RATE:.2f} s) and it holds {held} "
            f"({held / SAMPLE_RATE:.2f} s): record or export it again, or to speak the part "
            f"it holds, rewrite its header to fit: sox --ignore-length {cut} whole.wav"
        )
    assert (
        await speaking_runner.send_text("hello there") == 'You are Alice. You said: "hello there".'
    )


def test_a_wav_file_of_unknown_length_is_read_to_its_end(tmp_path: Path) -> None:
    """A WAV written to a pipe cannot go back to fill in its sizes: FFmpeg leaves 0xFFFFFFFF
    (its riffenc.c ff_start_tag), which means "to the end of the file", not a cut."""
    streamed = bytearray(SPEECH_WAV)
    streamed[4:8] = streamed[40:44] = b"\xff\xff\xff\xff"
    path = tmp_path / "streamed.wav"
    path.write_bytes(streamed)
    samples, rate = spoken_audio(path, None)
    assert rate == SAMPLE_RATE and np.array_equal(samples, SPEECH)


@pytest.mark.parametrize("length", [0, 3, 4, 8, 11, 12, 20, 30, 36, 43])
def test_a_wav_file_cut_inside_its_header_says_so_and_what_to_do(
    tmp_path: Path, length: int
) -> None:
    """Before: an empty reason ("is not a PCM16 WAV file ()") or "not a WAVE file", "fmt chunk
    and/or data chunk missing", each with the advice to convert it."""
    cut = tmp_path / "cut.wav"
    cut.write_bytes(SPEECH_WAV[:length])
    with pytest.raises(AudioError) as refused:
        spoken_audio(cut, None)
    ends = "is empty" if length == 0 else f"ends after {length} bytes"
    assert str(refused.value) == (
        f"{cut} is cut short: the file {ends}, inside its WAV header, before any audio: "
        "record or export it again"
    )


async def test_a_file_that_is_no_wav_is_refused_naming_the_fix(
    speaking_runner: NotebookRunner, tmp_path: Path
) -> None:
    noise = tmp_path / "speech.mp3"
    noise.write_bytes(b"ID3" + bytes(300))
    with pytest.raises(AudioError, match=r"speech\.mp3 is not a PCM16 WAV file .* convert it"):
        await speaking_runner.send_audio(noise)
    assert (
        await speaking_runner.send_text("hello there") == 'You are Alice. You said: "hello there".'
    )


EXITS_IN_A_CALL = f"""
import asyncio
import os
import subprocess
import sys
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai, silero
from notebook_agents import Emulator, NotebookRunner
from notebook_agents.speech import synthesize

emulator = Emulator().start()
server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = dict(base_url=emulator.base_url(), api_key={API_KEY!r})
    session = AgentSession(
        vad=silero.VAD.load(), stt=openai.STT(**model), llm=openai.LLM(**model),
        tts=openai.TTS(**model),
    )
    await session.start(agent=Agent(instructions="You greet callers."), room=ctx.room)

async def main():
    runner = NotebookRunner(server, audio=True).start()
    await runner.ready()
    await runner.send_audio(synthesize("hello there"))

asyncio.run(main())  # and exits, the call still up
"""
"""notebook 04's session (VAD, STT, LLM, TTS), left running as a kernel shut down leaves it"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_python_that_exits_in_a_call_stops_it_before_livekit_lets_go_of_its_audio(
    tmp_path: Path,
) -> None:
    """livekit disposes of its FFI at exit (registered at its first use, after the runner's
    stop): the session, still running, pushed audio to resamplers already gone, and a kernel
    shut down with a call up logged "PushSoxResampler ... handle not found" and tracebacks."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    exited = subprocess.run(  # a script, as a kernel: its exit runs what it registered
        [sys.executable, "-c", EXITS_IN_A_CALL], env=env, cwd=tmp_path, capture_output=True,
        text=True, timeout=90, check=False,
    )  # fmt: skip
    assert exited.returncode == 0, exited.stderr
    assert "handle not found" not in exited.stderr, exited.stderr
    assert "Traceback" not in exited.stderr, exited.stderr
