"""ContextTable: each agent's chat context side by side, as text and as HTML."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_agents.trace import Trace
from notebook_agents.views import ContextTable
from tests.conftest import MakeModel
from tests.views.test_timeline_view import AGAIN, ANSWER, HELLO, HI, OUTPUT, converse, parted_trace


async def test_at_shows_each_agents_context_at_a_moment(models: MakeModel) -> None:
    trace = Trace()
    await converse(models, trace)
    handoff = next(e for e in trace.of_kind("handoff") if e.data["from"] == "Alice")

    table = ContextTable.at(trace, handoff.t)
    assert list(table.columns) == ["Alice", "Bob"]
    alice, bob = table.lines("Alice"), table.lines("Bob")
    assert "call transfer_to_bob: {}" in alice  # Alice's own pending handoff call...
    assert not any(line.startswith("call transfer_to_bob") for line in bob)  # ...not in the copy
    # the copy: Alice's messages so far (her tools' items are hers), before her on_exit goodbye
    alice_messages = [line for line in alice if not line.startswith(("call ", "output "))]
    assert bob and bob == alice_messages[: len(bob)]
    assert alice_messages[len(bob) :] == ["assistant: Goodbye from Alice."]
    assert f"Bob ({len(bob)} items)" in repr(table)


def test_text_and_html_show_every_kind_of_item_escaped() -> None:
    table = ContextTable(
        {
            "copied": [
                {"type": "message", "role": "user", "text": "weather <in> Oslo?"},
                {"type": "function_call", "name": "get_weather", "text": '{"city": "Oslo"}'},
                {"type": "function_call_output", "name": "get_weather", "text": "sunny"},
                {"type": "message", "role": "assistant", "text": "It is sunny."},
            ],
            "empty": [],
        }
    )
    assert table.lines("copied") == [
        "user: weather <in> Oslo?",
        'call get_weather: {"city": "Oslo"}',
        "output get_weather: sunny",
        "assistant: It is sunny.",
    ]
    assert repr(table).endswith("empty (0 items)")
    html = table._repr_html_()
    assert "weather &lt;in&gt; Oslo?" in html and "<in>" not in html
    assert html.count("(empty)") == 1 and "(4 items)" in html
    assert repr(ContextTable({})) == "(no contexts)"


def test_compare_marks_each_item_against_the_first_column() -> None:
    table = ContextTable.compare(
        {
            "livekit": [HELLO, HI, AGAIN, ANSWER],
            "model": [HELLO, HI, ANSWER, OUTPUT, AGAIN],
            "server": [OUTPUT, AGAIN, HELLO, HI, ANSWER],
        }
    )
    assert table.lines("livekit") == [
        "user: Hello",
        "assistant: Hi",
        "user: Hello again",
        "assistant: How can I help you?",
    ]  # every column holds each of livekit's items: nothing is missing
    assert table.lines("model") == [
        "user: Hello",
        "assistant: Hi",
        "assistant: How can I help you?  <- out of order",
        "output ?:   <- only on this side",
        "user: Hello again",
    ]
    assert table.lines("server")[:3] == [
        "output ?:   <- only on this side",
        "user: Hello again  <- out of order",
        "user: Hello",
    ]
    assert ContextTable.compare({"livekit": [HELLO, AGAIN], "model": [HELLO]}).lines("livekit") == [
        "user: Hello",
        "user: Hello again  <- missing from the other side",
    ]
    html = table._repr_html_()
    assert html.count("dashed") == 4 and "(out of order)" in html


def test_livekit_and_model_replays_each_parting_from_a_loaded_trace(tmp_path: Path) -> None:
    trace = parted_trace(tmp_path)

    apart = ContextTable.livekit_and_model(trace, t=1.5)
    assert list(apart.columns) == ["Weather · livekit (1.20 s)", "Weather · model (1.20 s)"]
    assert apart.lines("Weather · model (1.20 s)")[2] == (
        "assistant: How can I help you?  <- out of order"
    )
    assert apart.lines("Weather · livekit (1.20 s)")[-1] == (
        "output ?:   <- missing from the other side"
    )
    together = ContextTable.livekit_and_model(trace, "Weather")  # the end: converged
    assert list(together.columns) == ["Weather · livekit", "Weather · model (the same)"]
    assert together.lines("Weather · livekit") == together.lines("Weather · model (the same)")
    assert len(together.lines("Weather · livekit")) == 4
    with pytest.raises(ValueError, match="name the agent"):
        ContextTable.livekit_and_model(trace, t=0.5)
