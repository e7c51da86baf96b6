"""AgentGraphView in JupyterLab in headless chromium: the graph appears, then follows a handoff."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import run_cell, run_notebook, screenshot

CELLS = [
    """from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner
from notebook_agents.views import AgentGraphView

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
        return Billing()

emulator = Emulator().start()
server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    """runner = NotebookRunner(server).start()
view = AgentGraphView(runner)
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
    # the view was displayed before the session started: the graph arrives as a live update
    concierge = graph.locator('.na-node[data-id="Concierge"] > text')
    expect(concierge).to_have_text("Concierge", timeout=60_000)
    expect(graph.locator('.na-node[data-id="Billing"] > text')).to_have_text("Billing")
    there = graph.locator('.na-edge[data-source="Concierge"][data-target="Billing"]')
    back = graph.locator('.na-edge[data-source="Billing"][data-target="Concierge"]')
    expect(there.locator(".na-edge-label")).to_have_text("transfer_to_billing")
    expect(back.locator(".na-edge-label")).to_have_text("transfer_to_concierge")
    # both ways between the same pair: curves bulging to opposite sides, never one line twice
    sides = []
    for edge in (there, back):
        _, start_y, _, control_y, _, end_y = curve(edge.locator("path").get_attribute("d"))
        sides.append(control_y - (start_y + end_y) / 2)
    assert sides[0] * sides[1] < 0
    current = graph.locator(".na-node.na-current")
    expect(current).to_have_count(1)
    expect(current).to_have_attribute("data-id", "Concierge", timeout=60_000)
    screenshot(page, "graph_view_concierge")

    run_cell(page, 'await runner.send_text("please transfer to billing")')
    expect(current).to_have_attribute("data-id", "Billing", timeout=60_000)
    expect(graph.locator(".na-edge-observed")).to_have_count(0)  # the code had shown it
    screenshot(page, "graph_view_billing")

    run_cell(page, "runner.stop()")
    run_cell(page, "emulator.stop()")
