"""Gemini Live (``BidiGenerateContent``) on the emulator, for livekit's unmodified google
plugin: the websocket (session.py), its wire format (protocol.py), the TLS site the SDK
requires (tls.py), the route and per-connection settings (endpoint.py), and the client's
one-line switch (client.py)."""

from .client import GeminiEndpoint, genai_types, require_gemini
from .endpoint import ROUTE, SETTINGS_HEADER, bidi_generate_content
from .tls import INFO_PATH, TLS_SITE_KEY, TlsSite, gemini_info

__all__ = [
    "INFO_PATH",
    "ROUTE",
    "SETTINGS_HEADER",
    "TLS_SITE_KEY",
    "GeminiEndpoint",
    "TlsSite",
    "bidi_generate_content",
    "gemini_info",
    "genai_types",
    "require_gemini",
]
