"""AgentGraphView, Python side: the graph laid out in the kernel, followed from a trace (live or
loaded), drawn as a figure from the same layout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from notebook_agents import NotebookRunner
from notebook_agents.agent_graph import UNKNOWN, HandoffGraph, class_path
from notebook_agents.emulator import Emulator
from notebook_agents.trace import TRACE_FORMAT, Trace
from notebook_agents.views import AgentGraphView
from notebook_agents.views._assets import widgets_dir
from notebook_agents.views._graph_layout import NODE_H, graph_layout
from notebook_agents.views.graph_view import GRAPH_COLORS
from tests.conftest import API_KEY, started
from tests.handoff_agents import Alice, Billing, Bob, Concierge, Echo, Support


def node_ids(view: AgentGraphView) -> list[str]:
    return [node["id"] for node in view.nodes]


def edge_set(view: AgentGraphView) -> set[tuple[str, str, str, bool]]:
    return {(e["source"], e["target"], e["tool"], e["observed"]) for e in view.edges}


def saved_trace(path: Path, events: list[tuple[str, str | None, dict[str, Any]]]) -> Path:
    """A trace file as ``Trace.save`` writes it, of ``(kind, agent, data)`` events."""
    lines = [{"format": TRACE_FORMAT, "started_at": 0.0}] + [
        {"seq": i, "t": i / 10, "kind": kind, "agent": agent, "data": data}
        for i, (kind, agent, data) in enumerate(events)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# -- what crosses to the browser ----------------------------------------------------------------


def test_the_browser_gets_the_graph_laid_out() -> None:
    view = AgentGraphView([Concierge])
    assert (node_ids(view), view.current, view.note) == (["Concierge", "Billing"], "", "")
    assert edge_set(view) == {
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
    }
    # boxes, curves and label spots are the kernel's layout, titles its words
    layout = view.geometry
    assert [(n["x"], n["y"], n["width"], n["height"]) for n in view.nodes] == [
        (box.x, box.y, box.width, NODE_H) for box in layout.nodes
    ]
    assert view.view_box == [layout.left, layout.top, layout.width, layout.height]
    there = next(e for e in view.edges if e["source"] == "Concierge")
    route = layout.edges[view.edges.index(there)]
    assert there["label_at"] == list(route.label_at)
    (x0, y0), (cx, cy), (x1, y1) = route.points
    assert there["path"] == f"M {x0:.2f} {y0:.2f} Q {cx:.2f} {cy:.2f} {x1:.2f} {y1:.2f}"
    assert there["title"] == "transfer_to_billing: Concierge → Billing"
    assert view.colors["observed"] == "#d97706"

    unknown = AgentGraphView([Alice]).nodes[1]
    assert (unknown["id"], unknown["unknown"]) == (UNKNOWN, True)
    assert unknown["title"] == "a target not known until a handoff shows it"
    assert AgentGraphView([]).note == "no agents yet"


def test_agents_a_runner_or_a_trace_and_nothing_else() -> None:
    assert node_ids(AgentGraphView(Billing)) == ["Billing", "Concierge"]  # one needs no list
    with pytest.raises(TypeError, match="Agent instances or subclasses"):
        AgentGraphView(["Concierge"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="trace= only with agents"):
        AgentGraphView(Trace(), trace=Trace())


def test_a_loaded_trace_with_no_runner_lights_its_current_agent(tmp_path: Path) -> None:
    events: list[tuple[str, str | None, dict[str, Any]]] = [
        ("handoff", "Concierge", {"from": None, "to": "Concierge"}),
        ("tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c1"}),
        ("handoff", "Billing", {"from": "Concierge", "to": "Billing"}),
        ("agent_state", "Billing", {"old": "listening", "new": "speaking"}),
    ]
    view = AgentGraphView(Trace.load(saved_trace(tmp_path / "trace.jsonl", events)))
    assert (node_ids(view), view.current) == (["Concierge", "Billing"], "Billing")
    assert edge_set(view) == {("Concierge", "Billing", "transfer_to_billing", True)}

    # handoffs that name their agents' classes: the code is read too, as with agents given
    events[0][2]["to_class"] = class_path(Concierge)
    events[2][2]["to_class"] = class_path(Billing)
    view = AgentGraphView(Trace.load(saved_trace(tmp_path / "classes.jsonl", events)))
    assert (node_ids(view), view.current) == (["Concierge", "Billing"], "Billing")
    assert edge_set(view) == edge_set(AgentGraphView([Concierge]))


def test_a_closed_session_lights_no_agent(tmp_path: Path) -> None:
    events: list[tuple[str, str | None, dict[str, Any]]] = [
        ("handoff", "Concierge", {"from": None, "to": "Concierge"}),
        ("handoff", "Billing", {"from": "Concierge", "to": "Billing"}),
        ("closed", None, {"reason": "user_initiated"}),
    ]
    view = AgentGraphView(Trace.load(saved_trace(tmp_path / "trace.jsonl", events)))
    assert (node_ids(view), view.current) == (["Concierge", "Billing"], "")
    boxes = [p for p in view.to_figure().axes[0].patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == 2
    assert all(box.get_facecolor() != to_rgba(GRAPH_COLORS["current"]) for box in boxes)


# -- the static figure and the layout -----------------------------------------------------------


def test_to_figure_of_an_empty_and_a_full_graph() -> None:
    empty = AgentGraphView([]).to_figure()
    assert isinstance(empty, Figure)
    assert [t.get_text() for t in empty.axes[0].texts] == ["no agents yet"]

    view = AgentGraphView([Support])
    view.current = "Billing"
    figure = view.to_figure()
    assert isinstance(figure, Figure)
    texts = {t.get_text(): t.get_position() for t in figure.axes[0].texts}
    assert {"Support", "Manager", "Billing", "Concierge", "route", "escalate"} <= set(texts)
    boxes = [p for p in figure.axes[0].patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == 4
    lit = [box for box in boxes if box.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(lit) == 1  # the current agent only
    # drawn where the browser draws: the layout the view sent
    for node in view.nodes:
        assert texts[node["id"]] == (node["x"], node["y"])
    for edge in view.edges:
        if edge["tool"] in ("escalate", "transfer_to_billing"):  # tool names drawn once
            assert texts[edge["tool"]] == tuple(edge["label_at"])


def test_layout_columns_by_depth_and_parallel_edges_apart() -> None:
    graph = HandoffGraph([Support])
    layout = graph_layout(graph.nodes, graph.edges)
    depth = {box.id: box.depth for box in layout.nodes}
    assert depth == {"Support": 0, "Manager": 1, "Billing": 1, "Concierge": 2}
    x = {box.id: box.x for box in layout.nodes}
    assert x["Support"] < x["Billing"] < x["Concierge"]
    routes = {(r.edge.source, r.edge.target, r.edge.tool): r for r in layout.edges}
    # Billing <-> Concierge both ways: their curves bulge to opposite sides
    there = routes[("Concierge", "Billing", "transfer_to_billing")].label_at
    back = routes[("Billing", "Concierge", "transfer_to_concierge")].label_at
    assert abs(there[1] - back[1]) > 30
    # three edges Support -> Manager: three distinct curves
    tools = ("escalate", "route", "hand_over")
    assert len({routes[("Support", "Manager", tool)].label_at for tool in tools}) == 3
    # a loop is a cubic curve over its node
    (loop,) = [r for r in graph_layout(*_nodes_edges([Echo])).edges if r.edge.tool == "start_over"]
    assert len(loop.points) == 4 and loop.label_at[1] < layout.nodes[0].y


def _nodes_edges(agents: list[type[Agent]]) -> tuple[list[str], list[Any]]:
    graph = HandoffGraph(agents)
    return graph.nodes, graph.edges


def test_front_end_assets_are_found() -> None:
    module = (widgets_dir() / "graph_view.js").read_text()
    assert module.strip().endswith("export default { render };")
    assert "/* AgentGraphView */" in (widgets_dir() / "views.css").read_text()
    assert AgentGraphView._esm and "na-graph" in str(AgentGraphView._css)


# -- live, from a NotebookRunner ----------------------------------------------------------------


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


def handoffs(view: AgentGraphView) -> set[tuple[str, str, str]]:
    return {(e["source"], e["target"], e["tool"]) for e in view.edges}


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
    # the first agent's class, from the trace, brings the graph its code describes
    assert node_ids(view) == ["Concierge", "Billing"]
    assert handoffs(view) == {
        ("Concierge", "Billing", "transfer_to_billing"),
        ("Billing", "Concierge", "transfer_to_concierge"),
    }

    await runner.send_text("please transfer to billing")
    await until(view, lambda: view.current == "Billing")
    assert ("Concierge", "Billing", "transfer_to_billing") in handoffs(view)

    # a view made after the fact replays the trace: the same graph, the same current agent
    late = AgentGraphView(runner)
    assert (node_ids(late), edge_set(late), late.current) == (
        node_ids(view),
        edge_set(view),
        "Billing",
    )
    late.close()

    # the call is over: no agent is on it any more
    runner.stop()
    await until(view, lambda: view.current == "")
    view.close()


async def test_live_handoff_resolves_an_unknown_target(
    emulator: Emulator, runners: list[NotebookRunner]
) -> None:
    runner = await started(runners, NotebookRunner(agent_server(emulator, lambda: Alice(Bob()))))
    view = AgentGraphView([Alice], trace=runner.trace)
    assert node_ids(view) == ["Alice", UNKNOWN]
    await until(view, lambda: view.current == "Alice")

    await runner.send_text("please transfer to bob")
    await until(view, lambda: view.current == "Bob")
    # the "?" edge now leads to Bob, marked as seen live
    assert node_ids(view) == ["Alice", "Bob"]
    assert ("Alice", "Bob", "transfer_to_bob", True) in edge_set(view)
    view.close()
