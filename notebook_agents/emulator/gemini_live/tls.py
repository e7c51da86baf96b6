"""The emulator's TLS site for Gemini Live: a test certificate authority made once per
emulator, and a second port of the same app serving over TLS with its certificate.

google-genai builds the Live API's URL with ``wss://`` whenever it is given an API key
(``_api_client._websocket_base_url`` replaces the scheme), so a Gemini client reaches the
emulator only over TLS. The authority is ``trustme``'s, a library made for test CAs; a client
trusts it by its PEM (``client.GeminiEndpoint``), never through the system's store; a process
configured by the environment alone trusts it through ``SSL_CERT_FILE``, a file the site
writes (the CA, then certifi's bundle). The file goes when the emulator stops, when its
process exits without stopping it (a kernel shut down or restarted), and, for a process that
could not (killed, or ended by ``os._exit`` as a kernel whose server died is), when the next
emulator writes its own: its name holds the PID of the process it belongs to. The site
starts the first time it is asked for (``GET /emulator/gemini`` on the plain port), so an
emulator nobody reaches from Gemini makes no certificate and needs no ``trustme``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
import weakref
from pathlib import Path
from typing import Any

import psutil
from aiohttp import web

from ..errors import EmulatorError

GEMINI_EXTRA = "pip install 'notebook-agents[gemini]'"
INFO_PATH = "/emulator/gemini"
"""where the plain port tells a client the TLS site's URL and CA (started on first ask)"""
CA_FILE_PREFIX = "notebook-agents-gemini-ca-"
"""a CA file's name in the temp dir: this, the PID of its emulator's process, a dash"""


class TlsSite:
    """The app's TLS port on ``host``, started once, on the server's loop."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.runner: web.AppRunner | None = None
        """set once the app serves: the TLS site is a second site of its runner"""
        self.ca_file: str | None = None
        """the CA (and certifi's bundle) for ``SSL_CERT_FILE``, once started; removed on stop"""
        self._ca_file_removal: weakref.finalize[[str], TlsSite] | None = None
        """removes ``ca_file`` once: on stop, or when this process exits without one"""
        self._info: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    async def info(self) -> dict[str, Any]:
        """``{"url": "https://127.0.0.1:PORT", "ca_pem": ..., "ca_file": ...}``, starting the
        site if need be."""
        async with self._lock:
            if self._info is None:
                self._info = await self._start()
            return self._info

    async def _start(self) -> dict[str, Any]:
        try:
            import certifi
            import trustme
        except ImportError as e:
            raise EmulatorError(
                f"serving Gemini Live needs {e.name} (the emulator's test CA, and the "
                f"authorities its CA file keeps): {GEMINI_EXTRA}"
            ) from None
        assert self.runner is not None, "the TLS site starts once the app serves"
        authority = trustme.CA()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        authority.issue_cert(self.host).configure_cert(context)
        site = web.TCPSite(self.runner, self.host, 0, ssl_context=context)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        port = int(server.sockets[0].getsockname()[1])
        ca_pem = authority.cert_pem.bytes().decode()
        self.ca_file = await asyncio.to_thread(_write_ca_file, ca_pem, certifi.where())
        # weakref.finalize runs at the interpreter's exit too (atexit): a kernel shut down
        # with the emulator running leaves no file, although its thread never stopped
        self._ca_file_removal = weakref.finalize(self, _remove_file, self.ca_file)
        return {"url": f"https://{self.host}:{port}", "ca_pem": ca_pem, "ca_file": self.ca_file}

    def remove_ca_file(self) -> None:
        """Remove the CA file, if written (a client started after this trusts nothing here)."""
        if self._ca_file_removal is not None:
            self._ca_file_removal()
            self._ca_file_removal = self.ca_file = None


def _write_ca_file(ca_pem: str, certifi_bundle: str) -> str:
    """A new file holding ``ca_pem`` then certifi's bundle; its path."""
    _remove_orphaned_ca_files()
    # SSL_CERT_FILE replaces a process's trust file: certifi's authorities (google-genai's
    # default, _api_client.py _ensure_websocket_ssl_ctx) stay trusted beside the emulator's
    bundle = ca_pem + Path(certifi_bundle).read_text()
    handle, name = tempfile.mkstemp(prefix=f"{CA_FILE_PREFIX}{os.getpid()}-", suffix=".pem")
    with os.fdopen(handle, "w") as file:
        file.write(bundle)
    return name


def _remove_orphaned_ca_files() -> None:
    """Remove the CA files whose process is gone without removing its own."""
    for path in Path(tempfile.gettempdir()).glob(f"{CA_FILE_PREFIX}*-*.pem"):
        owner = path.name.removeprefix(CA_FILE_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not psutil.pid_exists(int(owner)):
            _remove_file(str(path))


def _remove_file(path: str) -> None:
    # another process may have removed it first; another user's file is not ours to remove
    with contextlib.suppress(FileNotFoundError, PermissionError):
        os.unlink(path)


TLS_SITE_KEY = web.AppKey("tls_site", TlsSite)


async def remove_ca_file(app: web.Application) -> None:
    """On the app's cleanup (the emulator stops): nothing of it is left in the temp dir."""
    app[TLS_SITE_KEY].remove_ca_file()


async def gemini_info(request: web.Request) -> web.StreamResponse:
    """``GET /emulator/gemini``: the TLS site's URL and the CA a client trusts it by (a
    certificate is public; the CA's key never leaves the emulator)."""
    try:
        return web.json_response(await request.app[TLS_SITE_KEY].info())
    except EmulatorError as e:
        return web.json_response({"error": {"code": 501, "message": str(e)}}, status=501)
