"""The latency model's parameters, ground truth and ordered delayed delivery."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from notebook_agents.analysis.network_truth import openai_ground_truth
from notebook_agents.emulator import Faults, LatencyModel, ParameterError
from notebook_agents.emulator.latency import DelayedPipe, query_to_str


def test_query_overrides_server_defaults() -> None:
    base = LatencyModel(rtt_ms=10, token_ms=5)
    lat = LatencyModel.from_query({"rtt_ms": "40", "model": "gpt-realtime"}, base)
    assert (lat.rtt_ms, lat.token_ms, lat.connect_rtts) == (40, 5, 3)
    assert lat.as_query() == {"rtt_ms": 40, "token_ms": 5}
    assert query_to_str(lat.as_query()) == "rtt_ms=40&token_ms=5"


@pytest.mark.parametrize("raw", ["fast", "-1", "nan"])
def test_bad_latency_values_name_the_parameter(raw: str) -> None:
    with pytest.raises(ParameterError, match="rtt_ms"):
        LatencyModel.from_query({"rtt_ms": raw})


@pytest.mark.parametrize("raw", ["inf", "1e12", "-5", "-inf", "60001"])
def test_delays_outside_the_allowed_range_name_it(raw: str) -> None:
    with pytest.raises(ParameterError, match=rf"rtt_ms={raw} must be between 0 and 60000 ms"):
        LatencyModel.from_query({"rtt_ms": raw})
    with pytest.raises(ParameterError, match=r"ack_delay_ms=.* must be between 0 and 60000 ms"):
        Faults.from_query({"ack_delay_ms": raw})


def test_the_allowed_range_includes_its_ends() -> None:
    assert LatencyModel.from_query({"token_ms": "60000", "rtt_ms": "0"}).token_ms == 60000
    assert LatencyModel(connect_rtts=10).connect_rtts == 10


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LatencyModel(rtt_ms=float("inf")), "rtt_ms=inf must be between 0 and 60000 ms"),
        (lambda: LatencyModel(token_ms=-1), "token_ms=-1 must be between 0 and 60000 ms"),
        (lambda: LatencyModel(connect_rtts=1e12), "connect_rtts=1e\\+12 must be between 0 and 10"),
        (lambda: Faults(ack_delay_ms=1e12), "ack_delay_ms=1e\\+12 must be between 0 and 60000 ms"),
        (lambda: Faults(drop_after=-1), "drop_after=-1 must be"),
    ],
)
def test_models_built_in_python_are_checked_as_the_query_is(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        make()


def test_ground_truth_adds_up() -> None:
    lat = LatencyModel(
        rtt_ms=20, connect_rtts=3, item_ms=1, created_ms=5, first_token_ms=50, token_ms=10
    )
    assert lat.connect_s() == pytest.approx(0.060)
    assert lat.item_ack_s(items=4) == pytest.approx(0.024)
    assert lat.response_created_s() == pytest.approx(0.025)
    assert lat.first_token_s() == pytest.approx(0.075)
    assert lat.response_s(tokens=6) == pytest.approx(0.125)
    assert lat.http_first_byte_s(new_connection=True) == pytest.approx(0.135)
    assert lat.http_first_byte_s(new_connection=False) == pytest.approx(0.075)


def test_faults_from_query() -> None:
    faults = Faults.from_query(
        {"drop_after": "3", "fail_responses": "1", "error_on": "response.create"}
    )
    assert faults == Faults(drop_after=3, fail_responses=True, error_on="response.create")
    with pytest.raises(ParameterError, match="fail_responses"):
        Faults.from_query({"fail_responses": "maybe"})
    with pytest.raises(ParameterError, match="error_on"):
        Faults.from_query({"error_on": ""})


async def test_delayed_pipe_keeps_order_and_overlaps_items_in_flight() -> None:
    delivered: list[int] = []
    all_in = asyncio.Event()

    async def deliver(item: int) -> None:
        delivered.append(item)
        if len(delivered) == 20:
            all_in.set()

    loop = asyncio.get_running_loop()
    pipe = DelayedPipe(0.05, deliver)
    runner = asyncio.create_task(pipe.run())
    started = loop.time()
    for i in range(20):
        pipe.put(i)
    await all_in.wait()
    elapsed = loop.time() - started
    runner.cancel()
    assert delivered == list(range(20))
    # pipelined: twenty items in flight together cost one delay, not twenty
    assert 0.05 <= elapsed < 20 * 0.05


@pytest.mark.parametrize(
    ("level", "session", "context", "handoff", "reply"),
    [
        # in (RTTs, items acked, created_ms) for R = 20, i = 1, cr = 5, c = 3, H = 2
        ("agent", "reused", "copied", (2, 1, 0), (3, 1, 1)),
        ("agent", "reused", "empty", (2, 1, 0), (3, 1, 1)),
        ("agent", "fresh", "copied", (5, 6, 0), (6, 6, 1)),
        ("agent", "fresh", "empty", (1, 1, 0), (5, 1, 1)),
        ("session", "reused", "copied", (0, 0, 0), (2, 1, 1)),
        ("session", "reused", "empty", (1, 0, 0), (3, 1, 1)),
        ("session", "fresh", "copied", (4, 4, 0), (6, 5, 1)),
        ("session", "fresh", "empty", (0, 0, 0), (5, 1, 1)),
    ],
)
def test_ground_truth_per_mode(
    level: str,
    session: str,
    context: str,
    handoff: tuple[int, int, int],
    reply: tuple[int, int, int],
) -> None:
    lat = LatencyModel(rtt_ms=20, connect_rtts=3, item_ms=1, created_ms=5)

    def ms(rtts: int, items: int, created: int) -> float:
        return rtts * 20 + items * 1 + created * 5

    truth = openai_ground_truth(level, session, context, 2, lat)
    assert truth is not None
    assert truth[0] == pytest.approx(ms(*handoff)) and truth[1] == pytest.approx(ms(*reply))
    cascaded = openai_ground_truth("cascaded", "none", "copied", 2, lat)
    assert cascaded is not None and cascaded[1] == pytest.approx(25.0)


def test_the_old_truth_modules_still_answer_and_say_what_to_use_instead() -> None:
    """``bench.truth`` and ``bench.gemini_truth`` became one provider-keyed
    ``analysis.network_truth``: their names still answer for one release, each warning."""
    from notebook_agents.analysis import network_truth
    from notebook_agents.bench import gemini_truth, truth

    with pytest.warns(DeprecationWarning, match=r"network_truth\.openai_ground_truth"):
        assert truth.ground_truth is network_truth.openai_ground_truth
    with pytest.warns(DeprecationWarning, match=r"network_truth\.gemini_ground_truth"):
        assert gemini_truth.gemini_ground_truth is network_truth.GROUND_TRUTHS["gemini"]
