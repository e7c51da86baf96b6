"""The runner's figures, measured inside a real, fresh ipykernel.

``start()`` return time, the first reply (``start()`` -> reply text) in a fresh kernel and
warm, ``stop()`` time; medians over ``--cycles`` warm cycles against the emulator at RTT 0.

    .venv/bin/python benchmarks/runner_figures.py --cycles 20
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from jupyter_client.manager import start_new_kernel

SETUP = """
import time
from livekit.agents import Agent, AgentServer, AgentSession, JobContext
from livekit.plugins import openai
from notebook_agents import Emulator, NotebookRunner

emulator = Emulator().start()
server = AgentServer()

@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="bench")
    session = AgentSession(llm=model)
    await session.start(agent=Agent(instructions="You are Ada."), room=ctx.room)

async def cycle():
    started = time.perf_counter()
    runner = NotebookRunner(server).start()
    start_s = time.perf_counter() - started
    await runner.ready()
    await runner.send_text("hello")
    first_reply_s = time.perf_counter() - started
    stopping = time.perf_counter()
    runner.stop()
    return {"start": start_s, "first_reply": first_reply_s, "stop": time.perf_counter() - stopping}
"""


def run_cell(client: Any, code: str) -> Any:
    """Execute ``code`` and return the JSON its last line prints."""
    collect = _Collector()
    reply = client.execute_interactive(code, timeout=120, output_hook=collect)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"cell failed: {reply['content'].get('evalue')}")
    return json.loads(collect.text) if collect.text else None


class _Collector:
    def __init__(self) -> None:
        self.text = ""

    def __call__(self, msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            self.text += msg["content"]["text"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    args = parser.parse_args()

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        run_cell(client, SETUP)
        fresh = run_cell(client, "import json; print(json.dumps(await cycle()))")
        warm = [run_cell(client, "print(json.dumps(await cycle()))") for _ in range(args.cycles)]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

    print(
        f"fresh kernel: start {fresh['start'] * 1e3:.2f} ms, first reply "
        f"{fresh['first_reply'] * 1e3:.1f} ms, stop {fresh['stop'] * 1e3:.1f} ms"
    )
    for name in ("start", "first_reply", "stop"):
        values = [w[name] * 1e3 for w in warm]
        print(
            f"warm {name:<12} median {statistics.median(values):8.2f} ms "
            f"(min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"
        )


if __name__ == "__main__":
    main()
