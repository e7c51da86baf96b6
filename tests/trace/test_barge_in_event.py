"""The trace's ``barge_in`` event: saved and loaded as written, and refused when its data is not
the schema's (the events of real barge-ins: tests/runner/test_runner_barge_in.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_agents._records import FieldError
from notebook_agents.trace import BargeInData, Trace, check_event_data

CUT: BargeInData = {
    "at": 0.5,
    "began": 4.83,
    "position": 0.502,
    "interrupted": True,
    "resumed": False,
    "stopped": 5.43,
    "stop_s": 0.6,
    "played_s": 1.13,
    "heard": "You are the Storyteller,",
    "text": "You are the Storyteller, and your stories are long ones.",
    "item_id": "item_1",
}


def test_a_barge_in_is_saved_and_loaded_as_recorded(tmp_path: Path) -> None:
    trace = Trace()
    trace.record_barge_in(CUT, "Storyteller")
    played_on: BargeInData = {**CUT, "interrupted": False, "stopped": None, "stop_s": None}
    trace.record_barge_in({**played_on, "text": None}, "Storyteller")

    loaded = Trace.load(trace.save(tmp_path / "run.jsonl"))
    assert [(e.kind, e.agent, e.data) for e in loaded.events] == [
        ("barge_in", "Storyteller", CUT),
        ("barge_in", "Storyteller", {**played_on, "text": None}),
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({**CUT, "stop_s": "0.6"}, "stop_s"),
        ({k: v for k, v in CUT.items() if k != "heard"}, "heard: missing"),
        ({**CUT, "cue": 0.5}, "cue: not a key"),
    ],
)
def test_barge_in_data_outside_the_schema_is_refused_naming_the_key(
    data: dict[str, object], problem: str
) -> None:
    with pytest.raises(FieldError) as refused:
        check_event_data("barge_in", data)
    assert str(refused.value).startswith(problem)
