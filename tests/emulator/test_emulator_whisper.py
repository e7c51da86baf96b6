"""The emulator's hearing, chosen per emulator or per connection: ``grammar`` (the default) or
``whisper`` (free speech), wherever it hears, driven by livekit's own plugins over loopback:
``openai.STT`` (transcriptions), the realtime plugin (the Realtime socket's input audio),
``inference.STT`` (LiveKit Inference) and the google plugin (Gemini Live). Free sentences none
of the tools nor the grammar holds are heard with a word error rate under 20%; the
recognizer's time is real, and a spoken turn's phases show it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence

import aiohttp
import numpy as np
import pytest
from google.genai import types
from livekit import rtc
from livekit.agents import AgentServer, AgentSession, JobContext, inference, llm, stt
from livekit.plugins import google, openai, silero
from openai.types import realtime

from notebook_agents import NotebookRunner
from notebook_agents.analysis import turn_phases
from notebook_agents.emulator import Emulator, ParameterError
from notebook_agents.errors import MissingExtraError
from notebook_agents.speech import SAMPLE_RATE, WHISPER_EXTRA, synthesize, word_error_rate
from tests.conftest import API_KEY, started
from tests.emulator.test_emulator_cli import command
from tests.emulator.test_emulator_livekit_inference import KEY, SECRET
from tests.handoff_agents import Concierge
from tests.speech.free_speech import CORPUS, MAX_WORD_ERROR_RATE, corpus_error_rate, spoken

FRAME = SAMPLE_RATE // 50
"""20 ms, as a microphone gives it"""


def _frames(samples: np.ndarray, quiet_s: float = 1.0) -> list[rtc.AudioFrame]:
    """``samples`` then ``quiet_s`` of silence (a turn's end), in 20 ms frames."""
    audio = np.concatenate([samples, np.zeros(int(quiet_s * SAMPLE_RATE), np.int16)])
    return [
        rtc.AudioFrame(audio[i : i + FRAME].tobytes(), SAMPLE_RATE, 1, audio[i : i + FRAME].size)
        for i in range(0, audio.size, FRAME)
    ]


@pytest.fixture
def whispering() -> Iterator[Emulator]:
    """An emulator that hears every connection with Whisper."""
    with Emulator(hearing="whisper") as emulator:
        yield emulator


def test_grammar_is_the_default_and_a_connection_may_ask_for_whisper(emulator: Emulator) -> None:
    assert emulator.settings.hearing == "grammar"
    assert emulator.base_url(hearing="whisper").endswith("/v1?hearing=whisper")
    with pytest.raises(ParameterError, match="grammar, whisper"):
        emulator.base_url(hearing="vosk")
    with pytest.raises(ParameterError, match="grammar, whisper"):
        Emulator(hearing="vosk")  # type: ignore[arg-type]
    assert "hearing='whisper'" in repr(Emulator(hearing="whisper"))


def test_whisper_without_its_extra_names_the_install(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in an environment without the extra: its packages cannot be imported. In Python it
    is the package's MissingExtraError; a client asking the server is refused with it."""
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    for ask in (lambda: Emulator(hearing="whisper"), lambda: emulator.base_url(hearing="whisper")):
        with pytest.raises(MissingExtraError, match=WHISPER_EXTRA.replace("[", r"\[")):
            ask()

    async def post() -> tuple[int, str]:
        form = aiohttp.FormData({"model": "whisper-1"})
        form.add_field("file", b"", filename="a.wav")
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                f"{emulator.url}/v1/audio/transcriptions?hearing=whisper",
                data=form,
                headers={"Authorization": f"Bearer {API_KEY}"},
            ) as response,
        ):
            return response.status, await response.text()

    status, body = asyncio.run(post())
    assert status == 400 and "notebook-agents[whisper]" in body
    status, out, err = command(capsys, "--port", "0", "--hearing", "whisper")
    assert (status, out) == (2, "") and "notebook-agents[whisper]" in err


@pytest.mark.slow
async def test_free_speech_is_heard_through_livekits_openai_stt(emulator: Emulator) -> None:
    """Per connection: the same emulator hears a free sentence by its grammar (not that
    sentence) on a default connection, and word for word, nearly, on a whisper one."""
    async with (
        openai.STT(base_url=emulator.base_url(hearing="whisper"), api_key=API_KEY) as ears,
        openai.STT(base_url=emulator.base_url(), api_key=API_KEY) as grammar,
    ):
        heard = []
        for sentence, voice in CORPUS:
            event = await ears.recognize(_frames(spoken(sentence, voice), quiet_s=0.3))
            assert event.type == stt.SpeechEventType.FINAL_TRANSCRIPT
            heard.append(event.alternatives[0].text)
        by_grammar = await grammar.recognize(_frames(spoken(*CORPUS[0]), quiet_s=0.3))
    assert corpus_error_rate(heard) < MAX_WORD_ERROR_RATE, heard
    said = CORPUS[0][0]
    assert word_error_rate([(said, by_grammar.alternatives[0].text)]) > 0.5
    hearings = [c.hearing for c in emulator.connections if c.kind == "transcriptions"]
    assert hearings == ["whisper"] * len(CORPUS) + ["grammar"]


@pytest.mark.slow
async def test_free_speech_is_heard_through_the_realtime_plugin(whispering: Emulator) -> None:
    """The Realtime socket's input audio, its server VAD taking the turns, heard by Whisper
    (the emulator's own hearing); the transcripts come back as the plugin's events."""
    model = openai.realtime.RealtimeModel(
        base_url=whispering.base_url(),
        api_key=API_KEY,
        modalities=["text"],
        input_audio_transcription=realtime.AudioTranscription(model="gpt-4o-mini-transcribe"),
    )
    transcripts = await _heard_by_realtime_model(model, CORPUS)
    assert corpus_error_rate(transcripts) < MAX_WORD_ERROR_RATE, transcripts
    assert [c.hearing for c in whispering.connections if c.kind == "realtime"] == ["whisper"]


@pytest.mark.slow
async def test_free_speech_is_heard_through_livekits_inference_stt(emulator: Emulator) -> None:
    """One stream, a sentence at a time as a caller speaks (livekit's client stops waiting
    for transcripts 3 s after its input ended and the last one came)."""
    async with aiohttp.ClientSession() as http:
        ears = inference.STT(
            model="deepgram/nova-3",
            base_url=emulator.base_url(hearing="whisper"),
            http_session=http,
            api_key=KEY,
            api_secret=SECRET,
        )
        stream = ears.stream()
        heard = []
        for sentence, voice in CORPUS:
            for frame in _frames(spoken(sentence, voice)):
                stream.push_frame(frame)
            async with asyncio.timeout(60):
                async for event in stream:
                    if event.type == stt.SpeechEventType.FINAL_TRANSCRIPT:
                        heard.append(event.alternatives[0].text)
                        break
        stream.end_input()
        await stream.aclose()
    assert corpus_error_rate(heard) < MAX_WORD_ERROR_RATE, heard
    assert [c.hearing for c in emulator.connections if c.kind == "inference.stt"] == ["whisper"]


@pytest.mark.slow
async def test_free_speech_is_heard_through_gemini_live(emulator: Emulator) -> None:
    model = google.realtime.RealtimeModel(
        api_key="not-a-secret",
        modalities=[types.Modality.TEXT],
        http_options=emulator.gemini_http_options(hearing="whisper"),
    )
    transcripts = await _heard_by_realtime_model(model, CORPUS[:3])
    said = [sentence for sentence, _ in CORPUS[:3]]
    assert word_error_rate(zip(said, transcripts, strict=True)) < MAX_WORD_ERROR_RATE
    assert [c.hearing for c in emulator.connections if c.kind == "gemini_live"] == ["whisper"]


def _cascaded(emulator: Emulator) -> AgentServer:
    """The Concierge as a cascaded voice agent whose STT asks the emulator for whisper."""
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        session: AgentSession[None] = AgentSession(
            vad=silero.VAD.load(),
            stt=openai.STT(base_url=emulator.base_url(hearing="whisper"), api_key=API_KEY),
            llm=openai.LLM(base_url=emulator.base_url(), api_key=API_KEY),
            tts=openai.TTS(base_url=emulator.base_url(), api_key=API_KEY),
        )
        await session.start(agent=Concierge(), room=ctx.room)

    return server


@pytest.mark.slow
async def test_a_spoken_turns_phases_show_the_recognizers_time(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    """The transcript phase of a spoken turn heard by Whisper lasts at least as long as the
    emulator took to answer the transcription (the recognizer's real time, not a model)."""
    runner = await started(runners, NotebookRunner(_cascaded(emulator), audio=True))
    sentence, _ = CORPUS[1]
    reply = await runner.send_audio(synthesize(sentence))
    assert "change my appointment" in reply.lower()
    (log,) = [c for c in emulator.connections if c.kind == "transcriptions"]
    came = next(t for t, direction, _ in log.events if direction == "in")
    answered = next(t for t, direction, _ in log.events if direction == "out")
    recognized_s = answered - came
    (turn,) = turn_phases(runner.trace)
    transcript = next(p for p in turn.phases if p.name == "final_transcript")
    assert transcript.seconds >= recognized_s > 0


async def _heard_by_realtime_model(
    model: llm.RealtimeModel, corpus: Sequence[tuple[str, str]]
) -> list[str]:
    """Each sentence of ``corpus`` spoken into a session of the realtime ``model`` (its input
    audio, the model's turn detection taking the turns), and its final input transcript."""
    session = model.session()
    heard: asyncio.Queue[str] = asyncio.Queue()

    def on_transcript(event: llm.InputTranscriptionCompleted) -> None:
        if event.is_final:
            heard.put_nowait(event.transcript)

    session.on("input_audio_transcription_completed", on_transcript)
    try:
        transcripts = []
        for sentence, voice in corpus:
            for frame in _frames(spoken(sentence, voice)):
                session.push_audio(frame)
            transcripts.append(await asyncio.wait_for(heard.get(), timeout=60))
    finally:
        await session.aclose()
        await model.aclose()
    return transcripts
