"""A griffe extension for the reference pages (mkdocs.yml loads it into mkdocstrings): an
attribute whose value only repeats its own name shows no value. ``self.reply = reply`` in an
``__init__`` gives griffe the attribute ``reply`` with the value ``reply``, which rendered as
``reply = reply``: it says nothing, where a value that is not the name (a constant, a default)
still shows."""

from __future__ import annotations

from typing import Any

import griffe


class HideValuesRepeatingTheName(griffe.Extension):
    """Drop the value of each attribute whose value is its own name."""

    def on_attribute(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        if attr.value is not None and str(attr.value) == attr.name:
            attr.value = None
