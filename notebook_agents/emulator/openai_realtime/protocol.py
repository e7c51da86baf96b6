"""The Realtime API's wire format: parse and validate client events, check server events.

Validation uses the ``openai`` package's own realtime types, so the emulator can neither
accept what the real service would reject nor send what a real client could not parse.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from openai.types.beta.realtime import RealtimeClientEvent as BetaClientEvent
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.beta.realtime.transcription_session import ClientSecret, TranscriptionSession
from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from pydantic import BaseModel, ValidationError

from ...errors import NotebookAgentsError
from ..errors import ServiceError


def _models_by_type(union: Any) -> dict[str, type[BaseModel]]:
    # The unions are Annotated[Union[...], PropertyInfo(discriminator="type")]; pydantic does
    # not read openai's discriminator, so each event is validated against its own model.
    members = get_args(get_args(union)[0])
    return {get_args(m.model_fields["type"].annotation)[0]: m for m in members}


CLIENT_EVENTS: dict[str, type[BaseModel]] = _models_by_type(RealtimeClientEvent)
SERVER_EVENTS: dict[str, type[BaseModel]] = _models_by_type(RealtimeServerEvent)


class _SocketTranscriptionSession(TranscriptionSession):
    # OpenAI's reference (TranscriptionSession.client_secret): "This property is not present
    # when a session is updated via the WebSocket API"; the package's type requires it
    client_secret: ClientSecret | None = None  # type: ignore[assignment]


class _TranscriptionSessionEvent(BaseModel):
    # OpenAI's OpenAPI spec (RealtimeBetaServerEventTranscriptionSessionCreated): "Returned when
    # a transcription session is created"; the openai package has no type for it
    event_id: str
    type: Literal["transcription_session.created", "transcription_session.updated"]
    session: _SocketTranscriptionSession


BETA_CLIENT_EVENTS: dict[str, type[BaseModel]] = _models_by_type(BetaClientEvent)
"""the beta protocol's (``OpenAI-Beta: realtime=v1``), which a transcription session speaks"""
BETA_SERVER_EVENTS: dict[str, type[BaseModel]] = {
    **_models_by_type(BetaServerEvent),
    "transcription_session.created": _TranscriptionSessionEvent,
    "transcription_session.updated": _TranscriptionSessionEvent,
}


def parse_client_event(
    raw: str, *, validate: bool, events: dict[str, type[BaseModel]] = CLIENT_EVENTS
) -> dict[str, Any]:
    """A client event (one of ``events``) as a dict, or ServiceError saying what is wrong."""
    try:
        event = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ServiceError(
            f"The server could not parse the event as JSON: {e.msg} at position {e.pos}.",
            code="invalid_json",
        ) from None
    if not isinstance(event, dict):
        raise ServiceError("An event must be a JSON object.", code="invalid_json")
    event_id = event.get("event_id") if isinstance(event.get("event_id"), str) else None
    event_type = event.get("type")
    if not isinstance(event_type, str) or event_type not in events:
        raise ServiceError(
            f"Invalid value: {event_type!r}. Supported values are: "
            + ", ".join(f"'{t}'" for t in sorted(events))
            + ".",
            code="invalid_value",
            param="type",
            event_id=event_id,
        )
    if validate:
        try:
            events[event_type].model_validate(event)
        except ValidationError as e:
            first = e.errors()[0]
            param = ".".join(str(part) for part in first["loc"])
            raise ServiceError(
                f"Invalid '{param}' in {event_type}: {first['msg']}.",
                code="invalid_value",
                param=param,
                event_id=event_id,
            ) from None
    return event


class ServerEventInvalid(NotebookAgentsError, AssertionError):
    """The emulator built an event the real client could not parse: a bug in the emulator."""


def check_server_event(
    event: dict[str, Any], events: dict[str, type[BaseModel]] = SERVER_EVENTS
) -> None:
    model = events.get(event.get("type", ""))
    if model is None:
        raise ServerEventInvalid(f"unknown server event type {event.get('type')!r}")
    try:
        model.model_validate(event)
    except ValidationError as e:
        raise ServerEventInvalid(f"{event['type']} does not validate: {e}") from None
