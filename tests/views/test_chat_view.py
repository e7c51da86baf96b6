"""ChatView, Python side: typed lines become turns, the transcript names the agents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from livekit.agents import AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from matplotlib.figure import Figure

from notebook_agents import NotebookRunner, Trace
from notebook_agents.emulator import Emulator
from notebook_agents.views import ChatView
from tests.conftest import API_KEY
from tests.trace.test_trace import Alice


def two_agent_server(emulator: Emulator) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        await AgentSession(llm=model).start(agent=Alice(), room=ctx.room)

    return server


class Browser:
    """Stands in for the front end: keeps what the view sends (the comm is the boundary)."""

    def __init__(self, view: ChatView) -> None:
        self.messages: list[dict[str, Any]] = []
        # each message as it went over the wire then (the view's history is its own live list)
        view.send = lambda message: self.messages.append(
            {**message, "events": list(message["events"])}
        )
        # as the front end does once it renders: what the view sent before it was there
        view._on_browser_message(view, {"type": "history"}, None)

    def lines(self) -> list[tuple[str, str]]:
        events: list[dict[str, Any]] = []
        for message in self.messages:
            events = [*([] if message.get("reset") else events), *message["events"]]
        return [(e["who"], e["text"]) for e in events]


def said(view: ChatView, text: str) -> asyncio.Event:
    """Set once the view has been told of an agent message ``text``."""
    seen = asyncio.Event()
    view.trace.subscribe(
        lambda e: seen.set() if e.kind == "agent_message" and e.data["text"] == text else None
    )
    return seen


async def finished(view: ChatView, turn: Any, *heard: asyncio.Event) -> None:
    """The turn done (its outcome shown first: that callback was queued first) and every
    expected message delivered, then what the view holds sent."""
    await asyncio.wrap_future(turn)
    for event in heard:
        await event.wait()
    view._throttle.cancel()
    view._flush()


async def test_typed_lines_become_turns_and_the_transcript_names_the_agents(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(two_agent_server(emulator)).start()
    runners.append(runner)
    view = ChatView(runner)  # before the session exists: it fills in as the agents talk
    browser = Browser(view)
    await runner.ready()

    bob = said(view, "Bob here.")
    view._on_browser_message(view, {"type": "say", "text": "  hello there "}, [])
    assert view.pending == 1
    turn = view.say("please transfer to bob")
    assert turn is not None
    await finished(view, turn, bob)
    assert view.pending == 0 and view.error == ""

    lines = browser.lines()
    assert lines[0] == ("Alice", "You are Alice. How can I help you?")  # on_enter, unprompted
    assert ("you", "hello there") in lines and ("you", "please transfer to bob") in lines
    assert ("Bob", "Bob here.") in lines
    assert ("", "Alice → Bob (reused · empty)") in lines
    on_enter = [e for m in browser.messages for e in m["events"] if e.get("phase") == "on_enter"]
    assert [e["who"] for e in on_enter] == ["Alice", "Bob"]

    figure = view.to_figure()
    assert isinstance(figure, Figure)
    assert any("Bob here." in t.get_text() for t in figure.axes[0].texts)


async def test_a_refused_line_says_why_and_sends_nothing(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(two_agent_server(emulator))
    runners.append(runner)
    view = ChatView(runner)
    assert view.say("too early") is None
    assert "runner.start()" in view.error and view.pending == 0
    assert view.say("   ") is None  # blank lines are not turns

    runner.start()
    await runner.ready()
    turn = view.say("hello")
    assert turn is not None and view.error == ""
    await finished(view, turn)
    assert view.pending == 0
    ended = asyncio.Event()
    view.observe(lambda _: ended.set(), names="ended")
    runner.stop()
    await asyncio.wait_for(ended.wait(), 10)  # the trace's closed reaches the view
    assert view.ended.startswith("This call has ended.") and "new call" in view.ended
    assert view.say("too late") is None
    assert "stopped" in view.error and view.pending == 0
    assert isinstance(ChatView(NotebookRunner(two_agent_server(emulator))).to_figure(), Figure)


def test_a_trace_given_to_the_chat_names_the_runner_it_wants() -> None:
    with pytest.raises(TypeError, match=r"ChatView\(runner\).*the other views take runner.trace"):
        ChatView(Trace())  # type: ignore[arg-type]
