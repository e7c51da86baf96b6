"""The realtime probe: times the sessions a trial's models open onto the trial's ``Clock``."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from livekit.agents import llm

from .. import _livekit_internals as livekit
from .clock import Clock


class RealtimeProbe:
    """Times the realtime sessions a model opens: creation, ``_update_session``, replies."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.update_started: float | None = None
        self.update_ended: float | None = None
        self.errors: list[str] = []
        self._models: list[llm.RealtimeModel] = []
        self._sessions: list[Any] = []

    def watch_model(self, model: llm.RealtimeModel) -> None:
        """Watch each session ``model`` opens from now on (once per model, until ``release``)."""
        if any(watched is model for watched in self._models):
            return
        self._models.append(model)
        open_session = model.session

        def session(*args: Any, **kwargs: Any) -> Any:
            created = time.perf_counter()
            rt = open_session(*args, **kwargs)
            self.watch_session(rt, created)
            return rt

        model.session = session  # type: ignore[method-assign]

    def release(self) -> None:
        """Stop watching the models: a model that outlives the trial (your server's, made
        once) opens its sessions as before."""
        for model in self._models:
            vars(model).pop("session", None)
        self._models.clear()

    def watch_session(self, rt: Any, created: float = -math.inf) -> None:
        """Time ``rt``'s updates and replies (``created``: when it was opened, if after t0)."""
        if any(watched is rt for watched in self._sessions):
            return
        self._sessions.append(rt)
        clock = self.clock

        def timed(update: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
            async def update_session(*args: Any, **kwargs: Any) -> None:
                started = time.perf_counter()
                await update(*args, **kwargs)
                if clock.t0 is not None and started >= clock.t0 and self.update_ended is None:
                    # a session opened for B counts from its creation (upstream's "handoff")
                    self.update_started = created if created >= clock.t0 else started
                    self.update_ended = time.perf_counter()

            return update_session

        livekit.wrap_update_session(rt, timed)
        # any provider's session says a reply began; OpenAI's events say it sooner, and more
        rt.on("generation_created", lambda _: self.clock.mark_reply("response_created"))
        rt.on("openai_server_event_received", self._on_server_event)
        rt.on("error", lambda ev: self.errors.append(f"{type(ev.error).__name__}: {ev.error}"))

    def _on_server_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.created":
            self.clock.mark_reply("response_created")
        elif kind in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            self.clock.mark_reply("first_text")
        elif kind == "response.output_audio.delta":
            self.clock.mark_reply("first_audio")

    def update_ms(self) -> float | None:
        if self.update_started is None or self.update_ended is None:
            return None
        return (self.update_ended - self.update_started) * 1000.0
