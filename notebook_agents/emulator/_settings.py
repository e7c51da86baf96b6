"""What every endpoint of one emulator shares: defaults, rules, models, and the request log."""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from aiohttp import web

from ..errors import MissingExtraError
from ..speech.hearing import DEFAULT_HEARING, Hearing
from ._params import ParameterError, parse_hearing
from .conversation import Conversation
from .faults import Faults
from .latency import LatencyModel
from .models import ModelCatalog
from .replies import ReplyRules
from .vocabulary import OfferedWords

CONNECTIONS_KEPT = 100
"""connections whose logs an emulator keeps: a kernel running call after call for hours holds
~10 kB for each typed call's log, so 1,000 kept grew a notebook by ~10 MB"""


SETUP_ACKNOWLEDGEMENTS = frozenset(
    {
        # OpenAI Realtime: the client's session, conversation items and audio buffer
        "session.created",
        "session.updated",
        "transcription_session.created",
        "transcription_session.updated",
        "conversation.item.created",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.deleted",
        "conversation.item.truncated",
        "conversation.item.retrieved",
        "input_audio_buffer.cleared",
        "input_audio_buffer.committed",
        # Gemini Live
        "setupComplete",
        # LiveKit Inference STT and TTS
        "session.finalized",
        "session.closed",
    }
)
"""what the emulator sends back to a client setting itself up, not an answer: an agent's
plugin sends such updates on its own (livekit's session.update can come late in a start)"""


@dataclass
class ConnectionLog:
    """One client connection (websocket or HTTP request): its settings and timed events."""

    kind: str
    path: str
    latency: LatencyModel
    faults: Faults
    hearing: Hearing = DEFAULT_HEARING
    """how the emulator hears this connection's caller (``HEARING_PARAMETER``)"""
    events: deque[tuple[float, str, str]] = field(default_factory=lambda: deque(maxlen=10_000))
    """(perf_counter, "in" | "out", event type) as seen by the server; the latest 10,000"""
    conversation: Conversation | None = None
    """a Realtime connection's conversation, as the model sees it"""
    session_id: str | None = None
    """a Realtime connection's session id, as its ``session.created`` gave it"""
    last_answered: float = -math.inf
    """when the emulator last answered the client (perf_counter), anything it sent but
    ``SETUP_ACKNOWLEDGEMENTS``: read from any thread"""

    def record(self, direction: str, event_type: str) -> None:
        now = time.perf_counter()
        # interned: the types are few, a long call's records many
        self.events.append((now, direction, sys.intern(event_type)))
        if direction == "out" and event_type not in SETUP_ACKNOWLEDGEMENTS:
            self.last_answered = now

    def types(self, direction: str) -> list[str]:
        return [kind for _, d, kind in self.events if d == direction]


@dataclass
class EmulatorSettings:
    """Server defaults; each connection may override latency and faults in its query string."""

    latency: LatencyModel = field(default_factory=LatencyModel)
    faults: Faults = field(default_factory=Faults)
    rules: ReplyRules = field(default_factory=ReplyRules)
    models: ModelCatalog = field(default_factory=ModelCatalog)
    validate: bool = True
    """check every event both ways against the ``openai`` package's realtime types"""
    hearing: Hearing = DEFAULT_HEARING
    """how callers are heard, unless a connection asks otherwise (``?hearing=whisper``)"""
    connections: deque[ConnectionLog] = field(
        default_factory=lambda: deque(maxlen=CONNECTIONS_KEPT)
    )
    """the latest ``CONNECTIONS_KEPT`` connections, newest last"""
    offered: OfferedWords = field(default_factory=OfferedWords)
    """the tools and instructions offered to models here: what speech recognition listens
    for (a cascaded session's STT request names neither its LLM's tools nor instructions)"""
    _under_fail_every: itertools.count[int] = field(
        default_factory=lambda: itertools.count(1), repr=False
    )
    """numbers the responses answered under ``fail_every``, on every connection"""

    def fails_in_turn(self, faults: Faults) -> bool:
        """Whether the response about to run is one ``faults.fail_every`` fails: every Nth of
        those answered under it here, whichever connection asks (one event loop serves them
        all; ``next`` on a count is atomic besides)."""
        if faults.fail_every <= 0:
            return False
        return next(self._under_fail_every) % faults.fail_every == 0

    def open_connection(self, kind: str, path: str, query: Mapping[str, str]) -> ConnectionLog:
        """Resolve a connection's latency, faults and hearing (raises ParameterError) and log
        it."""
        try:
            hearing = parse_hearing(query.get(HEARING_PARAMETER, self.hearing))
        except MissingExtraError as e:  # the client's to fix: it asked for what is not here
            raise ParameterError(str(e)) from None
        log = ConnectionLog(
            kind=kind,
            path=path,
            latency=LatencyModel.from_query(query, self.latency),
            faults=Faults.from_query(query, self.faults),
            hearing=hearing,
        )
        self.connections.append(log)
        return log


SETTINGS_KEY = web.AppKey("settings", EmulatorSettings)

LATENCY_PARAMETERS = tuple(f.name for f in dataclasses.fields(LatencyModel))
FAULT_PARAMETERS = tuple(f.name for f in dataclasses.fields(Faults))
HEARING_PARAMETER = "hearing"
"""how the emulator hears a connection's caller: ``grammar`` (the default: the nearest phrase
of the session's grammar, deterministic) or ``whisper`` (free speech; the ``whisper`` extra)"""


def check_query(query: Mapping[str, str]) -> None:
    """Raise ParameterError for whatever a connection with this query would be refused for,
    and for names the server would ignore (a typo like ``rtt=20`` would go unnoticed)."""
    for name in query:
        if name not in (*LATENCY_PARAMETERS, *FAULT_PARAMETERS, HEARING_PARAMETER):
            raise ParameterError(
                f"unknown parameter {name!r}: latency parameters are "
                f"{', '.join(LATENCY_PARAMETERS)}; faults are {', '.join(FAULT_PARAMETERS)}; "
                f"and {HEARING_PARAMETER} (grammar or whisper)"
            )
    LatencyModel.from_query(query)
    Faults.from_query(query)
    if HEARING_PARAMETER in query:
        parse_hearing(query[HEARING_PARAMETER])
