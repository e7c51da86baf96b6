"""A local OpenAI-compatible server (Realtime websocket + Chat Completions), and Gemini Live,
for offline agents."""

from ._params import ParameterError
from .errors import EmulatorError, ReplyError, ReplyRuleError, UnknownRuleError
from .faults import Faults
from .gemini_live import GeminiEndpoint
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
    "GeminiEndpoint",
    "Judgment",
    "LatencyModel",
    "ModelCatalog",
    "ParameterError",
    "ReplyContext",
    "ReplyError",
    "ReplyRuleError",
    "ReplyRules",
    "Rule",
    "TextReply",
    "ToolCallReply",
    "ToolCallsReply",
    "ToolSpec",
    "Turn",
    "UnknownRuleError",
    "VerdictReply",
]
