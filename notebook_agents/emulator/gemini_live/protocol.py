"""Gemini Live's wire format (``BidiGenerateContent``): client messages parsed and checked,
server messages checked, and a conversation's content as the emulator's items.

Google's reference (ai.google.dev/api/live): every client message holds exactly one of
``setup``, ``clientContent``, ``realtimeInput`` or ``toolResponse``; the server answers with
messages holding ``setupComplete``, ``serverContent``, ``toolCall``, ``toolCallCancellation``,
``usageMetadata``, ``goAway`` or ``sessionResumptionUpdate``. There is no error message: the
service closes the websocket with a code and a reason (1007 an invalid argument, 1008 a policy
violation such as an unknown model, 1011 an internal error), which google-genai raises as
``APIError``. Checked with google-genai's own types, so the emulator can neither accept what
the service would refuse nor send what the SDK could not parse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from ...errors import NotebookAgentsError
from ..replies import ToolSpec

CLIENT_KINDS = ("setup", "clientContent", "realtimeInput", "toolResponse")

# RFC 6455 close codes as the Live API uses them
INVALID_ARGUMENT = 1007
POLICY_VIOLATION = 1008
INTERNAL_ERROR = 1011


@dataclass
class Closing(NotebookAgentsError):
    """What ends a session as the service ends it: a close frame with ``code`` and ``reason``."""

    code: int
    reason: str

    def __str__(self) -> str:
        return f"{self.code} {self.reason}"


@cache
def _types() -> tuple[type[BaseModel], type[BaseModel]]:
    # google-genai is the gemini extra's: imported only when a Gemini client connects
    from google.genai import types

    return types.LiveClientMessage, types.LiveServerMessage


def parse_client_message(raw: str | bytes, *, validate: bool) -> tuple[str, dict[str, Any]]:
    """``(kind, body)`` of a client message, or ``Closing`` with the service's 1007."""
    try:
        message = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise Closing(INVALID_ARGUMENT, f"Invalid JSON payload received. {e}") from None
    message = camel_case(message)
    kinds = [k for k in message if k in CLIENT_KINDS] if isinstance(message, dict) else []
    if not isinstance(message, dict) or len(kinds) != 1 or len(message) != 1:
        raise Closing(
            INVALID_ARGUMENT,
            "Request contains an invalid argument: a message holds exactly one of "
            + ", ".join(CLIENT_KINDS),
        )
    if validate:
        try:
            _types()[0].model_validate(message)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise Closing(
                INVALID_ARGUMENT, f"Invalid JSON payload received. {where}: {first['msg']}"
            ) from None
    body = message[kinds[0]]
    return kinds[0], body if isinstance(body, dict) else {}


def camel_case(value: Any) -> Any:
    """A message with its field names in lowerCamelCase.

    Protobuf's JSON mapping: "Parsers accept both the lowerCamelCase name (or the one
    specified by the json_name option) and the original proto field name", and google-genai
    sends both (``client_content``, ``generationConfig.candidate_count``). The keys of
    user data (a call's ``args``, a response's ``response``, JSON schemas, the names of a
    schema's ``properties``) are kept as they are.
    """
    if isinstance(value, list):
        return [camel_case(v) for v in value]
    if not isinstance(value, dict):
        return value
    converted: dict[str, Any] = {}
    for key, inner in value.items():
        name = _camel(key)
        if name in _USER_DATA:
            converted[name] = inner
        elif name == "properties" and isinstance(inner, dict):
            converted[name] = {prop: camel_case(schema) for prop, schema in inner.items()}
        else:
            converted[name] = camel_case(inner)
    return converted


_USER_DATA = frozenset({"args", "response", "parametersJsonSchema", "responseJsonSchema"})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class ServerMessageInvalid(NotebookAgentsError, AssertionError):
    """The emulator built a message google-genai could not parse: a bug in the emulator."""


def check_server_message(message: dict[str, Any]) -> None:
    try:
        _types()[1].model_validate(message)
    except ValidationError as e:
        raise ServerMessageInvalid(f"{sorted(message)} does not validate: {e}") from None


def content_items(content: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``Content`` (role ``user`` or ``model``, its parts) as the conversation's items:
    its text as one message, each function call and response as its own item."""
    role = "assistant" if content.get("role") == "model" else "user"
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in content.get("parts") or []:
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        elif call := part.get("functionCall"):
            items.append(function_call_item(call))
        elif response := part.get("functionResponse"):
            items.append(function_response_item(response))
    if texts:
        kind = "output_text" if role == "assistant" else "input_text"
        message = {
            "type": "message",
            "role": role,
            "content": [{"type": kind, "text": "".join(texts)}],
        }
        items.insert(0, message)
    return items


def function_call_item(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.get("id") or "",
        "name": call.get("name") or "",
        "arguments": json.dumps(call.get("args") or {}, separators=(",", ":")),
    }


def function_response_item(response: dict[str, Any]) -> dict[str, Any]:
    """A ``FunctionResponse``; livekit puts the tool's output under ``output`` (an error under
    ``error``), so that is what the model reads."""
    body = response.get("response") or {}
    output = body.get("output", body.get("error", body)) if isinstance(body, dict) else body
    return {
        "type": "function_call_output",
        "call_id": response.get("id") or "",
        "output": output if isinstance(output, str) else json.dumps(output),
    }


def tool_specs(setup: dict[str, Any]) -> list[ToolSpec]:
    """The function declarations of a ``setup``'s tools, their schemas as JSON Schema."""
    specs = []
    for tool in setup.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            parameters = declaration.get("parametersJsonSchema") or json_schema(
                declaration.get("parameters") or {}
            )
            specs.append(
                ToolSpec(
                    name=str(declaration.get("name") or ""),
                    parameters=parameters,
                    description=str(declaration.get("description") or ""),
                )
            )
    return specs


def json_schema(schema: Any) -> Any:
    """A Gemini ``Schema`` (OpenAPI's subset: types in capitals, ``STRING``) as JSON Schema."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: json_schema(value) for key, value in schema.items()}
    if isinstance(kind := schema.get("type"), str):
        converted["type"] = kind.lower()
    if schema.get("nullable") is True and isinstance(kind, str):
        converted["type"] = [kind.lower(), "null"]
        del converted["nullable"]
    return converted


def instructions_of(setup: dict[str, Any]) -> str:
    """The text of a ``setup``'s ``systemInstruction``."""
    instruction = setup.get("systemInstruction") or {}
    parts = instruction.get("parts") or [] if isinstance(instruction, dict) else []
    return "".join(str(p.get("text") or "") for p in parts)
