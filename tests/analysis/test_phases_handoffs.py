"""A handoff through the runner, split into its phases, each beside the emulator's truth."""

from __future__ import annotations

import itertools

import pytest
from livekit.agents import NOT_GIVEN, Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai

from notebook_agents import NotebookRunner
from notebook_agents.analysis import Breakdown, Phase, handoff_phases
from notebook_agents.emulator import Emulator, LatencyModel
from notebook_agents.trace import Trace
from tests.conftest import API_KEY, started

RTT_MS = 20.0
LATENCY = LatencyModel(rtt_ms=RTT_MS)


def handing_server(
    emulator: Emulator, session: str, context: str, *, saying: str | None = None
) -> AgentServer:
    """The Concierge's tool hands the caller to Billing, who greets them from ``on_enter``:
    on the session's realtime model (reused) or one of its own (fresh), with the Concierge's
    context or none; ``saying``: the tool returns Billing with that message, as
    ``return Billing(...), "Transferring you."`` does."""
    server = AgentServer()

    def model() -> openai.realtime.RealtimeModel:
        return openai.realtime.RealtimeModel(
            base_url=emulator.base_url(rtt_ms=RTT_MS), api_key=API_KEY, modalities=["text"]
        )

    class Billing(Agent):
        def __init__(self, chat_ctx: object) -> None:
            super().__init__(
                instructions="You are Billing.",
                llm=model() if session == "fresh" else NOT_GIVEN,
                chat_ctx=chat_ctx if chat_ctx is not None else NOT_GIVEN,  # type: ignore[arg-type]
            )

        async def on_enter(self) -> None:
            self.session.generate_reply()

    class Concierge(Agent):
        def __init__(self) -> None:
            super().__init__(instructions="You are the Concierge.")

        @function_tool
        async def transfer_to_billing(self) -> Agent | tuple[Agent, str]:
            """Hand the caller to billing."""
            billing = Billing(self.chat_ctx.copy() if context == "copied" else None)
            return billing if saying is None else (billing, saying)

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        agent_session: AgentSession[None] = AgentSession(llm=model())
        await agent_session.start(agent=Concierge(), room=ctx.room)

    return server


async def handed_off(
    runners: list[NotebookRunner],
    emulator: Emulator,
    session: str,
    context: str,
    *,
    saying: str | None = None,
) -> Trace:
    server = handing_server(emulator, session, context, saying=saying)
    runner = await started(runners, NotebookRunner(server))
    await runner.send_text("hello")
    await runner.send_text("transfer to billing")  # the turn ends once Billing has greeted
    runner.stop()
    return runner.trace


def critical(breakdown: Breakdown) -> list[str]:
    return [p.name for p in breakdown.phases if p.critical]


def phase(breakdown: Breakdown, name: str) -> Phase:
    (found,) = [p for p in breakdown.phases if p.name == name]
    return found


REPLY = ["on_enter", "reply_request", "reply_created", "first_text", "playout"]
START = ["tool_return", "on_exit", "drain", "close"]


@pytest.mark.parametrize(
    ("session", "context", "path", "beside"),
    [
        ("reused", "copied", [*START, "session_update", *REPLY], []),
        ("reused", "empty", [*START, "session_update", *REPLY], []),
        # the new session's items are created once it is connected
        ("fresh", "copied", [*START, "connect", "session_update", *REPLY], []),
        # nothing to create: the agent starts while its session connects, the reply waits
        ("fresh", "empty", [*START, "connect", *REPLY[1:]], ["session_update", "on_enter"]),
    ],
)
async def test_a_handoff_is_split_into_its_phases_each_with_its_truth(
    emulator: Emulator,
    runners: list[NotebookRunner],
    session: str,
    context: str,
    path: list[str],
    beside: list[str],
) -> None:
    trace = await handed_off(runners, emulator, session, context)
    (breakdown,) = handoff_phases(trace, LATENCY)
    mode = f"{session}+{context}"
    assert breakdown.kind == "handoff" and breakdown.mode == mode
    assert breakdown.label == f"Concierge → Billing · {mode}" and breakdown.agent == "Billing"
    assert critical(breakdown) == path
    assert sorted(p.name for p in breakdown.phases if not p.critical) == sorted(beside)
    # the wait: from the Concierge's tool returning Billing to Billing speaking
    (tool,) = [s for s in trace.spans if s.name == "function_tool"]
    speaking = [e.t for e in trace.of_kind("agent_state") if e.data["new"] == "speaking"]
    assert breakdown.start == tool.end
    assert breakdown.end == pytest.approx(speaking[-1], abs=0.02)
    # the critical phases add up to it, one after another
    assert abs(breakdown.unexplained) < 0.02
    chain = [p for p in breakdown.phases if p.critical]
    assert all(a.end == b.start for a, b in itertools.pairwise(chain))
    # each phase has its truth: the network's share, from the emulator's model
    rtt = RTT_MS / 1000
    network = {"drain": rtt, "reply_created": rtt, "session_update": rtt}
    if session == "fresh":
        network |= {"connect": 3 * rtt, "session_update": rtt if context == "copied" else 0.0}
    for p in breakdown.phases:
        assert p.truth == pytest.approx(network.get(p.name, 0.0)), p.name
        assert p.client == pytest.approx(p.seconds - network.get(p.name, 0.0))
    # nothing arrives before the network lets it: each exchange is a floor for its phase (the
    # tool's output is synced from the moment the tool returned: its round trip spans the
    # phases up to the drain's end)
    assert sum(phase(breakdown, name).seconds for name in START[:3]) >= rtt
    for name in network.keys() - {"drain"}:
        assert phase(breakdown, name).seconds >= network[name]
    # livekit's own figures beside ours: its spans' durations, the connect's acquire_time
    assert phase(breakdown, "drain").livekit_name == "drain_agent_activity"
    assert phase(breakdown, "on_enter").livekit_name == "on_enter"
    if session == "fresh":
        connect = phase(breakdown, "connect")
        assert connect.livekit_name == "acquire_time" and connect.livekit is not None
        assert connect.livekit >= 3 * rtt and connect.note


@pytest.mark.parametrize("session", ["reused", "fresh"])
async def test_a_tool_returning_the_agent_with_a_message_waits_for_the_old_agents_reply(
    emulator: Emulator, runners: list[NotebookRunner], session: str
) -> None:
    """``return Billing(...), "Transferring you."``: the output asks for a reply, and on
    OpenAI livekit has the Concierge answer it (response.create to response.done) before its
    drain ends. Its own phase, with its round trip as truth; before, the drain hid it and the
    handoff was a round trip over its truth."""
    trace = await handed_off(runners, emulator, session, "copied", saying="Transferring you.")
    (breakdown,) = handoff_phases(trace, LATENCY)
    path = critical(breakdown)
    assert path[: path.index("close") + 1] == [*START[:3], "tool_reply", "close"]
    rtt = RTT_MS / 1000
    answer = phase(breakdown, "tool_reply")
    assert answer.truth == pytest.approx(rtt) and answer.seconds >= rtt
    assert phase(breakdown, "drain").truth == pytest.approx(rtt)
    assert abs(breakdown.unexplained) < 0.02
    # the answer is the Concierge's, said before Billing started
    (said,) = [e for e in trace.of_kind("agent_message") if e.data["source"] == "tool_reply"]
    assert said.agent == "Concierge" and said.t <= answer.end + 0.05


async def test_without_a_latency_model_the_phases_have_no_truth(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    trace = await handed_off(runners, emulator, "reused", "copied")
    (breakdown,) = handoff_phases(trace)
    assert breakdown.phases and {p.truth for p in breakdown.phases} == {None}
    assert {p.client for p in breakdown.phases} == {None}


def test_a_trace_without_handoffs_has_none_to_split() -> None:
    """A new live trace (no spans yet) is where every view starts; it raised before."""
    assert handoff_phases(Trace()) == []
