"""A local OpenAI-compatible server (Realtime websocket + Chat Completions) for offline agents."""

from ._params import ParameterError
from .errors import EmulatorError
from .faults import Faults
from .judging import Judgment, VerdictReply
from .latency import LatencyModel
from .models import ModelCatalog
from .replies import (
    ReplyContext,
    ReplyRules,
    Rule,
    TextReply,
    ToolCallReply,
    ToolCallsReply,
    ToolSpec,
    Turn,
)
from .server import Emulator

__all__ = [
    "Emulator",
    "EmulatorError",
    "Faults",
    "Judgment",
    "LatencyModel",
    "ModelCatalog",
    "ParameterError",
    "ReplyContext",
    "ReplyRules",
    "Rule",
    "TextReply",
    "ToolCallReply",
    "ToolCallsReply",
    "ToolSpec",
    "Turn",
    "VerdictReply",
]
