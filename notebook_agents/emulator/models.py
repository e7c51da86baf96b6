"""The model names (and speech voices) the emulator answers to, as the real service would
list them."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, get_args

from .errors import ServiceError


def livekit_catalogue(models: object) -> tuple[str, ...]:
    """Every model name one of livekit's catalogue types lists, in its order: a ``Literal`` of
    names, or a union of them (``inference.LLMModels`` is ``OpenAIModels | GoogleModels |
    ...``)."""
    names: list[str] = []
    for part in get_args(models):
        names.extend([part] if isinstance(part, str) else livekit_catalogue(part))
    return tuple(names)


REALTIME_MODELS = (
    "gpt-realtime",
    "gpt-realtime-mini",
    "gpt-realtime-2",
    "gpt-4o-realtime-preview",
    "gpt-4o-mini-realtime-preview",
)
CHAT_MODELS = (
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
)


@functools.cache
def livekit_inference_models() -> dict[str, tuple[str, ...]]:
    """LiveKit Inference's models by kind, as the installed livekit lists them: its LLMs
    (``inference.LLMModels``: OpenAI's, Google's Gemini, Kimi, DeepSeek, ...; its gateway speaks
    Chat Completions for all of them, so the emulator answers them as it answers OpenAI's), its
    speech recognition (``inference.STTModels``: ``deepgram/nova-3``, ..., and ``auto``: heard
    by the emulator's own recognizer whichever is named) and its speech synthesis
    (``inference.TTSModels``: ``cartesia/sonic-3``, ..., and a provider alone, ``cartesia``:
    spoken by eSpeak NG whichever is named). Read when first asked: importing livekit.agents
    takes seconds, and the emulator's command starts without it."""
    from livekit.agents import inference

    return {
        "chat": livekit_catalogue(inference.LLMModels),
        "inference_stt": livekit_catalogue(inference.STTModels),
        "inference_tts": livekit_catalogue(inference.TTSModels),
    }


TRANSCRIPTION_MODELS = (
    "gpt-transcribe",
    "gpt-4o-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-transcribe-diarize",
    "whisper-1",
)
"""``POST /v1/audio/transcriptions``'s models (the ``openai`` package's ``AudioModel``)"""
SPEECH_MODELS = ("gpt-4o-mini-tts", "tts-1", "tts-1-hd")
"""``POST /v1/audio/speech``'s models (the ``openai`` package's ``SpeechModel``)"""
SPEECH_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "cedar",
    "coral",
    "echo",
    "fable",
    "marin",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
)
"""the built-in voices OpenAI's speech reference lists (all spoken by eSpeak here)"""

ModelKind = Literal["chat", "realtime", "transcription", "speech", "inference_stt", "inference_tts"]


@dataclass
class ModelCatalog:
    """Known models; a dated snapshot (``gpt-4o-mini-2024-07-18``) counts as its family."""

    realtime: set[str] = field(default_factory=lambda: set(REALTIME_MODELS))
    chat: set[str] = field(default_factory=lambda: set(CHAT_MODELS))
    transcription: set[str] = field(default_factory=lambda: set(TRANSCRIPTION_MODELS))
    speech: set[str] = field(default_factory=lambda: set(SPEECH_MODELS))
    inference_stt: set[str] = field(default_factory=set)
    inference_tts: set[str] = field(default_factory=set)
    _with_livekit: bool = field(default=False, repr=False)
    """whether livekit's catalogue (``livekit_inference_models``) is in the sets yet"""

    def add(
        self, names: Iterable[str], *, realtime: bool = False, kind: ModelKind | None = None
    ) -> None:
        """Know ``names`` as models of ``kind`` (chat by default; ``realtime=True`` is
        ``kind="realtime"``)."""
        self._names(realtime, kind).update(names)

    def knows(self, model: str, *, realtime: bool = False, kind: ModelKind | None = None) -> bool:
        names = self._names(realtime, kind)
        return model in names or any(model.startswith(f"{name}-20") for name in names)

    def all(self) -> list[str]:
        """What ``GET /v1/models`` lists: the chat and realtime models (the ones
        ``GET /v1/models/{id}`` retrieves)."""
        return sorted(self.realtime | self._names(False, "chat"))

    def refusal(self, model: str, kind: ModelKind) -> ServiceError:
        """The 404 a request for ``model``, unknown as a ``kind`` model, is answered with."""
        return ServiceError(
            f"The model `{model}` does not exist in the emulator's catalog of {kind} models: "
            f"use one of {', '.join(sorted(self._names(False, kind)))}, or add it: "
            f"`emulator.settings.models.add([{model!r}], kind={kind!r})`.",
            status=404,
            code="model_not_found",
            param="model",
        )

    def _names(self, realtime: bool, kind: ModelKind | None) -> set[str]:
        chosen: ModelKind = kind or ("realtime" if realtime else "chat")
        if not self._with_livekit and chosen in ("chat", "inference_stt", "inference_tts"):
            self._with_livekit = True
            self.chat.update(livekit_inference_models()["chat"])
            self.inference_stt.update(livekit_inference_models()["inference_stt"])
            self.inference_tts.update(livekit_inference_models()["inference_tts"])
        kinds = {
            "chat": self.chat,
            "realtime": self.realtime,
            "transcription": self.transcription,
            "speech": self.speech,
            "inference_stt": self.inference_stt,
            "inference_tts": self.inference_tts,
        }
        return kinds[chosen]
