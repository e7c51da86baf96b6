"""What the line and the recogniser do to a voice agent, offline: a table per condition and
recogniser (``hearing="grammar"``, pocketsphinx, or ``"whisper"``, Whisper tiny.en).

- heard word for word, word error rate: the corpus (``CORPUS``, three phrases of the grammar
  and three free sentences, given apart, in eSpeak's voices ``VOICES``) through the line,
  heard as the emulator hears it (``transcribe``, the session's words ``SESSION``; the
  grammar hears no free sentence, by design: nothing rather than a wrong phrase);
- end of turn -> first audio: the caller's wait in a cascaded ``NotebookRunner(audio=True)``
  session on the emulator (livekit's silero VAD and end-of-turn delay, ``openai.STT`` hearing
  as the column says), measured as ``benchmarks/voice.py`` does: from the end of the caller's
  speech where livekit's VAD put it to the reply's first audio
  (``TraceAnalysis.of(trace).speech``), the session's first reply left out (warm-up); and
  how many spoken turns through the line got no reply (heard as nothing: no turn);
- false interruptions: the line's noise alone (``NOISE_S`` seconds, the line applied to
  silence: its noise at the level it would have under speech at -26 dBFS) played ``CUE_S``
  into a reply (``run_audio(..., at=)``): how often the trace's ``barge_in`` says livekit cut
  the reply, or paused it and resumed it (a false interruption it recognised); "-" where the
  line adds no noise (its noise alone is silence);
- barge-in -> the agent stops: the ``barge_in``'s ``stop_s``, from the caller's first sound
  over the reply to the speaker's stop (livekit's VAD hearing ``min_duration`` of speech, 0.5 s
  by default, however loaded the machine: tests/runner/test_runner_barge_in.py holds the bound);
- barge-in -> first audio: the caller says ``BARGE_IN`` through the line ``CUE_S`` into a
  reply; from the ``barge_in``'s ``began`` (the caller's first sound) to the first audio of
  the answer, when livekit cut the reply: the caller's words (about 1.5 s), livekit's end of
  turn, the answer's transcription and synthesis.

Medians over ``--repeats`` (each repeat one noise trial and one barge-in per session).

    .venv/bin/python benchmarks/ears.py --repeats 1
    .venv/bin/python benchmarks/ears.py --conditions clean
        --conditions "[{noise: {kind: white, snr_db: 0}}]"  # one command line
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field

import numpy as np
import psutil
from voice import voice_server  # benchmarks/voice.py, beside this script

from notebook_agents import Emulator, NotebookRunner, RunnerError, TraceAnalysis
from notebook_agents.speech import SAMPLE_RATE, Hearing, Line, Vocabulary, synthesize, transcribe
from notebook_agents.speech import word_error_rate as wer
from notebook_agents.speech.line import named_line

GRAMMAR_PHRASES = ("hello there", "what is seven times eight", "transfer to billing please")
CORPUS = (
    *GRAMMAR_PHRASES,
    "our flight leaves early tomorrow morning",
    "we should buy fresh oranges at the market",
    "the children built a sandcastle near the water",
)
VOICES = ("en-us", "en-us+f3")
SESSION = Vocabulary.of(["transfer_to_billing"])
HEARINGS: tuple[Hearing, ...] = ("grammar", "whisper")
DEFAULT_CONDITIONS = ("clean", "café", "street", "telephone", "lossy")
INSTRUCTIONS = (
    "You are the Concierge, and you greet every caller with a few kind words about the day. "
    "Help them."
)
"""the emulator's every reply is the first sentence (about 5 s spoken): long enough to speak
over"""
QUESTION = "hello there"
BARGE_IN = "what is seven times eight"
CUE_S = 1.0
NOISE_S = 3.0
SILENT_PEAK = 32
"""int16: a line whose noise alone peaks below -60 dBFS adds no noise"""


@dataclass
class SessionFigures:
    waits_s: list[float] = field(default_factory=list)
    noise_trials: int = 0
    cut_by_noise: int = 0
    paused_by_noise: int = 0
    barge_in_stop_s: list[float] = field(default_factory=list)
    """from the caller's first sound over the reply to the agent's stop (``stop_s``): livekit's
    VAD hearing ``min_duration`` of speech (0.5 s by default), then the speaker's stop"""
    barge_in_first_audio_s: list[float] = field(default_factory=list)
    unanswered: int = 0
    """spoken turns through the line that got no reply (heard as nothing, or lost)"""


async def _answered(turn: Awaitable[object]) -> bool:
    """Whether the spoken ``turn`` got its reply (a turn given up is withdrawn by the runner,
    which is ready for the next)."""
    try:
        await turn
    except RunnerError:
        return False
    return True


async def session_figures(line: Line, hearing: Hearing, repeats: int) -> SessionFigures:
    """The caller's waits, the noise trials and the barge-ins of one cascaded session whose
    caller speaks through ``line`` and whose emulator hears with ``hearing``."""
    figures = SessionFigures()
    question = synthesize(QUESTION)
    noise = line.apply(np.zeros(int(NOISE_S * SAMPLE_RATE), np.int16), SAMPLE_RATE)
    noisy = int(np.abs(noise.astype(np.int32)).max()) >= SILENT_PEAK
    with Emulator() as emulator:
        server = voice_server(
            emulator.base_url(hearing=hearing),
            instructions=INSTRUCTIONS,
            aec_warmup_duration=None,
        )
        runner = NotebookRunner(server, audio=True).start()
        try:
            await runner.ready()
            for _ in range(repeats):
                if noisy:  # a reply asked on a clean line, the line's noise alone over it
                    asked = asyncio.ensure_future(runner.run_audio(question, conditions=[]))
                    before = len(runner.trace.of_kind("barge_in"))
                    # noise livekit does not heed ends the turn at its timeout, as intended
                    await _answered(runner.run_audio(noise, conditions=[], at=CUE_S, timeout=15))
                    await _answered(asked)
                    for event in runner.trace.of_kind("barge_in")[before:]:
                        figures.noise_trials += 1
                        figures.cut_by_noise += event.data["interrupted"]
                        figures.paused_by_noise += event.data["resumed"]
                # the question and the barge-in both through the line
                asked = asyncio.ensure_future(runner.run_audio(question, conditions=line))
                before = len(runner.trace.of_kind("barge_in"))
                barged = await _answered(
                    runner.run_audio(synthesize(BARGE_IN), conditions=line, at=CUE_S)
                )
                figures.unanswered += (not await _answered(asked)) + (not barged)
                for event in runner.trace.of_kind("barge_in")[before:]:
                    began = event.data["began"]
                    answers = [
                        s.start
                        for s in TraceAnalysis.of(runner.trace).speech
                        if s.speaker == "agent" and s.start > began
                    ]
                    if event.data["interrupted"] and event.data["stop_s"] is not None:
                        figures.barge_in_stop_s.append(event.data["stop_s"])
                    if event.data["interrupted"] and answers:
                        figures.barge_in_first_audio_s.append(min(answers) - began)
        finally:
            runner.stop()
    figures.waits_s = [
        s.first_audio_s
        for s in TraceAnalysis.of(runner.trace).speech
        if s.speaker == "agent" and s.first_audio_s is not None
    ][1:]
    return figures


def recognition(line: Line, hearing: Hearing, clips: list[tuple[str, np.ndarray]]) -> str:
    """``word for word | word error rate`` of the clips heard through ``line``, the grammar's
    phrases and the free sentences apart."""
    pairs = [
        (said, transcribe(line.apply(samples, SAMPLE_RATE), SAMPLE_RATE, SESSION, hearing))
        for said, samples in clips
    ]
    parts = {
        "phrases": [p for p in pairs if p[0] in GRAMMAR_PHRASES],
        "free": [p for p in pairs if p[0] not in GRAMMAR_PHRASES],
    }
    word_for_word = ", ".join(
        f"{kind} {sum(wer([p]) == 0 for p in part)}/{len(part)}" for kind, part in parts.items()
    )
    rates = ", ".join(f"{kind} {wer(part):.0%}" for kind, part in parts.items())
    return f"{word_for_word} | {rates}"


def _ms(seconds: list[float]) -> str:
    if not seconds:
        return "-"
    return f"{statistics.median(seconds) * 1000:.0f} (n={len(seconds)})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--conditions",
        action="append",
        type=named_line,
        help="a line the caller speaks through (repeat for several): a preset's name or its "
        "start (clean, café, street, telephone, lossy, ...), or YAML, '[telephone, {noise: "
        f"{{kind: babble, snr_db: 10}}}}]'; default {', '.join(DEFAULT_CONDITIONS)}",
    )
    args = parser.parse_args()
    lines: dict[str, Line] = dict(
        args.conditions or [named_line(name) for name in DEFAULT_CONDITIONS]
    )
    started = time.perf_counter()
    clips = [(said, synthesize(said, voice=voice)) for said in CORPUS for voice in VOICES]
    print(
        f"corpus: {len(CORPUS)} phrases x {len(VOICES)} voices ({', '.join(VOICES)}): "
        + "; ".join(CORPUS)
    )
    print(
        "| line | hearing | heard word for word | word error rate | end of turn -> first "
        "audio, median ms | false interruptions (noise alone) | barge-in -> the agent stops, "
        "median ms | barge-in -> first audio, median ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, line in lines.items():
        for hearing in HEARINGS:
            heard = recognition(line, hearing, clips)
            figures = await session_figures(line, hearing, args.repeats)
            interruptions = (
                f"cut {figures.cut_by_noise}, paused {figures.paused_by_noise} "
                f"of {figures.noise_trials}"
                if figures.noise_trials
                else "-"
            )
            unanswered = f", {figures.unanswered} unanswered" if figures.unanswered else ""
            print(
                f"| {name} | {hearing} | {heard} | {_ms(figures.waits_s)}{unanswered} "
                f"| {interruptions} | {_ms(figures.barge_in_stop_s)} "
                f"| {_ms(figures.barge_in_first_audio_s)} |",
                flush=True,
            )
    print(
        f"took {time.perf_counter() - started:.0f} s; load average "
        f"{', '.join(f'{x:.1f}' for x in psutil.getloadavg())}"
    )


if __name__ == "__main__":
    asyncio.run(main())
