"""Where livekit's chat context and one side of the model's last agreed: compare what came since.

A turn adds a few items to a conversation that may hold hundreds, and the trace compares
after every turn; comparing all of them made each turn's check grow with the conversation.
After a comparison found both sides alike, their lists then are kept (the lists, not copies
of the items). If both still begin with them, the sides agree now exactly when what each
gained since agrees and livekit's items the model did not hold then (instructions, an empty
message) still are neither held nor to be sent. Anything else (an item edited, removed or
moved before the end, a handoff's new context) is for a full comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from livekit.agents import llm

from .describe import sent_to_model

T = TypeVar("T")


class Agreement(Generic[T]):
    """The last agreement of livekit's items with one side's (``T``: the side's items, whose
    ids ``ids_of`` gives: the plugin's ``ChatItem``s, the server's ids). Ids never change."""

    def __init__(self, ids_of: Callable[[Sequence[T]], list[str]]) -> None:
        self._ids_of = ids_of
        # copies of the lists (a caller's list may change after): None, nothing to build on
        self._ours: list[llm.ChatItem] | None = None
        self._theirs: list[T] = []
        self._held: set[str] = set()
        self._unsent: list[llm.ChatItem] = []  # livekit's items the model did not hold
        self.alike = 0
        """how many items both held at the last agreement"""

    def holds(self, ours: Sequence[llm.ChatItem], theirs: Sequence[T]) -> bool:
        """True if the sides agree now, told from what each gained since they last agreed
        (remembered as the new agreement); False if they may not: compare them in full."""
        if self._ours is None:
            return False
        our_new, their_new = past(ours, self._ours), past(theirs, self._theirs)
        if our_new is None or their_new is None:
            return False
        gained = self._ids_of(their_new)
        held, new = self._held, set(gained)
        if any(item.id in new or sent_to_model(item) for item in self._unsent):
            return False  # held now, or livekit would send it now: not as it was
        added, unsent = [], []
        for item in our_new:
            if item.id in held:
                return False  # livekit holds an id twice: the full comparison says how
            if item.id in new or sent_to_model(item):
                added.append(item.id)
            else:
                unsent.append(item)
        if added != gained:
            return False
        self._ours, self._theirs = list(ours), list(theirs)
        held.update(new)
        self._unsent += unsent
        self.alike += len(added)
        return True

    def agreed(self, ours: Sequence[llm.ChatItem], theirs: Sequence[T]) -> None:
        """A full comparison found the sides alike: build on it."""
        their_ids = self._ids_of(theirs)
        self._ours, self._theirs, self._held = list(ours), list(theirs), set(their_ids)
        self._unsent = [item for item in ours if item.id not in self._held]
        self.alike = len(their_ids)

    def forget(self) -> None:
        """The sides parted: the next comparison is a full one."""
        self._ours = None


def past(now: Sequence[T], before: Sequence[T]) -> Sequence[T] | None:
    """What ``now`` holds past ``before``, if it still begins with it (None if not). Items
    are compared by identity first (list equality), then by value: an item equal in every
    field is the same item here."""
    if now[: len(before)] != before:
        return None
    return now[len(before) :]
