"""Line conditions: each changes the caller's audio as it says, measured on the output."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from livekit.agents.voice.room_io import AudioInputOptions

from notebook_agents.speech import SAMPLE_RATE, synthesize
from notebook_agents.speech.line import (
    FRAME_MS,
    PRESETS,
    Gain,
    Jitter,
    Line,
    LineError,
    Noise,
    PacketLoss,
    Telephone,
    as_line,
    mu_law,
    named_line,
    speech_power,
)
from notebook_agents.speech.wav import wav_bytes

SENTENCE = "I would like to change my appointment to next Tuesday afternoon please"


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    return synthesize(SENTENCE)


def _snr_db(clean: np.ndarray, out: np.ndarray) -> float:
    """The SNR on the output: the speech's power (where it is not a pause) over the power of
    what the line added."""
    added = out.astype(np.float64) - clean
    power = speech_power(clean)
    assert power is not None
    return 10 * math.log10(power / float(np.mean(added**2)))


def _frames(samples: np.ndarray, frame_ms: int = FRAME_MS) -> np.ndarray:
    size = SAMPLE_RATE * frame_ms // 1000
    whole = samples.size - samples.size % size
    return samples[:whole].reshape(-1, size)


@pytest.mark.parametrize("kind", ["white", "babble", "road", "file"])
def test_noise_is_added_at_the_snr_asked_measured_on_the_output(
    speech: np.ndarray, kind: str, tmp_path: Path
) -> None:
    if kind == "file":  # a user's recording of noise: a hum and its harmonics
        t = np.arange(3 * SAMPLE_RATE) / SAMPLE_RATE
        hum = 3000 * np.sin(2 * np.pi * 50 * t) + 1000 * np.sin(2 * np.pi * 150 * t)
        path = tmp_path / "hum.wav"
        path.write_bytes(wav_bytes(hum.astype(np.int16), SAMPLE_RATE))
        kind = str(path)
    for snr in (0, 10, 20):
        out = Line(Noise(snr, kind)).apply(speech, SAMPLE_RATE)
        assert out.size == speech.size
        assert _snr_db(speech, out) == pytest.approx(snr, abs=0.1)


def test_live_noise_follows_the_level_of_the_speech_heard_so_far(speech: np.ndarray) -> None:
    """Chunk by chunk (``hear``), the noise is set against the speech level heard so far:
    over a turn it comes within a dB or two of the SNR asked."""
    stream = Line(Noise(10, "white")).stream(SAMPLE_RATE)
    chunk = SAMPLE_RATE // 50
    out = np.concatenate(
        [stream.process(speech[i : i + chunk]) for i in range(0, speech.size, chunk)]
    )
    assert abs(_snr_db(speech, out) - 10) < 2


def test_babble_is_several_voices_and_road_noise_is_low(speech: np.ndarray) -> None:
    babble = Line(Noise(0, "babble")).apply(np.zeros_like(speech) + 1000, SAMPLE_RATE)
    road = Line(Noise(0, "road")).apply(np.zeros_like(speech) + 1000, SAMPLE_RATE)
    white = Line(Noise(0, "white")).apply(np.zeros_like(speech) + 1000, SAMPLE_RATE)

    def share_below(samples: np.ndarray, hz: float) -> float:
        spectrum = np.abs(np.fft.rfft(samples.astype(np.float64) - 1000)) ** 2
        return float(spectrum[np.fft.rfftfreq(samples.size, 1 / SAMPLE_RATE) < hz].sum()) / float(
            spectrum.sum()
        )

    assert share_below(road, 500) > 0.99
    assert share_below(white, 500) < 0.1
    assert 0.2 < share_below(babble, 1000) < 0.95  # speech's band, not a rumble nor a hiss


def test_a_line_is_the_same_for_the_same_seed_and_differs_for_another(
    speech: np.ndarray,
) -> None:
    line = Line(Noise(5, "white", seed=1), Telephone(), PacketLoss(0.2, seed=1))
    assert np.array_equal(line.apply(speech, SAMPLE_RATE), line.apply(speech, SAMPLE_RATE))
    other = Line(Noise(5, "white", seed=2), PacketLoss(0.2, seed=2))
    assert not np.array_equal(line.apply(speech, SAMPLE_RATE), other.apply(speech, SAMPLE_RATE))


def _tone(seconds: float) -> np.ndarray:
    """A sound no frame of which is silent or like another: a rising tone."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (8000 * np.sin(2 * np.pi * (200 + 50 * t) * t) + 200).astype(np.int16)


def test_frames_are_livekits() -> None:
    assert FRAME_MS == AudioInputOptions().frame_size_ms == 50


@pytest.mark.parametrize("rate", [0.05, 0.2])
def test_a_loss_rate_counted_in_frames_is_the_one_asked(rate: float) -> None:
    """Lost frames concealed as silence: whole livekit frames of zeros, as many as a
    Bernoulli draw at ``rate`` gives (within 4 standard deviations)."""
    tone = _tone(60)
    line = Line(PacketLoss(rate, "silence", seed=7))
    stream = line.stream(SAMPLE_RATE)
    out = np.concatenate([stream.process(tone), stream.flush()])
    frames = _frames(out)
    silent = int(np.sum(~frames.any(axis=1)))
    n = frames.shape[0]
    assert abs(silent - rate * n) < 4 * math.sqrt(n * rate * (1 - rate))
    assert stream.frames == {"packet_loss": (silent, n - silent)}
    # nothing but whole frames went: every other frame is the tone's, untouched
    kept = frames[frames.any(axis=1)]
    assert np.array_equal(kept, _frames(tone)[frames.any(axis=1)])


def test_lost_frames_concealed_by_repeats_repeat_the_last_frame() -> None:
    tone = _tone(30)
    out = Line(PacketLoss(0.1, "repeat", seed=3)).apply(tone, SAMPLE_RATE)
    frames, sent = _frames(out), _frames(tone)
    lost = [i for i in range(len(sent)) if not np.array_equal(frames[i], sent[i])]
    assert abs(len(lost) - 0.1 * len(sent)) < 4 * math.sqrt(len(sent) * 0.1 * 0.9)
    assert lost[0] == 0  # (seed 3) lost before any frame came: nothing to repeat, silence
    assert not frames[0].any()
    for i in lost[1:]:  # the frame before it, as it was heard (a repeat of a repeat, in a run)
        assert np.array_equal(frames[i], frames[i - 1])
    assert np.all(frames[1:].any(axis=1))  # no other silence


def test_jitter_loses_the_frames_later_than_its_buffer_and_adds_its_wait() -> None:
    tone = _tone(60)
    jitter = Jitter(ms=30, buffer_ms=60, seed=5)
    stream = Line(jitter).stream(SAMPLE_RATE)
    out = np.concatenate([stream.process(tone), stream.flush()])
    wait = SAMPLE_RATE * 60 // 1000
    assert not out[:wait].any() and out.size >= tone.size + wait
    late, passed = stream.frames["jitter"]
    n = late + passed
    share = math.exp(-60 / 30)
    assert jitter.late_share == pytest.approx(share)
    assert abs(late - share * n) < 4 * math.sqrt(n * share * (1 - share))
    silent = int(np.sum(~_frames(out[wait:]).any(axis=1)))
    assert silent == late


def test_a_telephone_line_removes_what_is_above_4_khz(speech: np.ndarray) -> None:
    out = Line(Telephone()).apply(speech, SAMPLE_RATE)
    assert abs(out.size - speech.size) <= 2  # the same audio, at the caller's rate

    def above_4k(samples: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(samples.astype(np.float64))) ** 2
        high = np.fft.rfftfreq(samples.size, 1 / SAMPLE_RATE) > 4000
        return float(spectrum[high].sum() / spectrum.sum())

    assert above_4k(speech) > 0.01  # eSpeak's voice has its sibilants up there
    assert above_4k(out) < 1e-5
    assert np.corrcoef(speech[: out.size], out[: speech.size])[0, 1] > 0.8  # still the voice


def test_a_telephone_line_quantizes_by_mu_law() -> None:
    """At 8 kHz only mu-law's 256 levels (255 values: +0 and -0) come out: G.711's table."""
    narrow = synthesize(SENTENCE, rate=8_000)
    out = Line(Telephone()).apply(narrow, 8_000)
    levels = np.unique(mu_law(np.arange(-32768, 32768)))
    assert levels.size == 255 and levels.max() == 32124 and levels.min() == -32124
    assert set(np.unique(out)) <= set(levels)
    assert np.unique(out).size < np.unique(narrow).size / 4
    # G.711 mu-law's first segments: steps of 8 up to 120, then of 16 from 132
    assert list(levels[(levels >= 0) & (levels <= 164)]) == [
        *range(0, 121, 8),
        *range(132, 165, 16),
    ]


def test_gain_amplifies_and_clips_where_asked(speech: np.ndarray) -> None:
    louder = Line(Gain(6)).apply(speech // 4, SAMPLE_RATE).astype(np.float64)
    assert np.sqrt(np.mean(louder**2) / np.mean((speech // 4).astype(np.float64) ** 2)) == (
        pytest.approx(10 ** (6 / 20), rel=0.01)
    )
    clipped = Line(Gain(20, clip_dbfs=-6)).apply(speech, SAMPLE_RATE)
    ceiling = int(32767 * 10 ** (-6 / 20))
    assert np.abs(clipped).max() <= ceiling + 1
    assert np.mean(np.abs(clipped) >= ceiling) > 0.05  # flat tops: a clipped voice
    quiet = Line(Gain(-20)).apply(speech, SAMPLE_RATE)
    assert np.abs(quiet).max() < np.abs(speech).max() / 9


def test_conditions_apply_in_the_order_a_call_crosses_them() -> None:
    line = Line(Jitter(), Telephone(), PacketLoss(), Gain(3), Noise())
    assert [type(c) for c in line.conditions] == [Noise, Gain, Telephone, PacketLoss, Jitter]
    assert str(Line()) == "clean"
    assert str(Line(Telephone(), Noise(10, "babble"))) == (
        "babble noise at 10 dB SNR, telephone (8 kHz mu-law)"
    )


def test_the_written_form_reads_back() -> None:
    written = [{"noise": {"kind": "babble", "snr_db": 10}}, "telephone", {"jitter": None}]
    line = Line.read(written)
    assert line == Line(Noise(10, "babble"), Telephone(), Jitter())
    assert Line.read(line.to_records()) == line
    assert line.to_records()[0] == {"noise": {"snr_db": 10, "kind": "babble", "seed": 0}}
    assert as_line(None) == Line() == as_line([])
    assert as_line(Telephone()) == Line(Telephone())
    assert as_line([Telephone(), Gain(3)]) == Line(Gain(3), Telephone())
    for name, preset in PRESETS.items():
        assert Line.read(preset.to_records()) == preset, name


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("telephone", r"conditions are a list, e\.g\. \[\{noise:"),
        (["phone"], r"'phone' is no condition; the conditions are noise, gain, telephone"),
        ([{"noise": {"snr": 10}}], r"noise has no field 'snr' \(snr_db, kind, seed\)"),
        ([{"noise": 10}], r"noise's fields are a mapping, e\.g\. \{noise: \{snr_db: \.\.\.\}\}"),
        ([{"noise": {}, "gain": {}}], r"a name or one name with its fields"),
        ([{"noise": {"kind": "pink"}}], r"give one of white, babble, road, or a WAV file"),
        ([{"noise": {"kind": "no/such.wav"}}], r"no such file"),
        ([{"packet_loss": {"rate": 5}}], r"PacketLoss\(rate=5\): give a number from 0 to 1"),
        ([{"packet_loss": {"conceal": "noise"}}], r"give 'silence' or 'repeat'"),
        ([{"jitter": {"frame_ms": 2.5}}], r"whole milliseconds from 1 to 1000"),
        ([{"gain": {"db": "loud"}}], r"Gain\(db='loud'\): give a number"),
    ],
)
def test_a_condition_written_wrong_says_how_to_write_it(written: object, says: str) -> None:
    with pytest.raises(LineError, match=says):
        Line.read(written)


def test_a_line_is_named_by_a_preset_or_written_as_yaml() -> None:
    assert named_line("telephone") == ("telephone (8 kHz mu-law)", Line(Telephone()))
    assert named_line("CAFÉ") == ("café (babble, 10 dB SNR)", Line(Noise(10, "babble")))
    assert named_line("clean") == ("clean", Line())
    written = "[telephone, {noise: {kind: road, snr_db: 5}}]"
    assert named_line(written) == (
        "road noise at 5 dB SNR, telephone (8 kHz mu-law)",
        Line(Noise(5, "road"), Telephone()),
    )
    with pytest.raises(LineError, match=r"'phone' names none of them: name one of 'clean', "):
        named_line("phone")
    with pytest.raises(LineError, match=r"'c' starts 2 of them"):  # clean, café
        named_line("c")
