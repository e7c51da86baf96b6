"""TimelineView with a long trace, in JupyterLab in headless chromium: does it stay responsive?

A 10,000-event trace (three agents, a handoff every 20 turns, tools, metrics) is loaded and
shown; then, in the browser: how long until it is drawn, how long a redraw takes when zooming
and panning (input to the next painted frame, and the draw itself), how long until a hover
shows its details. Last, the same number of events is recorded live on another thread, as
fast as the trace takes them, and we time how long until the browser has drawn them all.

    .venv/bin/python benchmarks/timeline_browser.py --events 10000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from notebook_agents.trace import TRACE_FORMAT, TraceEvent
from notebook_agents.views._timeline_layout import TimelineLayout
from tests.browser.lab import jupyter_lab, launch_chromium, open_notebook, write_notebook

AGENTS = ("Concierge", "Billing", "Support")


def synthetic_events(count: int) -> list[dict[str, Any]]:
    """The shape of real turns (see tests/trace/test_trace.py), repeated until ``count`` events."""
    events: list[dict[str, Any]] = []
    t = 0.0
    agent = AGENTS[0]

    def add(kind: str, data: dict[str, Any], dt: float = 0.05) -> None:
        nonlocal t
        t += dt
        if len(events) < count:
            events.append({"seq": len(events), "t": t, "kind": kind, "agent": agent, "data": data})

    add("handoff", {"from": None, "to": agent, "session": None, "context": None})
    turn = 0
    while len(events) < count:
        turn += 1
        add("user_state", {"old": "listening", "new": "speaking"}, 1.0)
        add("user_state", {"old": "speaking", "new": "listening"}, 0.8)
        add("user_message", {"text": f"turn {turn}: what is the weather?", "item_id": f"u{turn}"})
        add("agent_state", {"old": "listening", "new": "thinking"})
        if turn % 3 == 0:
            add("tool_call", {"name": "get_weather", "call_id": f"c{turn}", "arguments": "{}"})
            add("tool_output", {"name": "get_weather", "call_id": f"c{turn}", "output": "sunny",
                                "is_error": False})  # fmt: skip
        add("metrics", {"type": "realtime_model_metrics", "ttft": 0.2})
        add("agent_state", {"old": "thinking", "new": "speaking"}, 0.3)
        add("agent_message", {"text": f"It is sunny ({turn}).", "item_id": f"a{turn}",
                              "source": "generate_reply", "phase": "turn"}, 0.6)  # fmt: skip
        add("agent_state", {"old": "speaking", "new": "listening"})
        if turn % 20 == 0:
            new = AGENTS[(AGENTS.index(agent) + 1) % len(AGENTS)]
            data = {"from": agent, "to": new, "session": "reused", "context": "copied"}
            agent = new
            add("handoff", data)
            add("agent_message", {"text": f"{agent} here.", "item_id": f"e{turn}",
                                  "source": "say", "phase": "on_enter"})  # fmt: skip
    return events


def save_trace(path: Path, events: list[dict[str, Any]]) -> None:
    lines = [json.dumps({"format": TRACE_FORMAT, "started_at": time.time() - events[-1]["t"]})]
    path.write_text("\n".join(lines + [json.dumps(e) for e in events]) + "\n")


def cells(trace_path: Path, count: int) -> list[str]:
    return [
        """import json, threading
from notebook_agents.trace import Trace
from notebook_agents.views import TimelineView""",
        f"""loaded = TimelineView(Trace.load({str(trace_path)!r}))
loaded""",
        f"""lines = open({str(trace_path)!r}).readlines()[1:]
records = [json.loads(line) for line in lines][:{count}]
live_trace = Trace()
live = TimelineView(live_trace)
live""",
    ]


def run_cell_index(page: Page, index: int) -> None:
    page.evaluate(
        """async (index) => {
            const panel = jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = index;
            await jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def run_code(page: Page, code: str) -> None:
    page.evaluate(
        """async (code) => {
            const panel = jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = panel.content.widgets.length - 1;
            await jupyterapp.commands.execute('notebook:insert-cell-below');
            panel.content.activeCell.model.sharedModel.setSource(code);
            await jupyterapp.commands.execute('notebook:run-cell');
        }""",
        code,
    )


INTERACT = """async ([index, kind, steps]) => {
    const root = document.querySelectorAll('.na-timeline')[index];
    root.scrollIntoView();
    const svg = root.querySelector('svg.na-timeline-svg');
    // the view draws in its animation frame; a callback queued after it runs once it is drawn
    const frame = () => new Promise((r) => requestAnimationFrame(r));
    const box = svg.getBoundingClientRect();
    const at = { clientX: box.left + box.width * 0.7, clientY: box.top + 20, bubbles: true };
    const out = [];
    if (kind === 'pan') svg.dispatchEvent(new PointerEvent('pointerdown', { ...at, pointerId: 1 }));
    for (let i = 0; i < steps; i++) {
        const started = performance.now();
        if (kind === 'zoom') {
            const deltaY = i < steps / 2 ? -150 : 150;
            svg.dispatchEvent(new WheelEvent('wheel', { ...at, deltaY, cancelable: true }));
        } else {
            const clientX = at.clientX - (i + 1) * 15;
            svg.dispatchEvent(new PointerEvent('pointermove', { ...at, clientX, pointerId: 1 }));
        }
        await frame();
        out.push([performance.now() - started, Number(root.dataset.renderMs)]);
    }
    if (kind === 'pan') svg.dispatchEvent(new PointerEvent('pointerup', { ...at, pointerId: 1 }));
    return out;
}"""

HOVER = """async ([index, steps]) => {
    const root = document.querySelectorAll('.na-timeline')[index];
    const tooltip = root.querySelector('.na-tooltip');
    const out = [];
    for (let i = 0; i < steps; i++) {
        const marks = root.querySelectorAll('.na-mark');
        const mark = marks[Math.floor((i * marks.length) / steps)];
        const box = mark.getBoundingClientRect();
        tooltip.hidden = true;
        const started = performance.now();
        mark.dispatchEvent(new PointerEvent('pointermove', {
            clientX: box.left + 2, clientY: box.top + 2, bubbles: true }));
        await new Promise((r) => requestAnimationFrame(r));
        if (!tooltip.hidden) out.push(performance.now() - started);
    }
    return out;
}"""


def wait_for_count(page: Page, index: int, count: int) -> None:
    page.wait_for_function(
        """([index, count]) => {
            const root = document.querySelectorAll('.na-timeline')[index];
            return root && root.querySelector('.na-count').textContent === `${count} events`;
        }""",
        arg=[index, count],
        timeout=300_000,
        polling="raf",
    )


def summary(name: str, values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    median = statistics.median(values)
    return f"{name:<34} median {median:6.1f} ms   p95 {p95:6.1f} ms  (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    events = synthetic_events(args.events)
    # what the browser is sent, and counts: each event drawn, and the speech a user_state ends
    layout = TimelineLayout()
    drawn = sum(layout.add(TraceEvent(**e)) is not None for e in events)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        root, home = Path(tmp) / "root", Path(tmp) / "home"
        root.mkdir()
        save_trace(root / "long.jsonl", events)
        write_notebook(root / "long.ipynb", cells(root / "long.jsonl", args.events))
        browser = launch_chromium(playwright)
        with jupyter_lab(root, home) as base:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            open_notebook(page, base, "long.ipynb")
            print(f"trace: {len(events)} events, {drawn} sent to the browser")

            run_cell_index(page, 0)  # the imports, not timed
            started = time.perf_counter()
            run_cell_index(page, 1)
            wait_for_count(page, 0, drawn)
            shown = time.perf_counter() - started
            first_draw = page.evaluate("document.querySelector('.na-timeline').dataset.renderMs")
            print(f"{'load + show: cell run to drawn':<34} {shown * 1000:6.0f} ms")
            print(f"{'load + show: first full draw':<34} {first_draw} ms")

            zoom = page.evaluate(INTERACT, [0, "zoom", 40])
            print(summary("zoom: input to drawn", [z[0] for z in zoom]))
            print(summary("zoom: draw", [z[1] for z in zoom]))
            pan = page.evaluate(INTERACT, [0, "pan", 30])
            print(summary("pan: input to drawn", [p[0] for p in pan]))
            print(summary("pan: draw", [p[1] for p in pan]))
            page.locator(".na-timeline").first.locator(".na-fit").click()
            hover = page.evaluate(HOVER, [0, 30])
            print(summary("hover: pointer to tooltip shown", hover))

            run_cell_index(page, 2)
            page.wait_for_function("document.querySelectorAll('.na-timeline').length === 2")
            started = time.perf_counter()
            # recorded from another thread, as the job thread would (the trace's own entry point)
            run_code(
                page,
                "def feed():\n"
                "    for r in records:\n"
                "        live_trace._record(r['kind'], r['data'], agent=r['agent'])\n"
                "threading.Thread(target=feed).start()",
            )
            wait_for_count(page, 1, drawn)
            streamed = time.perf_counter() - started
            messages = page.evaluate(
                "() => document.querySelectorAll('.na-timeline')[1].dataset.renderMs"
            )
            print(f"{'live: all recorded to all drawn':<34} {streamed * 1000:6.0f} ms")
            print(f"{'live: last draw':<34} {messages} ms")
            page.screenshot(path=str(Path(tmp) / "long.png"))
            browser.close()


if __name__ == "__main__":
    main()
