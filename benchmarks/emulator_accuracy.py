"""How closely the emulator's injected latency matches its own ground truth.

Drives the real LiveKit realtime plugin against an emulator in a separate process (as the
benchmark does) and reports, per RTT, the median measured cost of each exchange, the
truth ``LatencyModel`` says it must cost, and the excess.

    .venv/bin/python benchmarks/emulator_accuracy.py --rtt 0,20,100 --trials 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from livekit.plugins import openai

from notebook_agents.emulator import LatencyModel
from notebook_agents.emulator.process import emulator_process
from notebook_agents.emulator.server import base_url as emulator_base_url


async def _one_item(sess: openai.realtime.RealtimeSession) -> None:
    ctx = sess.chat_ctx.copy()
    ctx.add_message(role="user", content="hello")
    await sess.update_chat_ctx(ctx)


async def measure(root: str, latency: LatencyModel, trials: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"connect+item": [], "item": [], "created": []}
    for _ in range(trials):
        model = openai.realtime.RealtimeModel(
            base_url=emulator_base_url(
                root, rtt_ms=latency.rtt_ms, connect_rtts=latency.connect_rtts
            ),
            api_key="benchmark",
            modalities=["text"],
            turn_detection=None,
        )
        sess = model.session()
        try:
            started = time.perf_counter()
            await _one_item(sess)
            samples["connect+item"].append(time.perf_counter() - started)
            started = time.perf_counter()
            await _one_item(sess)
            samples["item"].append(time.perf_counter() - started)
            started = time.perf_counter()
            gen = await sess.generate_reply()
            samples["created"].append(time.perf_counter() - started)
            async for message in gen.message_stream:
                async for _ in message.text_stream:
                    pass
        finally:
            await sess.aclose()
            await model.aclose()
    return samples


def truth(latency: LatencyModel) -> dict[str, float]:
    return {
        "connect+item": latency.connect_s() + latency.item_ack_s(),
        "item": latency.item_ack_s(),
        "created": latency.response_created_s(),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt", default="0,20,100", help="comma-separated RTTs in ms")
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()

    async with emulator_process() as root:
        print(f"{'rtt ms':>6} {'exchange':>13} {'median ms':>10} {'truth ms':>9} {'excess ms':>10}")
        for rtt in (float(r) for r in args.rtt.split(",")):
            latency = LatencyModel(rtt_ms=rtt)
            await measure(root, latency, 2)  # warm-up, discarded
            samples = await measure(root, latency, args.trials)
            for name, expected in truth(latency).items():
                median = statistics.median(samples[name])
                print(
                    f"{rtt:>6.0f} {name:>13} {median * 1000:>10.2f} {expected * 1000:>9.2f} "
                    f"{(median - expected) * 1000:>10.2f}"
                )


if __name__ == "__main__":
    asyncio.run(main())
