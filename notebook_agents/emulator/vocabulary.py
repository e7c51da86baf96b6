"""What a caller of a session may say, from what its model was told: the tools it was offered
(their names, parameters, descriptions, enum members), its instructions, and the words its
transcription is told to expect (a prompt, keywords). Speech recognition listens in it, so a
caller saying "lookup weather location Paris" reaches the tool as typing it would.

A realtime session's vocabulary is its own. A cascaded session's STT request names none of
its LLM's tools or instructions, so the emulator keeps what its models were offered
(``OfferedWords``) and its transcription endpoint listens in all of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..speech import Parameter, Request, Vocabulary
from ..speech.grammar import Kind
from .replies import ToolSpec, _members, _resolve, _schema_type

MAX_INSTRUCTIONS = 32
"""distinct instructions an emulator keeps for its STT to listen in, the latest"""
_KINDS: dict[str, Kind] = {
    "string": "text",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
}
"""a JSON schema type's spoken kind; lists and objects are not said"""


def vocabulary(
    instructions: str,
    tools: Iterable[ToolSpec],
    expected: Iterable[str] = (),
    *,
    keywords: Iterable[str] = (),
) -> Vocabulary:
    """The vocabulary of a session with these ``instructions`` and ``tools``, whose
    transcription expects the words of ``expected`` (a prompt) and ``keywords``: a caller may
    say a keyword on its own, and any of them as an argument's value."""
    tools = list(tools)
    phrases = [k for k in keywords if k.strip()]
    texts = [*phrases, *(t for t in expected if t.strip())]
    for tool in tools:
        texts.extend(_texts_of(tool))
    texts.append(instructions)
    requests = [tool_request(tool) for tool in tools]
    requests.extend(Request(keyword) for keyword in phrases)
    return Vocabulary(requests=tuple(requests), texts=tuple(t for t in texts if t))


def tool_request(tool: ToolSpec) -> Request:
    """How a caller asks for ``tool``: its name, and the parameters a voice can give (text,
    numbers, booleans, enum members; not lists or objects)."""
    parameters = []
    properties: dict[str, Any] = tool.parameters.get("properties") or {}
    for name, schema in properties.items():
        resolved = _resolve(schema, tool.parameters) if isinstance(schema, dict) else {}
        members = _members(resolved)
        if members is not None:
            parameters.append(Parameter(name, "choice", tuple(str(m) for m in members)))
        elif (kind := _KINDS.get(_schema_type(resolved))) is not None:
            parameters.append(Parameter(name, kind))
    return Request(tool.name, tuple(parameters))


def _texts_of(tool: ToolSpec) -> list[str]:
    """A tool's description, its parameters' and their enum members (each a name)."""
    texts = [tool.description]
    properties: dict[str, Any] = tool.parameters.get("properties") or {}
    for schema in properties.values():
        if isinstance(schema, dict):
            resolved = _resolve(schema, tool.parameters)
            texts.append(str(schema.get("description") or resolved.get("description") or ""))
            texts.extend(str(member) for member in _members(resolved) or [])
    return texts


@dataclass
class OfferedWords:
    """The tools (latest of each name) and instructions models on this emulator were
    offered: what a cascaded session's caller may say, its STT request naming none of it."""

    tools: dict[str, ToolSpec] = field(default_factory=dict)
    instructions: dict[str, None] = field(default_factory=dict)
    """distinct instructions, the latest ``MAX_INSTRUCTIONS``"""

    def offer(self, instructions: str, tools: Iterable[ToolSpec]) -> None:
        """Note what a request told its model, so its caller is heard in those words."""
        self.tools.update((tool.name, tool) for tool in tools)
        if instructions.strip():
            self.instructions.pop(instructions, None)
            self.instructions[instructions] = None
            while len(self.instructions) > MAX_INSTRUCTIONS:
                del self.instructions[next(iter(self.instructions))]

    def vocabulary(
        self, expected: Iterable[str] = (), *, keywords: Iterable[str] = ()
    ) -> Vocabulary:
        """What a caller of any session here may say, with a transcription request's
        ``expected`` words (its prompt) and ``keywords``."""
        return vocabulary(
            "\n".join(self.instructions), self.tools.values(), expected, keywords=keywords
        )
