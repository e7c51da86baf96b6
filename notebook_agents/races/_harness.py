"""What a race's scenario runs with: realtime models on the emulator, one traced session, and
a record of what each realtime session sent and what livekit logged."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from livekit.agents import Agent, AgentSession
from livekit.agents.voice.run_result import RunResult
from livekit.plugins import openai

from .. import _livekit_internals as livekit
from ..trace.livekit_spans import capture_spans_here
from .case import Problem, RaceRun, WireEvent

API_KEY = "sk-emulator-not-a-secret"
"""any key works against the emulator"""
RUN_TIMEOUT_S = 15.0
"""a turn that takes longer hangs: the emulator answers in milliseconds plus the latency set"""


class Harness:
    """Models, session and turns for one race run; everything it opens it closes."""

    def __init__(self, run: RaceRun, base_url: str) -> None:
        self._run = run
        self.base_url = base_url
        self._models: list[openai.realtime.RealtimeModel] = []
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
            raise RuntimeError("start the session first: await harness.start(agent)")
        return self._session

    def model(self) -> openai.realtime.RealtimeModel:
        """A new realtime model on the emulator (a new instance: a fresh session on handoff)."""
        model = openai.realtime.RealtimeModel(
            base_url=self.base_url, api_key=API_KEY, modalities=["text"]
        )
        self._watch(model)
        self._models.append(model)
        return model

    async def start(self, agent: Agent, model: openai.realtime.RealtimeModel) -> None:
        """Start a text-only session with ``agent`` on ``model``, traced with livekit's spans."""
        session: AgentSession[None] = AgentSession(
            llm=model, vad=None, turn_handling={"turn_detection": "manual"}
        )
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
        self._run.problems.append(Problem(self._run.trace.now(), level, message))

    def _watch(self, model: openai.realtime.RealtimeModel) -> None:
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
            for model in self._models:
                await model.aclose()
            self._run.trace.detach()


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
        self._run.problems.append(Problem(self._run.trace.now(), record.levelname, message))
