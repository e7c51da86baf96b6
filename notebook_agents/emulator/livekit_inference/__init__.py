"""LiveKit Inference's speech websockets, emulated: ``/v1/stt`` and ``/v1/tts``.

``livekit.agents.inference.STT`` and ``.TTS`` dial ``{LIVEKIT_INFERENCE_URL}/stt?model=...``
and ``/tts?model=...`` (http becomes ws) with a LiveKit access token as ``Authorization:
Bearer`` (livekit-agents 1.8.9 ``inference/stt.py`` and ``tts.py``, ``_connect_ws``). With
``LIVEKIT_INFERENCE_URL`` at the emulator's ``base_url()``, they reach these; LiveKit
Inference's LLM speaks Chat Completions, which the emulator already serves. The token is not
checked (the emulator holds no secret), as any API key is accepted on the OpenAI endpoints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from .._params import ParameterError
from .._settings import SETTINGS_KEY
from ..errors import http_error
from ..models import ModelKind
from ._socket import InferenceError, InferenceSocket, Message, accept
from .stt import SttSession
from .tts import TtsSession

__all__ = ["inference_stt", "inference_tts"]


async def inference_stt(request: web.Request) -> web.StreamResponse:
    """``GET /v1/stt?model=provider/model``: a streaming transcription session."""
    settings = request.app[SETTINGS_KEY]
    return await _serve(request, "stt", lambda socket: SttSession(socket, settings).handle)


async def inference_tts(request: web.Request) -> web.StreamResponse:
    """``GET /v1/tts?model=provider/model``: a pooled, streaming synthesis connection."""
    return await _serve(request, "tts", lambda socket: TtsSession(socket).handle)


async def _serve(
    request: web.Request,
    kind: str,
    serve: Callable[[InferenceSocket], Callable[[Message], Awaitable[None]]],
) -> web.StreamResponse:
    model = request.query.get("model", "")
    # the clients name the model in the query (their STTModels / TTSModels literals); one the
    # catalogue does not know is refused as the chat endpoint refuses one, before the upgrade
    models = request.app[SETTINGS_KEY].models
    catalogue: ModelKind = "inference_stt" if kind == "stt" else "inference_tts"
    if not models.knows(model, kind=catalogue):
        return models.refusal(model, catalogue).response()
    try:
        log = request.app[SETTINGS_KEY].open_connection(
            f"inference.{kind}", request.path, request.query
        )
    except ParameterError as e:
        return http_error(400, str(e), code="invalid_parameter")
    try:
        return await accept(request, log, serve)
    except InferenceError as e:
        return http_error(e.code, e.message)
