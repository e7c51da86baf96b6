"""Views, Python side: state from a live or loaded trace, throttled updates, static figures."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from livekit.agents import Agent, AgentSession
from livekit.plugins import openai
from matplotlib.figure import Figure

from notebook_agents.emulator import Emulator
from notebook_agents.trace import EventKind, Trace, TraceEvents
from notebook_agents.views import StateView
from notebook_agents.views._assets import widgets_dir
from notebook_agents.views._throttle import Throttle
from notebook_agents.views.state_view import OTHER_STATE
from tests.conftest import API_KEY


class Ada(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Ada.")


async def converse(emulator: Emulator, trace: Trace, turns: int = 2) -> None:
    model = openai.realtime.RealtimeModel(
        base_url=emulator.base_url(), api_key=API_KEY, modalities=["text"]
    )
    session: AgentSession[None] = AgentSession(
        llm=model, vad=None, turn_handling={"turn_detection": "manual"}
    )
    trace.attach(session)
    await session.start(Ada())
    for i in range(turns):
        await session.run(user_input=f"hello {i}")
    await session.aclose()
    await model.aclose()


def flushed(view: StateView) -> dict[str, Any]:
    view._throttle.cancel()
    view._flush()
    return {k: getattr(view, k) for k in ("agent", "agent_state", "user_state", "closed")}


async def test_state_view_follows_a_live_trace_to_its_close(emulator: Emulator) -> None:
    """Live, the agent's state and the user's; once the session has closed, no stale state
    (livekit leaves both listening): the agent's is closed and no caller is on the line."""
    trace = Trace()
    view = StateView(trace)
    assert (view.agent, view.agent_state) == ("", "initializing")
    listening = asyncio.Event()
    trace.subscribe(lambda e: listening.set() if e.data.get("new") == "listening" else None)
    # subscribed after the view: the same delivery that tells us "closed" fed the view first
    closed = asyncio.Event()
    trace.subscribe(lambda event: closed.set() if event.kind == "closed" else None)
    conversation = asyncio.ensure_future(converse(emulator, trace))
    await listening.wait()
    assert flushed(view)["agent_state"] == "listening"
    await conversation
    await closed.wait()
    assert trace.of_kind("agent_state")[-1].data["new"] == "listening"  # what livekit left
    assert flushed(view) == {"agent": "Ada", "agent_state": "closed", "user_state": "–",
                             "closed": True}  # fmt: skip
    assert view.agent_state_since == trace.events[-1].t
    assert view.colors["agent_state"] == view.colors["user_state"] == OTHER_STATE
    assert view.note == "session closed"
    assert view.started_at == trace.started_at
    view.close()


async def test_state_view_of_a_loaded_trace(emulator: Emulator, tmp_path: Path) -> None:
    trace = Trace()
    await converse(emulator, trace, turns=1)
    loaded = Trace.load(trace.save(tmp_path / "trace.jsonl"))
    view = StateView(loaded)
    assert (view.agent, view.closed) == ("Ada", True)
    assert view.started_at == trace.started_at
    figure = view.to_figure()
    assert isinstance(figure, Figure)
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert "Ada" in texts and "closed" in texts and "session closed" in texts


async def test_throttle_coalesces_bursts_to_at_most_30_hz() -> None:
    flushes: list[float] = []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def flush() -> None:
        flushes.append(loop.time())
        if len(flushes) == 2:
            done.set()

    throttle = Throttle(flush)
    for _ in range(1000):  # a burst of events
        throttle.request()
    assert len(flushes) == 1  # the first goes at once; the rest wait for one later flush
    await done.wait()
    assert len(flushes) == 2
    assert flushes[1] - flushes[0] >= throttle.interval_s * 0.9


def test_front_end_assets_are_found() -> None:
    assert (
        (widgets_dir() / "state_view.js").read_text().strip().endswith("export default { render };")
    )
    assert StateView._esm and "na-state" in str(StateView._css)


class RecordsWhileRead(Trace):
    """A trace whose session records an event while a view reads its history, as the
    session's thread may while the kernel's thread builds a view."""

    def __init__(self, kind: EventKind, data: dict[str, Any], agent: str) -> None:
        super().__init__()
        self._during_read: tuple[EventKind, dict[str, Any], str] | None = (kind, data, agent)

    @property
    def events(self) -> TraceEvents:
        history = super().events
        if self._during_read is not None:
            kind, data, agent = self._during_read
            self._during_read = None
            self._record(kind, data, agent=agent)
        return history


async def test_state_view_misses_no_event_recorded_while_it_reads_the_history() -> None:
    trace = RecordsWhileRead("agent_state", {"old": "initializing", "new": "listening"}, "Ada")
    delivered = asyncio.Event()
    # subscribed before the view: the delivery that sets it has fed the view too
    trace.subscribe(lambda _: delivered.set())
    view = StateView(trace)
    await delivered.wait()
    assert flushed(view)["agent_state"] == "listening"
    assert (view.agent, view.agent_state_since) == ("Ada", trace.events[0].t)
    view.close()


async def test_a_static_picture_drawn_before_the_delivery_shows_the_trace_as_it_is() -> None:
    """Notebook 01 draws ``view.to_figure()`` in the cell after a turn, before the kernel's
    loop has delivered the turn's last events to the view: the picture still has them (it
    showed the Concierge thinking after Billing had taken over)."""
    trace = Trace()
    view = StateView(trace)
    delivered = asyncio.Event()
    # subscribed after the view: the delivery that sets it has fed the view first
    trace.subscribe(lambda event: delivered.set() if event.kind == "agent_state" else None)
    trace._record("handoff", {"from": "Concierge", "to": "Billing"}, agent="Concierge")
    trace._record("agent_state", {"old": "thinking", "new": "listening"}, agent="Billing")
    assert view.agent_state == "initializing"  # nothing delivered yet: no await since
    badges = [text.get_text() for text in view.to_figure().axes[0].texts]
    assert badges[1::2] == ["Billing", "listening", view.user_state]
    since = view.agent_state_since
    await delivered.wait()  # the delivery comes after, and changes nothing
    assert (view.agent, view.agent_state, view.agent_state_since) == ("Billing", "listening", since)
    view.close()
