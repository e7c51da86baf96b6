"""The ``notebook-agents`` command: each subcommand's --help names every option's default."""

from __future__ import annotations

import re

import pytest

from notebook_agents.__main__ import main

EXPECTED = {
    "emulator": {"--port": "0", "--rtt-ms": "0.0", "--connect-rtts": "3.0", "--fault": "none"},
    "bench": {"--rtt": "0,20,100", "--trials": "20", "--history": "10", "--level": "agent"},
    "export": {"--format": "otlp"},
}
"""a few defaults each subcommand must show, as the API has them"""


def options_help(command: str, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """``notebook-agents COMMAND --help`` as {option: its help text on one line}."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    listing = capsys.readouterr().out.split("options:\n", 1)[1]
    entries = re.split(r"\n  (?=-)", "\n" + listing)[1:]
    return {entry.split()[0].rstrip(","): " ".join(entry.split()) for entry in entries}


@pytest.mark.parametrize("command", list(EXPECTED))
def test_help_shows_every_options_default(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    shown = options_help(command, capsys)
    assert set(EXPECTED[command]) <= set(shown)
    for option, text in shown.items():
        if option != "-h":
            assert "(default: " in text, f"{command} {option} does not say its default: {text}"
    for option, default in EXPECTED[command].items():
        assert shown[option].endswith(f"(default: {default})"), shown[option]
