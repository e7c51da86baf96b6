"""The line a caller's audio crosses before it reaches the session: background noise at a
signal-to-noise ratio, a microphone's gain and clipping, a telephone line (8 kHz, mu-law),
packet loss and jitter in livekit's frames.

Each condition is a small value (``Noise``, ``Gain``, ``Telephone``, ``PacketLoss``,
``Jitter``); a ``Line`` of them applies them in the order a call crosses them, whatever order
they are given in: the room's noise reaches the microphone with the voice, the microphone
amplifies and clips, the telephone codec band-limits and quantizes, the network loses and
delays packets. Everything is numpy (the resampling libsoxr's, undithered: ``resampling.py``)
and seeded: the same line on the same audio gives the same samples, so a test is reproducible.

A line applies to a whole turn's audio (``Line.apply``: what ``send_audio`` speaks) or to live
audio as it arrives (``Line.stream``: what ``hear`` passes on), the same stages either way.
Its written form, for a suite's ``conditions:``, the trace and the benchmark's
``--conditions``, is a list of names or one-key mappings (``Line.read``)::

    - noise: {kind: babble, snr_db: 10}
    - telephone
    - packet_loss: {rate: 0.05, conceal: repeat}
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from ..errors import NotebookAgentsError
from .resampling import ResampleStream, resample, to_int16
from .synthesis import SAMPLE_RATE, synthesize
from .wav import wav_samples

FRAME_MS = 50
"""livekit's frame of a caller's audio: ``RoomIO`` reads a participant's track in frames of
``AudioInputOptions.frame_size_ms``, 50 ms (livekit-agents 1.8.9,
livekit/agents/voice/room_io/types.py; a test holds this to it: not imported, the package and
the emulator start without livekit.agents), so a frame lost or late is this long. WebRTC's
Opus packets are 20 ms: ``PacketLoss(frame_ms=20)`` loses those instead."""
TELEPHONE_RATE = 8_000
"""G.711's sampling rate: the telephone line carries 0-4 kHz"""
NOMINAL_SPEECH_DBFS = -26.0
"""the speech level assumed for live audio until the caller has spoken (ITU-T P.56's usual
active speech level)"""
_ACTIVE_FLOOR_DBFS = -50.0
"""a 20 ms stretch below this is a pause, not speech: left out of the speech level"""
_LEVEL_FRAME_S = 0.02
_FULL_SCALE = 32768.0
NoiseKind = Literal["white", "babble", "road"]
NOISE_KINDS: tuple[NoiseKind, ...] = ("white", "babble", "road")
Concealment = Literal["silence", "repeat"]
CONCEALMENTS: tuple[Concealment, ...] = ("silence", "repeat")


class LineError(NotebookAgentsError, ValueError):
    """A condition that cannot be applied as given; the message names the fix."""


@dataclass(frozen=True)
class Noise:
    """Background noise at ``snr_db`` below the caller's speech: ``kind`` is ``"white"``,
    ``"babble"`` (several eSpeak voices talking at once), ``"road"`` (low-passed brown noise,
    a car's rumble), or a WAV file's path (looped). The speech level is the mean power of the
    caller's audio where it is not a pause (20 ms stretches above -50 dBFS); for live audio,
    of what was heard so far (-26 dBFS before anything was). ``seed`` picks where in the
    noise it starts."""

    snr_db: float = 10.0
    kind: str = "white"
    seed: int = 0

    name: ClassVar[str] = "noise"

    def __post_init__(self) -> None:
        _require_number(self, "snr_db", -30.0, 60.0)
        _require_seed(self)
        if self.kind not in NOISE_KINDS and Path(self.kind).suffix.lower() != ".wav":
            raise LineError(
                f"Noise(kind={self.kind!r}): give one of {', '.join(NOISE_KINDS)}, or a WAV "
                "file's path (ending .wav)"
            )
        if self.kind not in NOISE_KINDS and not Path(self.kind).is_file():
            raise LineError(f"Noise(kind={self.kind!r}): no such file; give a WAV file's path")

    def __str__(self) -> str:
        kind = self.kind if self.kind in NOISE_KINDS else Path(self.kind).name
        return f"{kind} noise at {self.snr_db:g} dB SNR"


@dataclass(frozen=True)
class Gain:
    """A microphone's gain of ``db`` (negative: a quiet one), clipping what passes
    ``clip_dbfs`` (0: full scale; -6: a cheap one that clips at half of it)."""

    db: float = 0.0
    clip_dbfs: float = 0.0

    name: ClassVar[str] = "gain"

    def __post_init__(self) -> None:
        _require_number(self, "db", -60.0, 60.0)
        _require_number(self, "clip_dbfs", -40.0, 0.0)

    def __str__(self) -> str:
        clip = f", clipped at {self.clip_dbfs:g} dBFS" if self.clip_dbfs < 0 else ""
        return f"gain {self.db:+g} dB{clip}"


@dataclass(frozen=True)
class Telephone:
    """A telephone line: resampled to 8 kHz (nothing above 4 kHz passes) and quantized by
    G.711 mu-law's 256 levels, then back to the caller's rate."""

    name: ClassVar[str] = "telephone"

    def __str__(self) -> str:
        return "telephone (8 kHz mu-law)"


@dataclass(frozen=True)
class PacketLoss:
    """Each ``frame_ms`` frame lost with probability ``rate``, independently, and concealed
    as ``"silence"`` or by repeating the last frame that arrived (``"repeat"``, the simplest
    packet-loss concealment)."""

    rate: float = 0.05
    conceal: str = "silence"
    frame_ms: int = FRAME_MS
    seed: int = 0

    name: ClassVar[str] = "packet_loss"

    def __post_init__(self) -> None:
        _require_number(self, "rate", 0.0, 1.0)
        _require_conceal(self)
        _require_frame(self)
        _require_seed(self)

    def __str__(self) -> str:
        return f"{self.rate:.0%} of {self.frame_ms} ms frames lost ({self.conceal})"


@dataclass(frozen=True)
class Jitter:
    """Packets delayed by a varying time, exponentially distributed with mean ``ms`` (a
    network's queueing); the receiver's jitter buffer waits ``buffer_ms`` (its latency, added
    before the audio), so a frame later than that is lost to it and concealed as
    ``PacketLoss`` conceals (a share ``exp(-buffer_ms / ms)`` of them)."""

    ms: float = 20.0
    buffer_ms: float = 60.0
    conceal: str = "silence"
    frame_ms: int = FRAME_MS
    seed: int = 0

    name: ClassVar[str] = "jitter"

    def __post_init__(self) -> None:
        _require_number(self, "ms", 0.0, 2000.0)
        _require_number(self, "buffer_ms", 0.0, 2000.0)
        _require_conceal(self)
        _require_frame(self)
        _require_seed(self)

    @property
    def late_share(self) -> float:
        """The share of frames that come too late for the jitter buffer."""
        return math.exp(-self.buffer_ms / self.ms) if self.ms > 0 else 0.0

    def __str__(self) -> str:
        return f"jitter {self.ms:g} ms ({self.buffer_ms:g} ms buffer, {self.conceal})"


Condition = Noise | Gain | Telephone | PacketLoss | Jitter
CONDITIONS: tuple[type[Condition], ...] = (Noise, Gain, Telephone, PacketLoss, Jitter)
"""every condition, in the order a call crosses them"""
_BY_NAME: dict[str, type[Condition]] = {kind.name: kind for kind in CONDITIONS}


class Line:
    """Conditions a caller's audio crosses, applied in the order a call crosses them (noise,
    gain, telephone, packet loss, jitter: ``CONDITIONS``); no conditions is a clean line."""

    def __init__(self, *conditions: Condition) -> None:
        for condition in conditions:
            if not isinstance(condition, CONDITIONS):
                raise LineError(
                    f"{condition!r} is no line condition: give Noise(...), Gain(...), "
                    "Telephone(), PacketLoss(...) or Jitter(...)"
                )
        order = {kind: index for index, kind in enumerate(CONDITIONS)}
        self.conditions: tuple[Condition, ...] = tuple(
            sorted(conditions, key=lambda c: order[type(c)])
        )

    def apply(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """int16 mono ``samples`` at ``rate`` as they reach the session through this line,
        at the same rate (longer by a jitter buffer's wait, a frame's padding)."""
        samples = np.asarray(samples, np.int16)
        if not self.conditions:
            return samples
        stream = LineStream(self, rate, speech_power(samples, rate), samples.size)
        return np.concatenate([stream.process(samples), stream.flush()])

    def stream(self, rate: int) -> LineStream:
        """The line for live audio at ``rate``, applied chunk by chunk as it arrives."""
        return LineStream(self, rate)

    def to_records(self) -> list[dict[str, dict[str, Any]]]:
        """The written form (``Line.read`` reads it back): each condition as ``{name:
        {field: value}}``, every field given."""
        return [{c.name: dataclasses.asdict(c)} for c in self.conditions]

    @classmethod
    def read(cls, written: object) -> Line:
        """A line from its written form: a list of condition names (``telephone``) or
        one-key mappings of a name to its fields (``{noise: {kind: babble, snr_db: 10}}``),
        as a suite's YAML, the trace and ``--conditions`` write it; ``LineError`` says what
        is wrong and how to write it."""
        if isinstance(written, Line):
            return written
        if not isinstance(written, Sequence) or isinstance(written, str):
            raise LineError(
                f"conditions are a list, e.g. [{_EXAMPLE}], not {written!r}; [] is a clean line"
            )
        return cls(*(_condition(item, index) for index, item in enumerate(written)))

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Line) and other.conditions == self.conditions

    def __hash__(self) -> int:
        return hash(self.conditions)

    def __repr__(self) -> str:
        return f"Line({', '.join(map(repr, self.conditions))})"

    def __str__(self) -> str:
        return ", ".join(map(str, self.conditions)) or "clean"


LineLike = Line | Condition | Sequence[Any] | None
"""what ``conditions=`` takes: a ``Line``, one condition, a list of conditions or of their
written form, or None (a clean line)"""


def as_line(conditions: object) -> Line:
    """``conditions`` (``LineLike``) as a ``Line``; ``LineError`` if it is none."""
    if conditions is None:
        return Line()
    if isinstance(conditions, CONDITIONS):
        return Line(conditions)
    if isinstance(conditions, Sequence) and all(isinstance(c, CONDITIONS) for c in conditions):
        return Line(*conditions)
    return Line.read(conditions)


class LineStream:
    """A line's stages with their state (where the noise is, what the network lost): chunks
    of audio go in as they arrive and come out as they would reach the session."""

    def __init__(self, line: Line, rate: int, speech: float | None = None, length: int = 0) -> None:
        """``speech``: the caller's speech power (``speech_power``), when known ahead (a whole
        turn's, ``length`` samples long); else measured as the audio comes."""
        self.line = line
        self.rate = rate
        self._stages = [_stage(c, rate, speech, length) for c in line.conditions]

    def process(self, samples: np.ndarray) -> np.ndarray:
        """The next chunk of int16 mono audio, through the line (some of it may be held back
        until a whole frame has come)."""
        audio = np.asarray(samples, np.int16).astype(np.float64)
        for stage in self._stages:
            audio = stage.process(audio)
        return to_int16(audio)

    def flush(self) -> np.ndarray:
        """What the stages hold back, at the end of the audio (a last frame is padded)."""
        audio = np.zeros(0)
        for stage in self._stages:
            audio = np.concatenate([stage.process(audio), stage.flush()])
        return to_int16(audio)

    @property
    def frames(self) -> dict[str, tuple[int, int]]:
        """For each network condition (``packet_loss``, ``jitter``): (frames lost or late,
        frames passed)."""
        return {
            stage.condition.name: (stage.lost, stage.passed)
            for stage in self._stages
            if isinstance(stage, _Frames)
        }


def speech_power(samples: np.ndarray, rate: int = SAMPLE_RATE) -> float | None:
    """The mean power (int16 units squared) of ``samples`` where they are not a pause: the
    20 ms stretches above -50 dBFS; None when all of it is pause."""
    size = max(1, round(rate * _LEVEL_FRAME_S))
    audio = np.asarray(samples, np.float64)
    usable = audio[: audio.size - audio.size % size].reshape(-1, size)
    powers = (usable**2).mean(axis=1) if usable.size else np.zeros(0)
    active = powers[powers > _dbfs_power(_ACTIVE_FLOOR_DBFS)]
    return float(active.mean()) if active.size else None


def mu_law(samples: np.ndarray) -> np.ndarray:
    """int16 samples through G.711 mu-law (encoded to its 8 bits and decoded): the classic
    segmented encoder of ITU-T G.711's mu-law tables, as Sun's reference g711.c writes it
    (bias 0x84, clip 32635): 255 levels, steps of 8 near zero to 1024 at full scale."""
    x = np.asarray(samples, np.int32)
    magnitude = np.minimum(np.abs(x), _MU_CLIP) + _MU_BIAS
    exponent = np.clip(np.floor(np.log2(magnitude)).astype(np.int32) - 7, 0, 7)
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    decoded = (((mantissa << 3) + _MU_BIAS) << exponent) - _MU_BIAS
    signed: np.ndarray = np.where(x < 0, -decoded, decoded)
    return signed.astype(np.int16)


_MU_BIAS = 0x84
_MU_CLIP = 32635


# -- the stages ------------------------------------------------------------------------------


class _Stage(abc.ABC):
    condition: Condition

    @abc.abstractmethod
    def process(self, audio: np.ndarray) -> np.ndarray:
        """The next chunk (float, int16's scale) through this stage."""

    def flush(self) -> np.ndarray:
        return np.zeros(0)


class _Noisy(_Stage):
    def __init__(self, condition: Noise, rate: int, speech: float | None, length: int) -> None:
        self.condition = condition
        self.source = noise_samples(condition.kind, rate)
        self.at = int(np.random.default_rng(condition.seed).integers(self.source.size))
        if length:  # a whole turn: the SNR is exact over the stretch of noise it gets
            stretch = np.take(self.source, np.arange(self.at, self.at + length), mode="wrap")
            self.source = self.source / np.sqrt(np.mean(stretch**2))
        self.measured = speech is not None
        self.power = speech if speech is not None else _dbfs_power(NOMINAL_SPEECH_DBFS)
        self.heard = 0
        """live: how many chunks of speech the level is the mean of"""
        self.scale = float(np.sqrt(10 ** (-condition.snr_db / 10)))

    def process(self, audio: np.ndarray) -> np.ndarray:
        if not self.measured and audio.size:  # live: the level of the speech heard so far
            power = float(np.mean(audio**2))
            if power > _dbfs_power(_ACTIVE_FLOOR_DBFS):
                self.heard += 1
                self.power += (power - self.power) / self.heard
        noise = np.take(self.source, np.arange(self.at, self.at + audio.size), mode="wrap")
        self.at = (self.at + audio.size) % self.source.size
        noisy: np.ndarray = audio + noise * self.scale * np.sqrt(self.power)
        return noisy


class _Gained(_Stage):
    def __init__(self, condition: Gain) -> None:
        self.condition = condition
        self.factor = 10 ** (condition.db / 20)
        self.ceiling = (_FULL_SCALE - 1) * 10 ** (condition.clip_dbfs / 20)

    def process(self, audio: np.ndarray) -> np.ndarray:
        return np.clip(audio * self.factor, -self.ceiling, self.ceiling)


class _Telephoned(_Stage):
    def __init__(self, condition: Telephone, rate: int) -> None:
        self.condition = condition
        self.down = ResampleStream(rate, TELEPHONE_RATE) if rate != TELEPHONE_RATE else None
        self.up = ResampleStream(TELEPHONE_RATE, rate) if rate != TELEPHONE_RATE else None

    def process(self, audio: np.ndarray) -> np.ndarray:
        pcm = to_int16(audio)
        if self.down is None or self.up is None:
            return mu_law(pcm).astype(np.float64)
        return self.up.push(mu_law(self.down.push(pcm))).astype(np.float64)

    def flush(self) -> np.ndarray:
        if self.down is None or self.up is None:
            return np.zeros(0)
        narrow = mu_law(self.down.flush())
        return np.concatenate([self.up.push(narrow), self.up.flush()]).astype(np.float64)


class _Frames(_Stage):
    """The network's stages: audio in whole frames, each passed or concealed."""

    def __init__(self, condition: PacketLoss | Jitter, rate: int) -> None:
        self.condition = condition
        self.conceal = condition.conceal
        self.size = max(1, round(rate * condition.frame_ms / 1000))
        self.rng = np.random.default_rng(condition.seed)
        self.held = np.zeros(0)
        self.last = np.zeros(self.size)
        self.lost = 0
        self.passed = 0
        self.chance = condition.rate if isinstance(condition, PacketLoss) else condition.late_share
        self.delay = (
            np.zeros(round(rate * condition.buffer_ms / 1000))
            if isinstance(condition, Jitter)
            else np.zeros(0)
        )

    def process(self, audio: np.ndarray) -> np.ndarray:
        held = np.concatenate([self.held, audio])
        whole = held.size - held.size % self.size
        self.held = held[whole:]
        frames = held[:whole].reshape(-1, self.size).copy()
        for frame in frames:
            if self.rng.random() < self.chance:
                self.lost += 1
                frame[:] = self.last if self.conceal == "repeat" else 0.0
            else:
                self.passed += 1
                self.last = frame.copy()
        out = np.concatenate([self.delay, frames.reshape(-1)])
        self.delay = np.zeros(0)
        return out

    def flush(self) -> np.ndarray:
        if not self.held.size:
            return self.delay
        return self.process(np.zeros(self.size - self.held.size))


def _stage(condition: Condition, rate: int, speech: float | None, length: int) -> _Stage:
    if isinstance(condition, Noise):
        return _Noisy(condition, rate, speech, length)
    if isinstance(condition, Gain):
        return _Gained(condition)
    if isinstance(condition, Telephone):
        return _Telephoned(condition, rate)
    return _Frames(condition, rate)


# -- the noise the project makes -------------------------------------------------------------

NOISE_S = 8.0
"""how long each made noise is before it loops"""
_BABBLE_VOICES = ("en-us", "en", "en-us+f3", "en+m3", "en-us+f2", "en+m7")
_BABBLE_TEXT = (
    "I was thinking we could meet on Thursday, unless the train is late again.",
    "The soup here is much better than the place across the street, honestly.",
    "She said the report would be ready by noon, but nobody has seen it yet.",
    "Can you pass the sugar? And the little spoon, the one by the window.",
    "We drove all the way to the coast and it rained for the whole weekend.",
    "My brother finally fixed the bike, so now he rides it to work every day.",
)
_ROAD_CORNER_HZ = 400.0
"""road noise inside a car is mostly below a few hundred hertz: brown noise cut here"""


def noise_samples(kind: str, rate: int) -> np.ndarray:
    """The noise ``kind`` (a made one's name, or a WAV file's path) at ``rate``: float, unit
    mean power, ``NOISE_S`` long for a made one (a file's own length), made once per
    process."""
    if kind in NOISE_KINDS:
        return _made_noise(kind, rate)
    return _file_noise(str(Path(kind).resolve()), os.stat(kind).st_mtime_ns, rate)


@functools.lru_cache(maxsize=8)
def _made_noise(kind: str, rate: int) -> np.ndarray:
    if rate != SAMPLE_RATE:
        pcm = to_int16(_made_noise(kind, SAMPLE_RATE) * 3000)
        return _unit_power(resample(pcm, SAMPLE_RATE, rate))
    size = round(NOISE_S * rate)
    rng = np.random.default_rng(20261128)  # fixed: the made noise is one recording
    if kind == "white":
        return _unit_power(rng.standard_normal(size))
    if kind == "road":
        brown = np.cumsum(rng.standard_normal(size))
        spectrum = np.fft.rfft(brown - brown.mean())
        spectrum[np.fft.rfftfreq(size, 1 / rate) > _ROAD_CORNER_HZ] = 0
        spectrum[0] = 0
        return _unit_power(np.fft.irfft(spectrum, size))
    # babble: each voice says its sentences on a loop, started at a different point, summed
    babble = np.zeros(size)
    for index, voice in enumerate(_BABBLE_VOICES):
        texts = _BABBLE_TEXT[index:] + _BABBLE_TEXT[:index]
        speech = np.concatenate([synthesize(text, voice=voice) for text in texts[:3]])
        talker = _unit_power(speech.astype(np.float64))
        start = rng.integers(talker.size)
        babble += np.take(talker, np.arange(start, start + size), mode="wrap")
    return _unit_power(babble)


@functools.lru_cache(maxsize=4)
def _file_noise(path: str, _modified: int, rate: int) -> np.ndarray:
    try:
        samples, file_rate = wav_samples(Path(path).read_bytes())
    except Exception as e:  # wave.Error, EOFError, OSError: all say the same to the caller
        raise LineError(f"Noise(kind={path!r}) is no PCM16 WAV file ({e}): convert it") from None
    pcm = resample(samples, file_rate, rate)
    if not pcm.size or not np.any(pcm):
        raise LineError(f"Noise(kind={path!r}) holds only silence: record some noise into it")
    return _unit_power(pcm.astype(np.float64))


# -- helpers ---------------------------------------------------------------------------------

_EXAMPLE = "{noise: {kind: babble, snr_db: 10}}, telephone"


def _condition(item: object, index: int) -> Condition:
    """One condition of a written line."""
    if isinstance(item, CONDITIONS):
        return item
    fields: object
    if isinstance(item, str):
        name, fields = item, {}
    elif isinstance(item, Mapping) and len(item) == 1:
        name, fields = next(iter(item.items()))
        fields = {} if fields is None else fields
    else:
        raise LineError(
            f"condition {index + 1} ({item!r}) is a name or one name with its fields, e.g. "
            f"[{_EXAMPLE}]"
        )
    kind = _BY_NAME.get(str(name))
    if kind is None:
        raise LineError(
            f"condition {index + 1}: {name!r} is no condition; the conditions are "
            f"{', '.join(_BY_NAME)}"
        )
    if not isinstance(fields, Mapping):
        raise LineError(
            f"condition {index + 1}: {name}'s fields are a mapping, e.g. {{{name}: "
            f"{{{_first_field(kind)}: ...}}}}, not {fields!r}"
        )
    known = [f.name for f in dataclasses.fields(kind)]
    for key in fields:
        if key not in known:
            given = ", ".join(known) or "none"
            raise LineError(f"condition {index + 1}: {name} has no field {key!r} ({given})")
    try:
        return kind(**fields)
    except LineError as e:
        raise LineError(f"condition {index + 1}: {e}") from None


def _first_field(kind: type[Condition]) -> str:
    return next((f.name for f in dataclasses.fields(kind)), "")


def _require_number(condition: Condition, field: str, low: float, high: float) -> None:
    value = getattr(condition, field)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise LineError(
            f"{type(condition).__name__}({field}={value!r}): give a number from {low:g} to {high:g}"
        )


def _require_seed(condition: Noise | PacketLoss | Jitter) -> None:
    if isinstance(condition.seed, bool) or not isinstance(condition.seed, int):
        raise LineError(f"{type(condition).__name__}(seed={condition.seed!r}): give an integer")


def _require_conceal(condition: PacketLoss | Jitter) -> None:
    if condition.conceal not in CONCEALMENTS:
        raise LineError(
            f"{type(condition).__name__}(conceal={condition.conceal!r}): give "
            f"{' or '.join(map(repr, CONCEALMENTS))}"
        )


def _require_frame(condition: PacketLoss | Jitter) -> None:
    frame = condition.frame_ms
    if isinstance(frame, bool) or not isinstance(frame, int) or not 1 <= frame <= 1000:
        raise LineError(
            f"{type(condition).__name__}(frame_ms={frame!r}): give whole milliseconds from 1 "
            f"to 1000 (livekit's frames are {FRAME_MS})"
        )


def _dbfs_power(dbfs: float) -> float:
    return (_FULL_SCALE * 10 ** (dbfs / 20)) ** 2


def _unit_power(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio, np.float64)
    unit: np.ndarray = audio / np.sqrt(np.mean(audio**2))
    return unit


def named_line(text: str) -> tuple[str, Line]:
    """A line given as text (``--conditions``), and its name: a preset's name or the start of
    one (``telephone``, ``café``), else the written form as YAML (``"[telephone, {noise:
    {kind: babble, snr_db: 10}}]"``); ``LineError`` says which names there are."""
    import yaml

    starting = [name for name in PRESETS if name.casefold().startswith(text.strip().casefold())]
    if text.strip() and len(starting) == 1:
        return starting[0], PRESETS[starting[0]]
    if text.strip() in PRESETS:
        return text.strip(), PRESETS[text.strip()]
    try:
        written = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise LineError(f"{text!r} is no line's written form ({e})") from None
    if not isinstance(written, list):
        which = f"starts {len(starting)} of them" if starting else "names none of them"
        raise LineError(
            f"{text!r} {which}: name one of {', '.join(map(repr, PRESETS))} (or its start), "
            f"or write the conditions as a YAML list, e.g. '[{_EXAMPLE}]'"
        )
    line = Line.read(written)
    return str(line), line


PRESETS: dict[str, Line] = {
    "clean": Line(),
    "café (babble, 10 dB SNR)": Line(Noise(10, "babble")),
    "street (road noise, 5 dB SNR)": Line(Noise(5, "road")),
    "hiss (white noise, 20 dB SNR)": Line(Noise(20, "white")),
    "poor microphone (+20 dB, clipping)": Line(Gain(20, clip_dbfs=-6)),
    "telephone (8 kHz mu-law)": Line(Telephone()),
    "lossy network (10% loss, jitter)": Line(PacketLoss(0.1, "repeat"), Jitter(20, 60)),
    "bad mobile call": Line(Noise(10, "road"), Telephone(), PacketLoss(0.05, "silence")),
}
"""named lines: ``VoiceView``'s choices, the benchmark's ``--conditions`` names"""
