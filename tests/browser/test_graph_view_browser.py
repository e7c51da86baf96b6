"""AgentGraphView in JupyterLab in headless chromium, in the light and the dark theme: the graph
appears and follows a live handoff, and lights no agent once the call is over; a loaded trace
alone, with no runner, lights its current agent."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.views.test_graph_view import saved_trace

from .conftest import run_cell, run_notebook
from .themes import in_both_themes

AGENTS = """from livekit.agents import Agent, function_tool

class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing.")

    @function_tool
    async def transfer_to_concierge(self) -> "Concierge":
        \"\"\"Hand the caller back to the front desk.\"\"\"
        return Concierge()

class Concierge(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the Concierge.")

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        \"\"\"Hand the caller to billing.\"\"\"
        return Billing()"""

CELLS = [
    AGENTS
    + """

from livekit.agents import AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner
from notebook_agents.views import AgentGraphView

emulator = Emulator().start()
server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
view = AgentGraphView([Concierge], trace=runner.trace)
view""",
    "await runner.ready()",
]


def curve(d: str | None) -> list[float]:
    """The numbers of an SVG quadratic path ``M x y Q cx cy x y``."""
    assert d is not None and d.startswith("M ") and " Q " in d
    return [float(n) for n in d.replace("M ", "").replace("Q ", "").split()]


def test_graph_view_renders_and_follows_a_handoff(lab: tuple[str, Path], page: Page) -> None:
    run_notebook(page, lab, "graph_view.ipynb", CELLS)

    graph = page.locator("svg.na-graph")
    expect(graph.locator('.na-node[data-id="Concierge"] > text')).to_have_text("Concierge")
    expect(graph.locator('.na-node[data-id="Billing"] > text')).to_have_text("Billing")
    there = graph.locator('.na-edge[data-source="Concierge"][data-target="Billing"]')
    back = graph.locator('.na-edge[data-source="Billing"][data-target="Concierge"]')
    expect(there.locator(".na-edge-label")).to_have_text("transfer_to_billing")
    expect(back.locator(".na-edge-label")).to_have_text("transfer_to_concierge")
    expect(there.locator("title")).to_have_text("transfer_to_billing: Concierge → Billing")
    # both ways between the same pair: curves bulging to opposite sides, never one line twice
    sides = []
    for edge in (there, back):
        _, start_y, _, control_y, _, end_y = curve(edge.locator("path").get_attribute("d"))
        sides.append(control_y - (start_y + end_y) / 2)
    assert sides[0] * sides[1] < 0
    # the view was displayed before the session started: its first agent arrives live
    current = graph.locator(".na-node.na-current")
    expect(current).to_have_count(1)
    expect(current).to_have_attribute("data-id", "Concierge", timeout=60_000)
    assert in_both_themes(page, "svg.na-graph", "graph_view_concierge") == []

    run_cell(page, 'await runner.send_text("please transfer to billing")')
    expect(current).to_have_attribute("data-id", "Billing", timeout=60_000)
    expect(graph.locator(".na-edge-observed")).to_have_count(0)  # the code had shown it
    assert in_both_themes(page, "svg.na-graph", "graph_view_billing") == []

    run_cell(page, "runner.stop()")
    expect(current).to_have_count(0)  # the call is over: no agent is on it
    assert in_both_themes(page, "svg.na-graph", "graph_view_closed") == []
    run_cell(page, "emulator.stop()")


LOADED = [
    AGENTS
    + """

from notebook_agents import Trace
from notebook_agents.views import AgentGraphView

AgentGraphView(Trace.load("saved_trace.jsonl"))""",
]


def test_a_loaded_trace_alone_lights_its_current_agent(lab: tuple[str, Path], page: Page) -> None:
    _, root = lab
    # a session saved while the call was up: Concierge handed off to Billing, then back, then
    # to Billing; its handoffs name the agents' classes, defined again in the notebook's __main__
    concierge, billing = "__main__:Concierge", "__main__:Billing"
    saved_trace(
        root / "saved_trace.jsonl",
        [
            ("handoff", "Concierge", {"from": None, "to": "Concierge", "to_class": concierge}),
            ("tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c1"}),
            ("handoff", "Billing", {"from": "Concierge", "to": "Billing", "to_class": billing}),
            ("tool_call", "Billing", {"name": "transfer_to_concierge", "call_id": "c2"}),
            ("handoff", "Concierge", {"from": "Billing", "to": "Concierge", "to_class": concierge}),
            ("tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c3"}),
            ("handoff", "Billing", {"from": "Concierge", "to": "Billing", "to_class": billing}),
        ],
    )
    run_notebook(page, lab, "graph_view_loaded.ipynb", LOADED)

    graph = page.locator("svg.na-graph")
    expect(graph.locator(".na-node")).to_have_count(2, timeout=60_000)
    expect(graph.locator(".na-node.na-current")).to_have_attribute("data-id", "Billing")
    expect(graph.locator(".na-edge-label")).to_have_text(
        ["transfer_to_billing", "transfer_to_concierge"]
    )
    expect(graph.locator(".na-edge-observed")).to_have_count(0)  # both read from the code
    assert in_both_themes(page, "svg.na-graph", "graph_view_loaded") == []
