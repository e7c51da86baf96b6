"""Agents as an app would write them, with handoff tools of every shape the graph reads:
shared by the tests of notebook_agents.agent_graph and of AgentGraphView."""

from __future__ import annotations

from typing import TYPE_CHECKING

from livekit.agents import Agent, function_tool

if TYPE_CHECKING:
    from decimal import Decimal


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


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="Front desk.", id="reception")
