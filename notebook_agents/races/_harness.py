"""What a race's scenario runs with: realtime models on the emulator (OpenAI Realtime or Gemini
Live), one traced session, and a record of what each realtime session sent and what livekit
logged."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from livekit.agents import Agent, AgentSession, llm
from livekit.agents.voice.run_result import RunResult
from livekit.plugins import openai

from .. import _livekit_internals as livekit
from .._lifecycle import close_quietly
from .._text_sessions import text_turn_handling
from ..emulator import Emulator
from ..emulator.gemini_live import genai_types
from ..trace.livekit_spans import capture_spans_here
from .case import LoggedProblem, RaceProvider, RaceRun, WireEvent

API_KEY = "sk-emulator-not-a-secret"
"""any key works against the emulator"""
RUN_TIMEOUT_S = 15.0
"""a turn that takes longer hangs: the emulator answers in milliseconds plus the latency set"""


class Harness:
    """Models, session and turns for one race run; everything it opens it closes."""

    def __init__(self, run: RaceRun, emulator: Emulator, provider: RaceProvider) -> None:
        self._run = run
        self._emulator = emulator
        self.provider: RaceProvider = provider
        self._models: list[llm.RealtimeModel] = []
        self._session: AgentSession[None] | None = None
        self._release_spans: Any = None
        self._log = _ProblemLog(run)

    @property
    def triggered(self) -> bool:
        """False in the control run."""
        return self._run.triggered

    @property
    def session(self) -> AgentSession[None]:
        if self._session is None:
            # only the package's own cases use the harness: reaching this is their bug
            raise RuntimeError("start the session first: await harness.start(agent)")
        return self._session

    def model(self, **options: Any) -> llm.RealtimeModel:
        """A new realtime model of the run's provider on the emulator, text only (a new
        instance: a fresh session on handoff); ``options`` go to the plugin's model."""
        settings = self._run.settings
        model: llm.RealtimeModel
        if self.provider == "gemini":
            model = self._emulator.gemini.realtime_model(
                overrides=settings,
                api_key=API_KEY,
                modalities=[genai_types().Modality.TEXT],
                **options,
            )
        else:
            model = openai.realtime.RealtimeModel(
                base_url=self._emulator.base_url(**settings),
                api_key=API_KEY,
                modalities=["text"],
                **options,
            )
            self._watch(model)
        self._models.append(model)
        return model

    async def start(self, agent: Agent, model: llm.RealtimeModel) -> None:
        """Start a text-only session with ``agent`` on ``model``, traced with livekit's spans."""
        session: AgentSession[None] = AgentSession(llm=model, vad=None, **text_turn_handling(model))
        self._session = session
        self._run.trace.attach(session)
        # the session runs in no job: its spans are this run's by context (as the bench's)
        self._release_spans = capture_spans_here(self._run.trace)
        logging.getLogger("livekit").addHandler(self._log)
        await session.start(agent)

    async def say(self, text: str) -> RunResult[None] | None:
        """The user's turn; a turn that raises or hangs is a problem of the run, not an error."""
        try:
            return await asyncio.wait_for(self.session.run(user_input=text), RUN_TIMEOUT_S)
        except asyncio.TimeoutError:
            self._problem("ERROR", f"session.run({text!r}) hung: no end in {RUN_TIMEOUT_S:.0f} s")
        except Exception as e:
            self._problem("ERROR", f"session.run({text!r}) raised {type(e).__name__}: {e}")
        return None

    async def swap_failure(self) -> BaseException | None:
        """The error the latest handoff's activity swap raised, if it did (livekit only logs it)."""
        return await livekit.failed_activity_swap(self.session)

    def _problem(self, level: str, message: str) -> None:
        self._run.problems.append(LoggedProblem(self._run.trace.now(), level, message))

    def _watch(self, model: openai.realtime.RealtimeModel) -> None:
        """Record each OpenAI session's client events as it queues them (Gemini's: ``heard``)."""
        open_session = model.session
        run = self._run

        def session(*args: Any, **kwargs: Any) -> Any:
            rt = open_session(*args, **kwargs)
            index = sum(1 for e in run.wire if e.type == "session.opened")
            run.wire.append(WireEvent(run.trace.now(), index, "session.opened"))

            def sent(event: dict[str, Any]) -> None:
                item = event.get("item") or {}
                run.wire.append(
                    WireEvent(run.trace.now(), index, str(event.get("type")), item.get("type"))
                )

            rt.on("openai_client_event_queued", sent)
            return rt

        model.session = session  # type: ignore[method-assign]

    async def aclose(self) -> None:
        try:
            if self._session is not None:
                await asyncio.wait_for(self._session.aclose(), RUN_TIMEOUT_S)
        finally:
            logging.getLogger("livekit").removeHandler(self._log)
            if self._release_spans is not None:
                self._release_spans()
            for model in self._models:  # each closed, whatever another's close raised
                await close_quietly(model.aclose())
            self._run.trace.detach()
            if self.provider == "gemini":
                self._heard()
            self._run.conversations = self._emulator.conversations()

    def _heard(self) -> None:
        """Each Gemini session's client messages as the emulator received them, dated when
        they were sent (half a round trip earlier): google's plugin announces none it sends."""
        t0 = time.perf_counter() - self._run.trace.now()
        sessions = [c for c in self._emulator.connections if c.kind == "gemini_live"]
        for index, log in enumerate(sessions):
            heard = [
                (t - t0 - log.latency.one_way_s, k) for t, d, k in list(log.events) if d == "in"
            ]
            if heard:
                self._run.wire.append(WireEvent(heard[0][0], index, "session.opened"))
            self._run.wire.extend(WireEvent(t, index, kind) for t, kind in heard)
        self._run.wire.sort(key=lambda w: w.t)


class _ProblemLog(logging.Handler):
    """livekit's warnings and errors during the run (it logs, not raises, most of what a race
    breaks: a failed activity swap, a context sync that timed out)."""

    def __init__(self, run: RaceRun) -> None:
        super().__init__(logging.WARNING)
        self._run = run

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message += f": {type(error).__name__}: {error}"
        self._run.problems.append(LoggedProblem(self._run.trace.now(), record.levelname, message))
