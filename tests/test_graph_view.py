"""AgentGraphView, Python side: handoffs read from the code, followed live, drawn as a figure."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext, function_tool
from livekit.plugins import openai
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from notebook_agents import NotebookRunner
from notebook_agents.emulator import Emulator
from notebook_agents.trace import TRACE_FORMAT, Trace
from notebook_agents.views._assets import widgets_dir
from notebook_agents.views.graph_view import UNKNOWN, AgentGraphView, graph_layout

from .conftest import API_KEY

if TYPE_CHECKING:
    from decimal import Decimal

# -- agents, as an app would write them ---------------------------------------------------------


class Concierge(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the Concierge. You greet callers.")

    @function_tool
    async def transfer_to_billing(self) -> Agent:
        """Hand the caller to billing."""
        return Billing()  # only the body says where: the annotation is the base class


class Billing(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Billing. You handle invoices.")

    @function_tool
    async def transfer_to_concierge(self) -> tuple[Concierge, str]:
        """Hand the caller back to the front desk."""
        return Concierge(), "Transferring you back."

    @function_tool
    async def lookup_invoice(self, number: str) -> str:
        """Not a handoff: it answers with text."""
        return f"invoice {number} is paid"


class Manager(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the Manager.")


class Support(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Support.")

    @function_tool
    async def escalate(self) -> Manager | None:
        """Optional handoff: the annotation names the target."""
        return Manager()

    @function_tool
    async def route(self, billing: bool) -> Billing | Manager:
        """Either of two agents."""
        return Billing() if billing else Manager()

    @function_tool  # no annotation: the body shows an agent, so it is a handoff
    async def hand_over(self):  # type: ignore[no-untyped-def]
        """Unannotated, to the manager."""
        return Manager()

    @function_tool  # no annotation and no agent in the body: not a handoff
    async def opening_hours(self):  # type: ignore[no-untyped-def]
        """Unannotated text."""
        return "9 to 5"


def make_manager() -> Manager:
    return Manager()


class Refunds(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Refunds.")

    @function_tool
    async def refund(self, amount: Decimal) -> Billing:
        """``Decimal`` is imported for type checkers only: it does not evaluate at run time."""
        return Billing()

    @function_tool
    async def to_manager(self) -> Agent:
        """Through a factory: its own annotation names the agent."""
        return make_manager()


class Bob(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Bob. You handle billing.")

    @function_tool
    async def transfer_to_alice(self) -> Alice:
        """Back to Alice."""
        return Alice(Bob())


class Alice(Agent):
    def __init__(self, bob: Agent) -> None:
        super().__init__(instructions="You are Alice. You greet callers.")
        self._bob = bob

    @function_tool
    async def transfer_to_bob(self) -> Agent:
        """Hand the caller to Bob."""
        return self._bob  # unreadable from the code: drawn to "?" until seen live


class Echo(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are Echo.")

    @function_tool
    async def start_over(self) -> Echo:
        """A handoff to a fresh agent of the same class: a loop in the graph."""
        return Echo()

    @function_tool
    async def to_support(self) -> Support:
        """Across to another root."""
        return Support()


@function_tool
async def send_to_billing() -> Billing:
    """A free function given to an agent's constructor."""
    return Billing()


def node_ids(view: AgentGraphView) -> list[str]:
    return [node["id"] for node in view.nodes]


def edge_set(view: AgentGraphView) -> set[tuple[str, str, str, bool]]:
    return {(e["source"], e["target"], e["tool"], e["observed"]) for e in view.edges}


# -- discovery ----------------------------------------------------------------------------------


def test_target_read_from_the_body_of_a_bare_agent_annotation() -> None:
    view = AgentGraphView([Concierge])
    assert node_ids(view)[:2] == ["Concierge", "Billing"]
    assert ("Concierge", "Billing", "transfer_to_billing", False) in edge_set(view)
    assert view.current == ""


def test_a_cycle_is_followed_once_and_plain_tools_are_not_edges() -> None:
    view = AgentGraphView([Concierge])
    # Concierge -> Billing -> Concierge: both expanded once, the traversal ends
    assert node_ids(view) == ["Concierge", "Billing"]
    assert edge_set(view) == {
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
    }
    assert all(edge["tool"] != "lookup_invoice" for edge in view.edges)


def test_annotated_targets_through_optional_union_and_tuple() -> None:
    view = AgentGraphView([Support])
    assert node_ids(view) == ["Support", "Manager", "Billing", "Concierge"]
    assert edge_set(view) == {
        ("Support", "Manager", "escalate", False),
        ("Support", "Manager", "hand_over", False),
        ("Support", "Billing", "route", False),
        ("Support", "Manager", "route", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
        ("Concierge", "Billing", "transfer_to_billing", False),
    }


def test_an_unevaluable_parameter_and_a_factory_do_not_hide_targets() -> None:
    edges = edge_set(AgentGraphView([Refunds]))
    assert ("Refunds", "Billing", "refund", False) in edges
    assert ("Refunds", "Manager", "to_manager", False) in edges


def test_an_unreadable_target_goes_to_the_unknown_node() -> None:
    view = AgentGraphView([Alice])
    assert node_ids(view) == ["Alice", UNKNOWN]
    assert edge_set(view) == {("Alice", UNKNOWN, "transfer_to_bob", False)}


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="Front desk.", id="reception")


def test_instances_use_their_label_and_constructor_tools() -> None:
    plain = Agent(instructions="No class of its own.", tools=[send_to_billing])
    view = AgentGraphView([plain, FrontDesk(), Concierge()])
    assert node_ids(view) == ["Agent", "reception", "Concierge", "Billing"]
    assert ("Agent", "Billing", "send_to_billing", False) in edge_set(view)
    # a single agent needs no list; anything else is refused clearly
    assert node_ids(AgentGraphView(Manager)) == ["Manager"]
    with pytest.raises(TypeError, match="Agent instances or subclasses"):
        AgentGraphView(["Concierge"])  # type: ignore[list-item]


def test_a_loaded_trace_sets_current_and_adds_handoffs_the_code_missed(tmp_path: Path) -> None:
    events = [
        ("handoff", "Concierge", {"from": None, "to": "Concierge"}),
        ("tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c1"}),
        ("handoff", "Billing", {"from": "Concierge", "to": "Billing"}),
        ("tool_call", "Billing", {"name": "call_security", "call_id": "c2"}),
        ("handoff", "Security", {"from": "Billing", "to": "Security"}),
        # a handoff no tool made (session.update_agent): no tool name to guess
        ("handoff", "Concierge", {"from": "Security", "to": "Concierge"}),
    ]
    path = tmp_path / "trace.jsonl"
    lines = [{"format": TRACE_FORMAT, "started_at": 0.0}] + [
        {"seq": i, "t": i / 10, "kind": kind, "agent": agent, "data": data}
        for i, (kind, agent, data) in enumerate(events)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    view = AgentGraphView([Concierge], trace=Trace.load(path))
    assert view.current == "Concierge"
    assert node_ids(view) == ["Concierge", "Billing", "Security"]
    assert edge_set(view) == {
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
        ("Billing", "Security", "call_security", True),
        ("Security", "Concierge", "", True),
    }


# -- the static figure and the layout -----------------------------------------------------------


def test_to_figure_of_an_empty_and_a_full_graph() -> None:
    empty = AgentGraphView([]).to_figure()
    assert isinstance(empty, Figure)
    assert [t.get_text() for t in empty.axes[0].texts] == ["no agents yet"]

    view = AgentGraphView([Support])
    view.current = "Billing"
    figure = view.to_figure()
    assert isinstance(figure, Figure)
    texts = {t.get_text() for t in figure.axes[0].texts}
    assert {"Support", "Manager", "Billing", "Concierge", "route", "escalate"} <= texts
    boxes = [p for p in figure.axes[0].patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == 4
    lit = [box for box in boxes if box.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(lit) == 1  # the current agent only


def test_layout_columns_by_depth_and_parallel_edges_apart() -> None:
    view = AgentGraphView([Support])
    layout = graph_layout(view.nodes, view.edges)
    depth = {box.id: box.depth for box in layout.nodes}
    assert depth == {"Support": 0, "Manager": 1, "Billing": 1, "Concierge": 2}
    x = {box.id: box.x for box in layout.nodes}
    assert x["Support"] < x["Billing"] < x["Concierge"]
    routes = {(r.source, r.target, r.tool): r for r in layout.edges}
    # Billing <-> Concierge both ways: their curves bulge to opposite sides
    there = routes[("Concierge", "Billing", "transfer_to_billing")].label_at
    back = routes[("Billing", "Concierge", "transfer_to_concierge")].label_at
    assert abs(there[1] - back[1]) > 30
    # three edges Support -> Manager: three distinct curves
    tools = ("escalate", "route", "hand_over")
    assert len({routes[("Support", "Manager", tool)].label_at for tool in tools}) == 3


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the browser module")
def test_the_browser_lays_out_as_the_figure() -> None:
    view = AgentGraphView([Support, Alice, Echo])  # fan-out, both ways, a loop, a long edge
    module = base64.b64encode((widgets_dir() / "graph_view.js").read_bytes()).decode()
    script = f"""
        const {{ layout }} = await import("data:text/javascript;base64,{module}");
        const graph = layout({json.dumps(view.nodes)}, {json.dumps(view.edges)});
        console.log(JSON.stringify(graph));
    """
    ran = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    browser = json.loads(ran.stdout)
    figure = graph_layout(view.nodes, view.edges)
    frame = (figure.left, figure.top, figure.width, figure.height)
    assert [browser[k] for k in ("left", "top", "width", "height")] == pytest.approx(list(frame))
    assert [(n["id"], n["x"], n["y"]) for n in browser["nodes"]] == [
        (n.id, pytest.approx(n.x), pytest.approx(n.y)) for n in figure.nodes
    ]
    assert [(e["labelAt"], e["points"]) for e in browser["edges"]] == [
        (pytest.approx(list(e.label_at)), [pytest.approx(list(p)) for p in e.points])
        for e in figure.edges
    ]


def test_front_end_assets_are_found() -> None:
    module = (widgets_dir() / "graph_view.js").read_text()
    assert module.strip().endswith("export default { render };")
    assert "/* AgentGraphView */" in (widgets_dir() / "views.css").read_text()
    assert AgentGraphView._esm and "na-graph" in str(AgentGraphView._css)


# -- live, from a NotebookRunner ----------------------------------------------------------------


@pytest.fixture
def runners(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[NotebookRunner]]:
    """Runners a test makes, offline; all stopped at the end, whatever happened."""
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    made: list[NotebookRunner] = []
    yield made
    for runner in made:
        runner.stop()


def agent_server(emulator: Emulator, first: Callable[[], Agent]) -> AgentServer:
    server = AgentServer()

    @server.rtc_session()
    async def entrypoint(ctx: JobContext) -> None:
        model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key=API_KEY)
        session: AgentSession[None] = AgentSession(llm=model)
        await session.start(agent=first(), room=ctx.room)

    return server


async def until(view: AgentGraphView, condition: Callable[[], bool]) -> None:
    """Wait for the synced traits (updated by the throttled flush) to satisfy ``condition``."""
    changed = asyncio.Event()

    def on_change(_: Any) -> None:
        changed.set()

    view.observe(on_change, names=["nodes", "edges", "current"])
    try:
        while not condition():
            changed.clear()
            await asyncio.wait_for(changed.wait(), 30)  # a bound on failure, not a sync
    finally:
        view.unobserve(on_change, names=["nodes", "edges", "current"])


async def test_runner_graph_appears_with_the_session_and_follows_a_handoff(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(agent_server(emulator, Concierge))
    runners.append(runner)
    view = AgentGraphView(runner)
    assert (view.nodes, view.edges, view.current) == ([], [], "")

    runner.start()
    await runner.ready()
    await until(view, lambda: view.current == "Concierge")
    assert node_ids(view) == ["Concierge", "Billing"]
    assert edge_set(view) == {
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
    }

    await runner.send_text("please transfer to billing")
    await until(view, lambda: view.current == "Billing")
    assert not any(edge["observed"] for edge in view.edges)  # the code had shown this one

    # a view made after the fact replays the trace: the same graph, the same current agent
    late = AgentGraphView(runner)
    assert (set(node_ids(late)), edge_set(late), late.current) == (
        set(node_ids(view)),
        edge_set(view),
        "Billing",
    )
    late.close()
    view.close()


async def test_runner_live_handoff_resolves_an_unknown_target(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = NotebookRunner(agent_server(emulator, lambda: Alice(Bob())))
    runners.append(runner)
    runner.start()
    await runner.ready()
    view = AgentGraphView(runner)  # the session is running: discovered at once
    assert node_ids(view) == ["Alice", UNKNOWN]
    await until(view, lambda: view.current == "Alice")

    await runner.send_text("please transfer to bob")
    await until(view, lambda: view.current == "Bob")
    # the "?" edge now leads to Bob, marked as seen live; Bob's own tools are read too
    assert node_ids(view) == ["Alice", "Bob"]
    assert edge_set(view) == {
        ("Alice", "Bob", "transfer_to_bob", True),
        ("Bob", "Alice", "transfer_to_alice", False),
    }
    view.close()
