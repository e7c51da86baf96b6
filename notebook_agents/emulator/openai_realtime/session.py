"""A realtime session's settings as the service keeps them: its defaults, ``session.update``'s
merge, a beta transcription session's defaults, and its function tools as the reply rules see
them."""

from __future__ import annotations

import copy
from typing import Any

from ..conversation import new_id
from ..replies import ToolSpec

SAMPLE_RATE = 24_000
"""PCM16 mono at 24 kHz, both ways: the session's ``audio/pcm`` format"""


def default_session(model: str) -> dict[str, Any]:
    """The session a new connection starts with, as the service defaults it."""
    audio_format = {"type": "audio/pcm", "rate": SAMPLE_RATE}
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": new_id("sess_"),
        "model": model,
        "output_modalities": ["audio"],
        "instructions": "",
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "audio": {
            "input": {
                "format": audio_format,
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": {
                    "type": "server_vad",
                    "threshold": 0.5,
                    "prefix_padding_ms": 300,
                    "silence_duration_ms": 200,
                    "create_response": True,
                    "interrupt_response": True,
                },
            },
            "output": {"format": audio_format, "voice": "marin", "speed": 1.0},
        },
    }


def merge_session(current: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Apply a ``session.update``: only the fields it names change (``audio`` merges deeply)."""
    merged = copy.deepcopy(current)
    for key, value in update.items():
        if key == "audio" and isinstance(value, dict):
            audio = merged.setdefault("audio", {})
            for direction, settings in value.items():
                if isinstance(settings, dict):
                    audio.setdefault(direction, {}).update(copy.deepcopy(settings))
        elif key != "type":
            merged[key] = copy.deepcopy(value)
    return merged


TRANSCRIPTION_DEFAULTS: dict[str, Any] = {
    "input_audio_format": "pcm16",
    "input_audio_transcription": None,
    "input_audio_noise_reduction": None,
    "turn_detection": {
        "type": "server_vad",
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 500,
    },
    "modalities": ["text"],
}
"""a new beta transcription session's, as OpenAI's reference defaults them"""


def tool_spec(tool: dict[str, Any]) -> ToolSpec:
    """A session's (or a response's) function tool, as the reply rules see it."""
    return ToolSpec(
        name=str(tool.get("name", "")),
        parameters=tool.get("parameters") or {},
        description=str(tool.get("description") or ""),
    )
