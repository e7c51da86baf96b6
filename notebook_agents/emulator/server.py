"""The emulator's aiohttp app, and ``Emulator``: that app on its own thread and loop."""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import web
from typing_extensions import Self
from yarl import URL

from .. import _cells
from .._lifecycle import StartStop
from ..speech.hearing import DEFAULT_HEARING, Hearing
from . import _replaced
from ._http import MAX_BODY_BYTES
from ._open_connections import OPEN_CONNECTIONS_KEY, OpenConnections, close_open_connections
from ._params import parse_hearing
from ._settings import SETTINGS_KEY, ConnectionLog, EmulatorSettings, check_query
from .chat import chat_completions, list_models, retrieve_model
from .conversation import Conversation
from .errors import EmulatorError, http_error
from .faults import Faults
from .gemini_live import (
    INFO_PATH,
    PREFIXED_ROUTE,
    ROUTE,
    TLS_SITE_KEY,
    GeminiEndpoint,
    TlsSite,
    bidi_generate_content,
    gemini_info,
    is_gemini_path,
    remove_ca_file,
)
from .latency import LatencyModel, query_to_str, query_value
from .livekit_inference import inference_stt, inference_tts
from .models import ModelCatalog
from .openai_realtime import realtime_websocket
from .replies import ReplyRules, ToolSpec
from .speech import audio_speech
from .transcriptions import audio_transcriptions

PLACEHOLDER_KEY = "sk-notebook-agents-emulator"
"""the API key given to clients pointed at the emulator, which takes any key"""

if TYPE_CHECKING:
    from google.genai import types as genai_types

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
_SHUTDOWN_GRACE_S = 0.5
"""how long a stopping server lets in-flight requests finish before cancelling them"""

_SNAPSHOT_TIMEOUT_S = 5.0
"""how long ``conversations()`` waits for the server's loop, busy at worst for a few events"""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
T = TypeVar("T")


# The openai SDK appends the endpoint after a base_url's query string
# ("/v1/?rtt_ms=20chat/completions"); these are the endpoints recovered from that shape.
_SDK_QUERY_ROUTES: dict[tuple[str, str], Handler] = {
    ("POST", "chat/completions"): chat_completions,
    ("GET", "models"): list_models,
    ("POST", "audio/speech"): audio_speech,
    ("POST", "audio/transcriptions"): audio_transcriptions,
}


def _recover_sdk_url(request: web.Request) -> tuple[web.Request, Handler] | None:
    """Route a URL the openai SDK built from ``base_url="http://.../v1?rtt_ms=20"``."""
    if not request.path.endswith("/") or not request.query_string:
        return None
    for (method, suffix), handler in _SDK_QUERY_ROUTES.items():
        if request.method == method and request.query_string.endswith(suffix):
            query = request.query_string[: -len(suffix)]
            url = URL.build(path=request.path + suffix, query_string=query)
            return request.clone(rel_url=url), handler
    return None


_INFERENCE_ROUTES: dict[str, Handler] = {"stt": inference_stt, "tts": inference_tts}


def _recover_inference_url(request: web.Request) -> tuple[web.Request, Handler] | None:
    """Route a URL livekit's inference clients built from ``base_url=".../v1?rtt_ms=20"``:
    they append ``/stt?model=...`` to it (inference/stt.py ``_connect_ws``), giving
    ``/v1?rtt_ms=20/stt?model=...``."""
    if request.path != "/v1":
        return None
    query, _, asked = request.query_string.rpartition("?")
    for name, handler in _INFERENCE_ROUTES.items():
        if query.endswith(f"/{name}"):
            overrides = query[: -len(name) - 1]
            url = URL.build(path=f"/v1/{name}", query_string=f"{overrides}&{asked}")
            return request.clone(rel_url=url), handler
    return None


@web.middleware
async def _openai_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Unknown paths and missing keys get OpenAI-shaped JSON errors, not aiohttp's HTML; a
    client that went away is a debug line."""
    if is_gemini_path(request.path) or request.path == INFO_PATH:
        return await handler(request)  # Gemini Live: Google's API, answered as Google does
    if (recovered := _recover_sdk_url(request) or _recover_inference_url(request)) is not None:
        request, handler = recovered
    if not request.path.startswith("/v1/"):
        return http_error(
            404, f"Unknown path {request.path}: the API lives under /v1", code="unknown_url"
        )
    if not _has_credentials(request):
        return http_error(
            401,
            "No API key provided: send 'Authorization: Bearer <any key>' (the emulator "
            "accepts any key, and never stores it).",
            code="invalid_api_key",
        )
    try:
        return await handler(request)
    except web.HTTPNotFound:
        return http_error(404, f"Unknown path {request.method} {request.path}", code="unknown_url")
    except web.HTTPMethodNotAllowed:
        return http_error(405, f"{request.method} is not allowed on {request.path}")
    except ConnectionError as e:
        # A client hanging up mid-request (an agent stopped while its reply streamed) is
        # normal for a server, not aiohttp's "Error handling request" with a traceback
        logger.debug(
            "%s %s: the client went away before the answer (%s)", request.method, request.path, e
        )
        # never sent (nobody is there): nginx's code for a request its client closed
        return web.Response(status=499, reason="Client Closed Request")


def _has_credentials(request: web.Request) -> bool:
    auth = request.headers.get("Authorization", "")
    return (auth.startswith("Bearer ") and len(auth) > len("Bearer ")) or bool(
        request.headers.get("api-key")
    )


def create_app(settings: EmulatorSettings) -> web.Application:
    app = web.Application(middlewares=[_openai_errors], client_max_size=MAX_BODY_BYTES)
    app[SETTINGS_KEY] = settings
    app.router.add_get("/v1/realtime", realtime_websocket)
    app.router.add_get("/v1/stt", inference_stt)
    app.router.add_get("/v1/tts", inference_tts)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/audio/speech", audio_speech)
    app.router.add_post("/v1/audio/transcriptions", audio_transcriptions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model}", retrieve_model)
    app.router.add_get(ROUTE, bidi_generate_content)
    app.router.add_get(PREFIXED_ROUTE, bidi_generate_content)
    app.router.add_get(INFO_PATH, gemini_info)
    app[TLS_SITE_KEY] = TlsSite(HOST)
    app[OPEN_CONNECTIONS_KEY] = OpenConnections()
    app.on_shutdown.append(close_open_connections)
    app.on_cleanup.append(remove_ca_file)
    return app


def check_port(port: int) -> int:
    """``port`` if it is a TCP port (0 picks a free one), else an EmulatorError saying so."""
    if not 0 <= port <= 65535:
        raise EmulatorError(f"port {port} is not a TCP port: use 0 to 65535 (0 picks a free port)")
    return port


async def start_site(app: web.Application, port: int) -> tuple[web.AppRunner, int]:
    """Bind ``app`` on 127.0.0.1:``port`` (0 picks a free one); a taken port is a clear error.

    Stopping closes in-flight requests after a short grace instead of waiting for them.
    """
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, shutdown_timeout=_SHUTDOWN_GRACE_S
    )
    await runner.setup()
    # The platform's default address reuse (SO_REUSEADDR on POSIX): connections a stopped or
    # crashed server left in TIME-WAIT would otherwise block its port for a minute. A port
    # another socket listens on is still refused.
    site = web.TCPSite(runner, HOST, check_port(port))
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        if e.errno == errno.EADDRINUSE:
            raise EmulatorError(
                f"port {port} on {HOST} is in use: pass port=0 (--port 0) to pick a free "
                "port, or stop the process that holds it"
            ) from None
        raise EmulatorError(f"cannot listen on {HOST}:{port}: {e.strerror}") from None
    server = site._server
    assert isinstance(server, asyncio.base_events.Server)
    bound_port = int(server.sockets[0].getsockname()[1])
    app[TLS_SITE_KEY].runner = runner  # Gemini's TLS port, when asked for, is a second site
    return runner, bound_port


def base_url(root: str, **overrides: Any) -> str:
    """The API ``base_url`` of an emulator at ``root`` (``http://127.0.0.1:PORT``), with
    per-connection latency and faults in its query string.

    The values are checked as the server will check them: a bad one raises ParameterError
    here, before any client connects with it.
    """
    check_query({name: query_value(value) for name, value in overrides.items()})
    query = query_to_str(overrides)
    return f"{root}/v1" + (f"?{query}" if query else "")


_RUNNING: weakref.WeakKeyDictionary[Emulator, None] = weakref.WeakKeyDictionary()
"""the emulators started and not stopped in this process, in the order they started"""


class Emulator(StartStop):
    """A local OpenAI-compatible server for the real LiveKit OpenAI plugins, offline; it serves
    Gemini Live to livekit's google plugin too (``gemini_http_options()``, over TLS).

    Runs on its own thread and event loop, so it serves while the caller's loop (a notebook's,
    a test's, or the agent's) is busy. Use as a context manager:

        with Emulator(latency=LatencyModel(rtt_ms=20)) as emu:
            model = openai.realtime.RealtimeModel(base_url=emu.base_url(), api_key="x")

    ``hearing`` is how it hears callers wherever they speak (transcriptions, the Realtime
    socket's input audio, LiveKit Inference STT, Gemini Live): ``"grammar"``, the nearest
    phrase of the session's grammar (the default, deterministic), or ``"whisper"``, free
    speech (the ``whisper`` extra; without it a ``MissingExtraError`` names the install). One
    connection may ask otherwise: ``emu.base_url(hearing="whisper")``.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        latency: LatencyModel | None = None,
        faults: Faults | None = None,
        rules: ReplyRules | None = None,
        models: ModelCatalog | None = None,
        validate: bool = True,
        hearing: Hearing = DEFAULT_HEARING,
    ) -> None:
        self.settings = EmulatorSettings(
            latency=latency or LatencyModel(),
            faults=faults or Faults(),
            rules=rules or ReplyRules(),
            models=models or ModelCatalog(),
            validate=validate,
            hearing=parse_hearing(hearing),
        )
        self._requested_port = check_port(port)
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._app: web.Application | None = None
        self._app_runner: web.AppRunner | None = None
        self._replaced_at: float | None = None
        """when a re-run of its cell replaced it while agents were connected (perf_counter)"""

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmulatorError(
                "the emulator is not running: call start() or use `with Emulator()`"
            )
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{HOST}:{self.port}"

    def base_url(self, **overrides: Any) -> str:
        """The ``base_url`` to give a client, with per-connection latency and faults.

        ``emu.base_url(rtt_ms=20, drop_after=5)`` -> ``http://127.0.0.1:PORT/v1?rtt_ms=20&drop_after=5``;
        ``emu.base_url(hearing="whisper")``: that client's caller heard as free speech. A value
        the server would refuse raises ParameterError naming the allowed range.
        """
        return base_url(self.url, **overrides)

    def openai_environment(self, **overrides: Any) -> dict[str, str]:
        """What points OpenAI clients made without a ``base_url`` at this emulator (the
        ``openai`` package reads them): its ``base_url`` and a placeholder key, so a real key
        this kernel holds never reaches it."""
        return {"OPENAI_BASE_URL": self.base_url(**overrides), "OPENAI_API_KEY": PLACEHOLDER_KEY}

    @property
    def gemini(self) -> GeminiEndpoint:
        """This emulator's Gemini Live API: its TLS site (started on first use, with a test
        CA made for this emulator) and that CA."""
        loop, app = self._loop, self._app
        if loop is None or app is None or not self.running:
            raise EmulatorError(
                "the emulator is not running: call start() or use `with Emulator()`"
            )
        info = asyncio.run_coroutine_threadsafe(app[TLS_SITE_KEY].info(), loop).result(30)
        return GeminiEndpoint(**info)

    def gemini_http_options(self, **overrides: Any) -> genai_types.HttpOptions:
        """The one-line switch for livekit's google plugin, as ``base_url`` is for OpenAI::

            google.realtime.RealtimeModel(api_key="x", http_options=emu.gemini_http_options())

        With per-connection latency and faults (``rtt_ms=20``, ``drop_after=5``), checked
        as the server will check them (ParameterError).
        """
        return self.gemini.http_options(**overrides)

    @property
    def connections(self) -> list[ConnectionLog]:
        """Connections served so far (the latest 100: ``CONNECTIONS_KEPT``), newest last."""
        return list(self.settings.connections)

    def conversations(self) -> list[list[dict[str, Any]]]:
        """Each realtime connection's conversation as the model holds it, oldest connection
        first: its items in the server's order, described as the trace describes livekit's
        (``id``, ``type``, ``role``, ``name``, ``text``). The ground truth to hold a client's
        view against: ``ContextTable.compare({"livekit": ..., "server": ...})``."""
        conversations = [c for log in self.connections if (c := log.conversation) is not None]
        return self._snapshot(lambda: [c.described() for c in conversations])

    def conversation(self, session_id: str) -> list[dict[str, Any]] | None:
        """The conversation of the realtime session ``session_id`` (its ``session.created``
        id), described as ``conversations()`` does; None if this emulator did not serve it.
        A ``ModelServer`` for the trace: the runner holds livekit's chat context against it."""
        conversation = self._conversation_of(session_id)
        return self._snapshot(conversation.described) if conversation is not None else None

    def item_ids(self, session_id: str) -> list[str] | None:
        """The ids of ``conversation(session_id)``'s items, in order, read at once from any
        thread (nothing described, no wait for the server's loop): what the runner's trace
        compares with livekit's after every turn. None if this emulator did not serve it."""
        conversation = self._conversation_of(session_id)
        return conversation.chat_item_ids() if conversation is not None else None

    def _conversation_of(self, session_id: str) -> Conversation | None:
        found = [log.conversation for log in self.connections if log.session_id == session_id]
        return found[-1] if found else None

    def offer(self, instructions: str, tools: Iterable[Mapping[str, Any]] = ()) -> None:
        """Tell the emulator's speech recognition what a caller may say before any model here
        was asked: the words of ``instructions`` and of ``tools`` (OpenAI function schemas,
        ``{"name", "description", "parameters"}``), as if a model had been offered them. A
        cascaded session's first spoken turn needs it: its speech recognizer asks before its
        LLM has told the emulator anything (the recognizer hears only known words)."""
        specs = [
            ToolSpec(
                name=str(tool["name"]),
                parameters=dict(tool.get("parameters") or {}),
                description=str(tool.get("description") or ""),
            )
            for tool in tools
        ]
        if self._app is None:
            raise EmulatorError(
                "the emulator is not running: call start() or use `with Emulator()`"
            )
        settings = self._app[SETTINGS_KEY]
        self._snapshot(lambda: settings.offered.offer(instructions, specs))

    def _snapshot(self, read: Callable[[], T]) -> T:
        """``read()`` on the server's loop: no conversation changes half-way through."""
        loop = self._loop
        if loop is None or not loop.is_running() or threading.current_thread() is self._thread:
            return read()

        async def snapshot() -> T:
            return read()

        return asyncio.run_coroutine_threadsafe(snapshot(), loop).result(_SNAPSHOT_TIMEOUT_S)

    @staticmethod
    def in_this_process() -> list[Emulator]:
        """The emulators running in this process (started and not stopped), oldest first."""
        return [emulator for emulator in list(_RUNNING) if emulator.running]

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def open_connections(self) -> int:
        """Websockets open now (realtime, LiveKit Inference STT/TTS): agents that would lose
        their models if it stopped."""
        app = self._app
        return len(app[OPEN_CONNECTIONS_KEY]) if app is not None and self.running else 0

    @property
    def replaced(self) -> bool:
        """Whether a re-run of the cell that started it replaced it while agents were
        connected: it then takes no new connections and stops when the last one closes."""
        return self._replaced_at is not None

    def start(self) -> Self:
        """Serve on a new thread; returns once the port is bound (or raises why it can't be).

        Started from a notebook cell (however deep in functions it calls), it first replaces
        what an earlier run of that cell started, as re-running a cell (or Run All) means to.
        """
        if self.running:
            return self
        cell = _cells.replace_earlier()
        self._replaced_at = None
        self._start_thread()
        _RUNNING[self] = None
        _cells.register(self, cell, functools.partial(_replaced.replaced, self))
        return self

    def _give_way(self) -> None:
        """Give way to the emulator a re-run of its cell starts: stop now if no agent is
        connected; else stop listening at once (new clients reach the new one, a fixed port is
        free for it) and serve the connections open now until they close, then stop. An agent
        keeps its model until its own cell re-runs (Run All re-runs it next)."""
        loop = self._loop
        if not self.open_connections or loop is None:
            self.stop()
            return
        self._replaced_at = time.perf_counter()
        asyncio.run_coroutine_threadsafe(self._serve_only_the_open(), loop).result(
            _SNAPSHOT_TIMEOUT_S
        )

    async def _serve_only_the_open(self) -> None:
        assert self._app is not None and self._app_runner is not None and self._stopped
        for site in list(self._app_runner.sites):
            await site.stop()  # closes the listening socket only
        self._app[OPEN_CONNECTIONS_KEY].when_none(self._stopped.set)

    def _answered_since_replaced(self) -> bool:
        """Whether it answered a client after a re-run of its cell replaced it: an agent still
        uses it (one only setting itself up does not). From any thread."""
        replaced = self._replaced_at
        logs = list(self.settings.connections)  # one step: the server's thread appends
        return replaced is not None and any(log.last_answered > replaced for log in logs)

    def _start_thread(self) -> None:
        """Start the server thread; returns once the port is bound, else raises its error."""
        started = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve,
            args=(started, failure),
            name="notebook-agents-emulator",
            daemon=True,
        )
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; returns once the server thread is gone and its port free, or raises.

        Open connections are closed, requests in flight cancelled. Safe to call twice.
        """
        thread, loop, stopped = self._thread, self._loop, self._stopped
        if thread is None or loop is None or stopped is None:
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(stopped.set)
        thread.join(timeout)
        if thread.is_alive():
            raise EmulatorError(
                f"the emulator's server thread did not stop within {timeout:g} s; "
                "call stop() again to keep waiting"
            )
        self._thread = None
        self._port = None
        _RUNNING.pop(self, None)
        _cells.unregister(self)

    def _serve(self, started: threading.Event, failure: list[BaseException]) -> None:
        # A loop of our own, created and closed on this thread; never anyone else's.
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._run(started, failure))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            started.set()

    async def _run(self, started: threading.Event, failure: list[BaseException]) -> None:
        self._stopped = asyncio.Event()
        try:
            self._app = create_app(self.settings)
            self._app_runner, self._port = await start_site(self._app, self._requested_port)
        except BaseException as e:
            failure.append(e)
            return
        started.set()
        try:
            await self._stopped.wait()
        finally:
            await self._app_runner.cleanup()
            self._port = None  # also when it stopped by itself, replaced and left by all

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "stopped"
        if self.replaced and self.running:
            where += f", replaced: serving its {self.open_connections} open connection(s)"
        hearing = self.settings.hearing
        heard = "" if hearing == DEFAULT_HEARING else f", hearing={hearing!r}"
        return f"Emulator({where}, latency={self.settings.latency}{heard})"
