"""The Live API's route on the emulator, and how a connection's settings reach it.

google-genai connects to ``{base_url}/ws/google.ai.generativelanguage.{version}.
GenerativeService.BidiGenerateContent`` and sends ``HttpOptions.headers`` with the upgrade,
but drops a query string from ``base_url``: so the per-connection latency and faults the
OpenAI side reads from the query (``?rtt_ms=20``) travel here in one header,
``SETTINGS_HEADER: rtt_ms=20&drop_after=5``, or, for a client configured by the environment
alone (``GOOGLE_GEMINI_BASE_URL``, which carries no header), in the base URL's path:
``https://127.0.0.1:PORT/settings/rtt_ms=20&drop_after=5`` (google-genai keeps a base URL's
path: live.py builds ``f"{base_url}/ws/..."``). Both in the same form, checked the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from ...errors import MissingExtraError
from .._open_connections import OPEN_CONNECTIONS_KEY, serve
from .._params import ParameterError
from .._settings import SETTINGS_KEY, check_query
from ..errors import http_error
from ..latency import precise_sleep, query_to_str

ROUTE = "/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
SETTINGS_HEADER = "x-emulator-settings"
"""the header carrying a connection's latency and faults, as a query string"""
SETTINGS_PREFIX = "/settings/"
"""the base URL's path prefix carrying them in the same form, where no header can go"""
PREFIXED_ROUTE = SETTINGS_PREFIX + "{settings}" + ROUTE

_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def settings_path(overrides: Mapping[str, Any]) -> str:
    """The base URL path carrying ``overrides``: ``/settings/rtt_ms=20``; none: ``""``."""
    return SETTINGS_PREFIX + query_to_str(overrides) if overrides else ""


def is_gemini_path(path: str) -> bool:
    """Whether ``path`` is the Live API's (answered as Google does, not as OpenAI)."""
    return path.startswith(("/ws/", SETTINGS_PREFIX))


def connection_query(request: web.Request) -> dict[str, str]:
    """A connection's settings: its base URL's path prefix, then its header (which wins for
    a name both give: it is the one set for this client alone)."""
    carriers = (request.match_info.get("settings", ""), request.headers.get(SETTINGS_HEADER, ""))
    return {
        name: value
        for carried in carriers
        for name, value in parse_qsl(carried, keep_blank_values=True)
    }


async def bidi_generate_content(request: web.Request) -> web.StreamResponse:
    """Upgrade to a Live session after checking the API key and the connection's settings."""
    from .session import LiveConnection, refuse  # numpy and speech: loaded when first used

    settings = request.app[SETTINGS_KEY]
    if not request.headers.get("x-goog-api-key"):
        # Google's error body (google.rpc.Status) for a request without credentials
        return web.json_response(
            {
                "error": {
                    "code": 403,
                    "message": "Method doesn't allow unregistered callers. Please use an API "
                    "key (any key: the emulator checks none and stores none).",
                    "status": "PERMISSION_DENIED",
                }
            },
            status=403,
        )
    ws = web.WebSocketResponse(max_msg_size=_MAX_MESSAGE_BYTES, autoclose=False)
    if not ws.can_prepare(request).ok:
        return http_error(400, f"{request.path} is a websocket: connect with a websocket client.")
    query = connection_query(request)
    try:
        check_query(query)  # a name the server would ignore is refused, as in a base_url
        log = settings.open_connection("gemini_live", request.path, query)
    except (ParameterError, MissingExtraError) as e:  # hearing=whisper without its extra
        return await refuse(request, e)
    # TCP + TLS + upgrade: the client's connect returns after this many round trips
    await precise_sleep(log.latency.connect_s())
    await ws.prepare(request)
    await serve(request.app[OPEN_CONNECTIONS_KEY], LiveConnection(ws, request, settings, log))
    return ws
