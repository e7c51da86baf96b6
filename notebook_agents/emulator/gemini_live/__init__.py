"""Gemini Live (``BidiGenerateContent``) on the emulator, for livekit's unmodified google
plugin: the websocket (session.py), its wire format (protocol.py), the TLS site the SDK
requires (tls.py), the route and per-connection settings (endpoint.py), and the client's
one-line switch (client.py)."""

from .client import GeminiEndpoint, genai_types, require_gemini
from .endpoint import (
    PREFIXED_ROUTE,
    ROUTE,
    SETTINGS_HEADER,
    SETTINGS_PREFIX,
    bidi_generate_content,
    is_gemini_path,
)
from .tls import INFO_PATH, TLS_SITE_KEY, TlsSite, gemini_info, remove_ca_file

__all__ = [
    "INFO_PATH",
    "PREFIXED_ROUTE",
    "ROUTE",
    "SETTINGS_HEADER",
    "SETTINGS_PREFIX",
    "TLS_SITE_KEY",
    "GeminiEndpoint",
    "TlsSite",
    "bidi_generate_content",
    "gemini_info",
    "genai_types",
    "is_gemini_path",
    "remove_ca_file",
    "require_gemini",
]
