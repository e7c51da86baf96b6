"""Process environment variables set for a while (a bench trial, a VideoSDK job's start)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` in ``os.environ`` inside (code the user wrote reads them when it builds
    its models), then each back as it was."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
