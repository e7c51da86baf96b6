"""notebook_agents.agent_graph: handoffs read from agents' code, completed by a trace's events."""

from __future__ import annotations

from typing import Any

from livekit.agents import Agent, llm

from notebook_agents.agent_graph import (
    UNKNOWN,
    HandoffGraph,
    Tool,
    agent_class,
    class_path,
    handoff_targets,
)
from notebook_agents.trace import EventKind, TraceEvent

from .handoff_agents import (
    Alice,
    Billing,
    Bob,
    Concierge,
    FrontDesk,
    Manager,
    Refunds,
    Support,
    send_to_billing,
)


def tool(owner: type[Agent], name: str) -> Tool:
    return next(t for t in llm.find_function_tools(owner) if t.info.name == name)


def edge_set(graph: HandoffGraph) -> set[tuple[str, str, str, bool]]:
    return {(e.source, e.target, e.tool, e.observed) for e in graph.edges}


def events(*specs: tuple[EventKind, str | None, dict[str, Any]]) -> list[TraceEvent]:
    return [TraceEvent(i, i / 10, kind, agent, data) for i, (kind, agent, data) in enumerate(specs)]


# -- one tool's targets -------------------------------------------------------------------------


def test_handoff_targets_of_each_kind_of_tool() -> None:
    # the body, under a bare `-> Agent`; the annotation, through a tuple, Optional, a union
    assert handoff_targets(tool(Concierge, "transfer_to_billing"), Concierge) == [Billing]
    assert handoff_targets(tool(Billing, "transfer_to_concierge"), Billing) == [Concierge]
    assert handoff_targets(tool(Support, "escalate"), Support) == [Manager]
    assert handoff_targets(tool(Support, "route"), Support) == [Billing, Manager]
    # unannotated: a handoff only if the body visibly builds an agent
    assert handoff_targets(tool(Support, "hand_over"), Support) == [Manager]
    assert handoff_targets(tool(Support, "opening_hours"), Support) == []
    assert handoff_targets(tool(Billing, "lookup_invoice"), Billing) == []
    # a parameter annotation that does not evaluate, and a factory with its own annotation
    assert handoff_targets(tool(Refunds, "refund"), Refunds) == [Billing]
    assert handoff_targets(tool(Refunds, "to_manager"), Refunds) == [Manager]
    # annotated as a handoff, but where to cannot be read: None, never dropped
    assert handoff_targets(tool(Alice, "transfer_to_bob"), Alice) == [None]
    assert handoff_targets(send_to_billing, Agent) == [Billing]


# -- the graph from code ------------------------------------------------------------------------


def test_the_graph_follows_handoffs_breadth_first_and_each_agent_once() -> None:
    graph = HandoffGraph([Support])
    assert graph.nodes == ["Support", "Manager", "Billing", "Concierge"]
    assert edge_set(graph) == {
        ("Support", "Manager", "escalate", False),
        ("Support", "Manager", "hand_over", False),
        ("Support", "Billing", "route", False),
        ("Support", "Manager", "route", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
        ("Concierge", "Billing", "transfer_to_billing", False),
    }
    assert graph.current == ""


def test_an_unreadable_target_is_the_unknown_node() -> None:
    graph = HandoffGraph([Alice])
    assert graph.nodes == ["Alice", UNKNOWN]
    assert edge_set(graph) == {("Alice", UNKNOWN, "transfer_to_bob", False)}


def test_instances_are_nodes_by_their_label_with_their_constructor_tools() -> None:
    plain = Agent(instructions="No class of its own.", tools=[send_to_billing])
    graph = HandoffGraph([plain, FrontDesk(), Concierge()])
    assert graph.nodes == ["Agent", "reception", "Concierge", "Billing"]
    assert ("Agent", "Billing", "send_to_billing", False) in edge_set(graph)


# -- completed by a trace -----------------------------------------------------------------------


def test_handoffs_move_current_and_add_what_the_code_missed() -> None:
    graph = HandoffGraph([Concierge])
    changed = [
        graph.apply(event)
        for event in events(
            ("handoff", "Concierge", {"from": None, "to": "Concierge"}),
            ("tool_call", "Concierge", {"name": "transfer_to_billing", "call_id": "c1"}),
            ("handoff", "Billing", {"from": "Concierge", "to": "Billing"}),
            ("agent_state", "Billing", {"old": "listening", "new": "thinking"}),
            ("tool_call", "Billing", {"name": "call_security", "call_id": "c2"}),
            ("handoff", "Security", {"from": "Billing", "to": "Security"}),
            # a handoff no tool made (session.update_agent): no tool name to guess
            ("handoff", "Concierge", {"from": "Security", "to": "Concierge"}),
        )
    ]
    assert changed == [True, False, True, False, False, True, True]
    assert graph.current == "Concierge"
    assert graph.nodes == ["Concierge", "Billing", "Security"]
    assert edge_set(graph) == {
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
        ("Billing", "Security", "call_security", True),
        ("Security", "Concierge", "", True),
    }


def test_a_handoff_resolves_the_unknown_target_of_its_tool() -> None:
    graph = HandoffGraph([Alice])
    for event in events(
        ("handoff", "Alice", {"from": None, "to": "Alice"}),
        ("tool_call", "Alice", {"name": "transfer_to_bob", "call_id": "c1"}),
        ("handoff", "Bob", {"from": "Alice", "to": "Bob"}),
    ):
        graph.apply(event)
    assert (graph.nodes, graph.current) == (["Alice", "Bob"], "Bob")
    assert edge_set(graph) == {("Alice", "Bob", "transfer_to_bob", True)}


def test_the_class_a_handoff_names_is_read_as_code() -> None:
    """No agents given: a trace alone (live or loaded) whose handoffs name their agents'
    classes draws the graph from their code, each agent under the label the trace gives it."""
    graph = HandoffGraph()
    for event in events(
        ("handoff", "desk", {"from": None, "to": "desk", "to_class": class_path(Concierge)}),
        ("handoff", "Alice", {"from": "desk", "to": "Alice", "to_class": class_path(Alice)}),
        ("tool_call", "Alice", {"name": "transfer_to_bob", "call_id": "c2"}),
        ("handoff", "Bob", {"from": "Alice", "to": "Bob", "to_class": class_path(Bob())}),
    ):
        graph.apply(event)
    assert graph.nodes == ["desk", "Billing", "Concierge", "Alice", "Bob"]
    assert edge_set(graph) == {
        ("desk", "Billing", "transfer_to_billing", False),
        ("Billing", "Concierge", "transfer_to_concierge", False),
        ("Concierge", "Billing", "transfer_to_billing", False),
        ("desk", "Alice", "", True),
        ("Alice", "Bob", "transfer_to_bob", True),  # the "?" of Alice's code, resolved
        ("Bob", "Alice", "transfer_to_alice", False),  # Bob's code, read when he came
    }
    assert graph.current == "Bob"


def test_agent_class_finds_only_loaded_agent_classes() -> None:
    assert class_path(Concierge) == "tests.handoff_agents:Concierge"
    assert class_path(FrontDesk()) == "tests.handoff_agents:FrontDesk"
    assert agent_class(class_path(Concierge)) is Concierge

    class Local(Agent):
        pass

    assert "<locals>" in class_path(Local)
    unknown = [
        class_path(Local),  # local to a function: not reachable by name
        "no_module_of_that_name:Concierge",  # never imported to find it
        "tests.handoff_agents:NoSuchAgent",
        "builtins:int",  # not an agent
        "tests.handoff_agents:make_manager.__globals__",  # only through modules and classes
        "tests.handoff_agents",
        None,
        42,
    ]
    assert [agent_class(path) for path in unknown] == [None] * len(unknown)
