"""YAML read as data within bounds, so any file is read or refused at its line in bounded time
and memory.

PyYAML's ``safe_load`` guards against running code, not against size: its composer recurses
once per nesting level (a few thousand ``[`` exhaust the stack), and an alias is the anchored
node itself, shared, so a "billion laughs" file of a few hundred bytes is a small graph that
grows exponentially the moment anything walks it as the tree it means (our line map, livekit's
userdata JSON). It also keeps the last of two equal keys without a word. The Go YAML package
that ``lk agent simulate`` reads scenarios.yaml with (gopkg.in/yaml.v3) refuses all three: a
duplicate key ("mapping key already defined at line N"), nesting past 10000 levels, and
"excessive aliasing" (decode.go ``allowedAliasRatio``); it accepts aliases that share a
little, so this does too: a file lk reads is read here, within bounds Python can afford.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent

from ..errors import NotebookAgentsError

MAX_DEPTH = 64
"""nesting levels: a scenarios file uses six (suite, scenarios, scenario, turns, turn,
expect); userdata may nest, not this far"""
ALIAS_NODES = 10_000
ALIAS_CHARACTERS = 1_000_000
"""what every alias in a file may repeat in all, as the tree the file means: one userdata for
several scenarios fits many times over; a billion laughs is refused at its fourth level"""
_MERGE = "tag:yaml.org,2002:merge"


class YamlRefusal(NotebookAgentsError, ValueError):
    """A file refused at ``line`` (1-based), before anything was built from it (the scenarios
    file's reader says which file: ``SuiteFileError``)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(line, message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class _Extent:
    """A node as the tree it means: its nodes, its text's characters and its depth."""

    nodes: int
    characters: int
    depth: int


class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no annotations
    """PyYAML's safe loader, refusing what passes the bounds above, and duplicate keys,
    where it meets them."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0
        self._extents: dict[int, _Extent] = {}
        self._repeated_nodes = 0
        self._repeated_characters = 0
        self.first_keys: dict[int, int] = {}
        """where each mapping node's first key starts in the text, by the node's id: PyYAML
        puts a ``<<`` merge's pairs first when it builds the data"""

    def fetch_flow_collection_start(self, token_class: type) -> None:
        # PyYAML's scanner reads ahead past every `[`/`{` a line opens (each may start a key)
        # before the composer sees the first: refused here, such a line costs 64 levels' scan
        if self.flow_level == MAX_DEPTH:
            raise YamlRefusal(self.get_mark().line + 1, _too_deep())
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            anchored = self.anchors.get(event.anchor)
            if anchored is not None:  # else PyYAML's own "undefined alias" error
                self._repeat(event, anchored)
            return super().compose_node(parent, index)
        if not isinstance(event, MappingStartEvent | SequenceStartEvent):
            return super().compose_node(parent, index)
        if self._depth == MAX_DEPTH:
            raise YamlRefusal(event.start_mark.line + 1, _too_deep())
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: str | None) -> yaml.MappingNode:
        node: yaml.MappingNode = super().compose_mapping_node(anchor)
        if node.value:
            self.first_keys[id(node)] = node.value[0][0].start_mark.index
        first: dict[str, yaml.Node] = {}
        for key, _ in node.value:
            # `<<` merges may repeat a key: the mapping's own wins (YAML's merge key type)
            if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
                continue
            seen = first.setdefault(key.value, key)
            if seen is not key:
                raise YamlRefusal(
                    key.start_mark.line + 1,
                    f"the key `{key.value}` is given twice in one mapping (first on line "
                    f"{seen.start_mark.line + 1}): YAML would keep only the last; remove one",
                )
        return node

    def _repeat(self, alias: AliasEvent, anchored: yaml.Node) -> None:
        """Count what ``alias`` repeats of its anchored node; refuse it past the bounds."""
        if anchored.end_mark is None:  # PyYAML ends a collection's node when it closes
            raise YamlRefusal(
                alias.start_mark.line + 1,
                f"the alias *{alias.anchor} is inside the anchor &{alias.anchor} it names (a "
                "value that holds itself): write the value out",
            )
        extent = self._extent(anchored)
        if self._depth + extent.depth > MAX_DEPTH:
            raise YamlRefusal(alias.start_mark.line + 1, _too_deep())
        self._repeated_nodes += extent.nodes
        self._repeated_characters += extent.characters
        if self._repeated_nodes > ALIAS_NODES or self._repeated_characters > ALIAS_CHARACTERS:
            raise YamlRefusal(
                alias.start_mark.line + 1,
                f"the alias *{alias.anchor} would repeat more than {ALIAS_NODES} nodes or "
                f"{ALIAS_CHARACTERS} characters of the file in all: aliases may share a "
                "little (one userdata for several scenarios), not multiply the file; write "
                "the values out",
            )

    def _extent(self, node: yaml.Node) -> _Extent:
        """``node`` as a tree; remembered per node, so a graph of shared nodes costs its
        size, not its expansion's. Recursion is bounded: every node is within MAX_DEPTH."""
        known = self._extents.get(id(node))
        if known is not None:
            return known
        if isinstance(node, yaml.ScalarNode):
            extent = _Extent(1, len(node.value), 0)
        else:
            children = (
                [part for pair in node.value for part in pair]
                if isinstance(node, yaml.MappingNode)
                else node.value
            )
            parts = [self._extent(child) for child in children]
            extent = _Extent(
                1 + sum(part.nodes for part in parts),
                sum(part.characters for part in parts),
                1 + max((part.depth for part in parts), default=0),
            )
        self._extents[id(node)] = extent
        return extent


def _too_deep() -> str:
    return (
        f"nested more than {MAX_DEPTH} levels deep: a scenarios file needs a few (userdata "
        "may nest, not this far); flatten it"
    )
