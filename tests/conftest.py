"""Shared fixtures: an in-process emulator on 127.0.0.1 and a dummy API key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notebook_agents.emulator import Emulator

# Any non-empty key works against the emulator; tests never contact anything else.
API_KEY = "sk-test-not-a-secret"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu
