"""The client side of the Gemini switch: where an emulator's Live API is, and the
``HttpOptions`` that point the unmodified google plugin at it in one line, or the environment
that points an unchanged script's ``RealtimeModel()`` at it."""

from __future__ import annotations

import importlib
import json
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .._settings import check_query
from ..errors import EmulatorError
from ..latency import query_to_str, query_value
from .endpoint import SETTINGS_HEADER, settings_path
from .tls import GEMINI_EXTRA, INFO_PATH

if TYPE_CHECKING:
    from google.genai import types
    from livekit.plugins.google.realtime import RealtimeModel


PLACEHOLDER_KEY = "notebook-agents-emulator"
"""the API key a client gets against the emulator (any non-empty key works there)"""


@dataclass(frozen=True)
class GeminiEndpoint:
    """An emulator's Gemini Live API: its TLS URL and the CA that signed its certificate."""

    url: str
    """``https://127.0.0.1:PORT``"""
    ca_pem: str
    """the emulator's test CA (PEM), the only one a client built here trusts"""
    ca_file: str | None = None
    """``ca_pem`` then certifi's authorities, in a file the emulator removes when it stops"""

    @classmethod
    def of(cls, emulator_url: str, timeout: float = 10.0) -> GeminiEndpoint:
        """The Gemini endpoint of the emulator at ``emulator_url`` (``http://127.0.0.1:PORT``,
        e.g. the emulator process's), starting its TLS site if need be."""
        try:
            with urllib.request.urlopen(emulator_url + INFO_PATH, timeout=timeout) as answer:
                info = json.load(answer)
        except urllib.error.HTTPError as e:
            try:
                message = json.load(e).get("error", {}).get("message", str(e))
            except ValueError:  # a body that is not the emulator's JSON error
                message = str(e)
            raise EmulatorError(
                f"the emulator at {emulator_url} serves no Gemini: {message}"
            ) from None
        except urllib.error.URLError as e:
            raise EmulatorError(
                f"no emulator answers at {emulator_url} ({e.reason}): start one, or pass its URL"
            ) from None
        return cls(**info)

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts this emulator's CA only (hostname checked)."""
        return ssl.create_default_context(cadata=self.ca_pem)

    def http_options(self, **overrides: Any) -> types.HttpOptions:
        """``HttpOptions`` for ``google.realtime.RealtimeModel(api_key=..., http_options=...)``:
        this endpoint, its CA, and per-connection latency and faults (``rtt_ms=20``,
        ``drop_after=5``), checked here as the server will check them (ParameterError)."""
        check_query({name: query_value(value) for name, value in overrides.items()})
        genai = genai_types()
        headers = {SETTINGS_HEADER: query_to_str(overrides)} if overrides else {}
        return cast(
            "types.HttpOptions",
            genai.HttpOptions(
                base_url=self.url,
                headers=headers,
                # google-genai hands these to websockets' connect: the emulator's CA, not certifi's
                async_client_args={"ssl": self.ssl_context()},
            ),
        )

    def environment(self, **overrides: Any) -> dict[str, str]:
        """The variables that point an unchanged ``google.realtime.RealtimeModel()`` (no key,
        no ``http_options``) here, for a script's or a server's process: the URL with the
        connections' latency and faults in its path (``rtt_ms=20``), the CA by
        ``SSL_CERT_FILE``, a placeholder key, and the Gemini API rather than Vertex AI.

        ``SSL_CERT_FILE`` replaces the process's trust file (for google-genai, httpx, aiohttp):
        the file holds certifi's authorities too, so the process's other TLS keeps working."""
        check_query({name: query_value(value) for name, value in overrides.items()})
        if self.ca_file is None:
            raise EmulatorError(
                "this GeminiEndpoint has no CA file for SSL_CERT_FILE: take the emulator's own, "
                "emu.gemini or GeminiEndpoint.of(emulator_url)"
            )
        return {
            # google-genai's base URL when HttpOptions gives none (_base_url.py get_base_url)
            "GOOGLE_GEMINI_BASE_URL": self.url + settings_path(overrides),
            # its websocket's trust when async_client_args gives none (_api_client.py
            # _ensure_websocket_ssl_ctx: cafile=SSL_CERT_FILE, else certifi's)
            "SSL_CERT_FILE": self.ca_file,
            # livekit's google plugin reads GOOGLE_API_KEY (realtime_api.py); any key will do
            "GOOGLE_API_KEY": PLACEHOLDER_KEY,
            # the emulator serves the Gemini API's Live route, not Vertex AI's
            "GOOGLE_GENAI_USE_VERTEXAI": "false",
        }

    def realtime_model(
        self, *, overrides: Mapping[str, Any] | None = None, **model_kwargs: Any
    ) -> RealtimeModel:
        """``google.realtime.RealtimeModel(**model_kwargs)`` against this endpoint, its
        connections with ``overrides`` (``{"rtt_ms": 20}``); any API key will do."""
        google = _google_plugin()
        model_kwargs.setdefault("api_key", PLACEHOLDER_KEY)
        model = google.realtime.RealtimeModel(
            http_options=self.http_options(**dict(overrides or {})), **model_kwargs
        )
        return cast("RealtimeModel", model)


def require_gemini() -> None:
    """EmulatorError naming the extra unless Gemini Live's client side is installed (livekit's
    google plugin and google-genai): checked before a run, not in each of its trials."""
    genai_types()
    _google_plugin()


def genai_types() -> Any:
    """``google.genai.types``, or an EmulatorError naming the extra to install."""
    try:
        from google.genai import types
    except ImportError:
        raise EmulatorError(f"Gemini Live needs google-genai: {GEMINI_EXTRA}") from None
    return types


def _google_plugin() -> Any:
    try:
        # by name (not ``from livekit.plugins import google``): the same lookup on any Python
        google = importlib.import_module("livekit.plugins.google")
    except ImportError:
        raise EmulatorError(f"Gemini Live needs livekit's google plugin: {GEMINI_EXTRA}") from None
    return google
