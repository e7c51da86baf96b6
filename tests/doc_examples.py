"""The documentation's code examples, as the tests that run them read them: a page's ```python
blocks, run as a notebook cell runs one (top-level ``await`` allowed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def python_blocks(page: Path) -> list[str]:
    """Every ```python block of ``page``, in order."""
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(), re.S | re.M)


def python_block(page: Path, containing: str) -> str:
    """``page``'s one ```python block that contains ``containing``."""
    found = [block for block in python_blocks(page) if containing in block]
    assert len(found) == 1, f"{len(found)} python blocks of {page.name} hold {containing!r}"
    return found[0]


async def run(block: str, namespace: dict[str, Any], page: Path) -> None:
    """Run ``block`` as a notebook cell does: top-level ``await`` allowed."""
    code = compile(block, str(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if (pending := eval(code, namespace)) is not None:
        await pending
