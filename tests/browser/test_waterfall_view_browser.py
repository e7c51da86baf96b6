"""WaterfallView in JupyterLab in headless chromium, on a live two-agent session and then on
its saved trace: empty until a wait is answered, then each turn and handoff drawn phase by
phase as it comes (newest first), another picked from the list, in the light and the dark
theme; the bars where the kernel's milliseconds put them. Then a real spoken turn answered by
a tool: the end of turn first on the critical path, livekit's figures as marks, each row's
name on one line."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from notebook_agents.emulator import Emulator
from notebook_agents.trace import Trace
from tests.analysis.test_phases_turns import pharmacy_trace

from .cells import AGENTS
from .conftest import run_cell, run_notebook
from .themes import in_both_themes

SPLITTER = '''from notebook_agents.modes import mode_label
from notebook_agents.analysis import Breakdown, Phase
from notebook_agents.views import waterfall_view


def replies(trace, latency):
    """Stands in for the splitters (phases.turns, phases.handoffs; not on this branch): each
    typed turn from the caller's message to the reply, each handoff from its event to the new
    agent's first words, in phases made up from the two times."""
    found, asked, handed = [], None, None
    for event in trace.events:
        if event.kind == "user_message":
            asked = event
        elif event.kind == "handoff" and event.data["from"]:
            handed = event
        elif event.kind == "agent_message":
            if asked is not None:
                found.append(turn(len(found) + 1, event.agent, asked.t, event.t))
            if handed is not None:
                found.append(handoff(handed, event.t))
            asked = handed = None
    return sorted(found, key=lambda b: b.start)


def turn(n, agent, start, end):
    w = end - start
    return Breakdown("turn", f"turn {n} · typed", agent, start, end, (
        Phase("end_of_turn", start, start + 0.2 * w, livekit=0.2 * w,
              livekit_name="lk.end_of_turn_delay",
              note="livekit's endpointing delay: AgentSession(min_endpointing_delay=...)"),
        Phase("transcript", start - 0.05 * w, start + 0.3 * w, critical=False,
              livekit=0.3 * w, livekit_name="lk.transcription_delay"),
        Phase("llm_first_token", start + 0.2 * w, start + 0.7 * w, livekit=0.45 * w,
              livekit_name="ttft", truth=0.2 * w),
        Phase("first_text", start + 0.7 * w, start + 0.9 * w, truth=0.05 * w),
    ), attributes={"lk.e2e_latency": 1.1 * w, "lk.end_of_turn_delay": 0.2 * w,
                   "lk.speech.queue_wait": 0.01 * w})


def handoff(event, end):
    d, start = event.data, event.t
    w, mode = end - start, mode_label(d["session"], d["context"])
    return Breakdown("handoff", f"{d['from']} → {d['to']} · {mode}", d["to"], start, end, (
        Phase("drain", start, start + 0.3 * w),
        Phase("session_update", start + 0.3 * w, start + 0.6 * w, truth=0.2 * w),
        Phase("first_text", start + 0.6 * w, end),
    ), mode=mode)


waterfall_view.breakdowns = replies'''

CELLS = [
    AGENTS
    + """from notebook_agents.views import WaterfallView


@server.rtc_session()
async def entrypoint(ctx: JobContext) -> None:
    model = openai.realtime.RealtimeModel(base_url=emulator.base_url(), api_key="offline")
    await AgentSession(llm=model).start(agent=Concierge(), room=ctx.room)""",
    SPLITTER,
    """runner = NotebookRunner(server).start()
await runner.ready()
view = WaterfallView(runner)
view""",
]


def left_right(locator: Locator) -> tuple[float, float]:
    x0, x1 = locator.evaluate(
        "el => { const r = el.getBoundingClientRect(); return [r.left, r.right]; }"
    )
    return float(x0), float(x1)


def test_waterfall_live_then_loaded(lab: tuple[str, Path], page: Page, tmp_path: Path) -> None:
    run_notebook(page, lab, "waterfall_view.ipynb", CELLS)
    live = page.locator(".na-waterfall").first
    expect(live.locator(".na-wf-empty")).to_have_text(
        re.compile(r"^No turn or handoff yet"), timeout=60_000
    )
    expect(live.locator(".na-wf-row")).to_have_count(0)

    # a turn: drawn as it is answered
    run_cell(page, 'await runner.send_text("hello")')
    expect(live.locator(".na-wf-title")).to_have_text("turn 1 · typed · Concierge", timeout=30_000)
    expect(live.locator(".na-wf-empty")).to_be_hidden()
    rows = live.locator(".na-wf-row:not(.na-wf-headings)")
    # livekit's totals a mark shows are no rows: its e2e_latency is the wait's mark, its end
    # of turn the end of turn's; its queue wait is no phase's
    expect(rows.locator(".na-wf-name")).to_have_text(
        ["wait", "livekit lk.speech.queue_wait", "transcript (parallel)", "end_of_turn",
         "llm_first_token", "first_text", "unexplained"]
    )  # fmt: skip
    expect(rows.nth(0).locator(".na-wf-livekit")).to_have_count(1)
    expect(rows.nth(0).locator(".na-wf-ms")).to_have_text(re.compile(r"^\d+(\.\d)? ms$"))
    llm = live.locator('.na-wf-row:has(.na-wf-label:text-is("llm_first_token"))')
    expect(llm.locator(".na-wf-truth")).to_have_count(1)
    expect(llm.locator(".na-wf-client")).to_have_count(1)
    expect(llm.locator(".na-wf-livekit")).to_have_count(1)
    expect(llm).to_have_attribute("title", re.compile(r"livekit's figure: .* \(ttft\)"))
    expect(llm.locator(".na-wf-net")).to_have_text(re.compile(r"^net .* · client .*"))
    expect(live.locator(".na-wf-note")).to_have_text(
        ["livekit's endpointing delay: AgentSession(min_endpointing_delay=...)"]
    )
    expect(live.locator('.na-wf-row[data-critical="false"] .na-wf-whole')).to_have_count(1)
    # where the kernel put them: the wait and the end of turn both from 0 ms, the truth and
    # the client's rest of a phase end to end, the unexplained rest up to the wait's end
    wait_bar = left_right(rows.nth(0).locator(".na-wf-bar"))
    eot_bar = left_right(
        live.locator('.na-wf-row:has(.na-wf-label:text-is("end_of_turn")) .na-wf-bar')
    )
    truth, client = (
        left_right(llm.locator(".na-wf-truth")),
        left_right(llm.locator(".na-wf-client")),
    )
    gap = left_right(live.locator(".na-wf-gap"))
    assert abs(wait_bar[0] - eot_bar[0]) < 1 and abs(truth[1] - client[0]) < 1
    assert abs(gap[1] - wait_bar[1]) < 1 and wait_bar[1] - wait_bar[0] > 100

    # a handoff and the turn that asked for it (it began first), newest first, the newest shown
    run_cell(page, 'await runner.send_text("please transfer to billing")')
    pick = live.locator(".na-wf-pick")
    expect(pick.locator("option")).to_have_count(4, timeout=30_000)
    expect(pick.locator("option")).to_have_text(
        ["newest", re.compile(r"^Concierge → Billing · reused\+empty · \d"),
         re.compile(r"^turn 2 · typed · Billing · "), re.compile(r"^turn 1 · typed · Concierge · ")]
    )  # fmt: skip
    expect(live.locator(".na-wf-title")).to_have_text("Concierge → Billing · reused+empty")
    expect(live.locator(".na-wf-title")).to_have_attribute("data-mode", "true")
    expect(live.locator(".na-wf-live")).to_be_visible()
    expect(rows.locator(".na-wf-name")).to_have_text(
        ["wait", "drain", "session_update", "first_text"]
    )
    expect(live.locator(".na-wf-key-entry")).to_have_text(
        ["wait", "critical path", "network (emulator's truth)"]
    )
    assert in_both_themes(page, ".na-waterfall", "waterfall-live") == []
    pick.select_option(value="0")  # the first turn, by its id
    expect(live.locator(".na-wf-title")).to_have_text("turn 1 · typed · Concierge")

    # the call over and saved: the same waits from the file, in time order, none live
    saved = tmp_path / "waterfall.jsonl"
    run_cell(page, f"runner.stop()\nrunner.trace.save({str(saved)!r})")
    expect(live.locator(".na-wf-live")).to_be_hidden(timeout=30_000)
    run_cell(page, f"from notebook_agents import Trace\nWaterfallView(Trace.load({str(saved)!r}))")
    loaded = page.locator(".na-waterfall").nth(1)
    expect(loaded.locator(".na-wf-pick option")).to_have_text(
        [re.compile(r"^turn 1 "), re.compile(r"^turn 2 "), re.compile(r"^Concierge → Billing ")],
        timeout=30_000,
    )
    expect(loaded.locator(".na-wf-title")).to_have_text("Concierge → Billing · reused+empty")
    expect(loaded.locator(".na-wf-live")).to_be_hidden()
    loaded.locator(".na-wf-pick").select_option(value="0")
    expect(loaded.locator(".na-wf-title")).to_have_text("turn 1 · typed · Concierge")
    loaded.scroll_into_view_if_needed()
    assert in_both_themes(page, ".na-waterfall", "waterfall-loaded") == []
    run_cell(page, "emulator.stop()")


def test_a_spoken_turn_answered_by_a_tool_waits_on_the_end_of_turn(
    lab: tuple[str, Path], page: Page, tmp_path: Path
) -> None:
    """Issue 30: the caller asked a pharmacy agent for its tool by voice; livekit's model called
    it while the caller was still heard, and ran it once the turn ended. The waterfall shows the
    end of turn first on the critical path and the model's round beside it, livekit's figures
    as marks and not again as rows, each name on one line (a long one cut, whole on hover)."""
    with Emulator() as emulator, ThreadPoolExecutor(1) as thread:  # off Playwright's loop
        said = "refill prescription medication aspirin quantity thirty"
        trace: Trace = thread.submit(pharmacy_trace, emulator, said).result()
    saved = trace.save(tmp_path / "pharmacy.jsonl")
    cell = f"""from notebook_agents import Trace
from notebook_agents.views import WaterfallView
WaterfallView(Trace.load({str(saved)!r}), selected=0)"""
    run_notebook(page, lab, "waterfall_tool_turn.ipynb", [cell])
    view = page.locator(".na-waterfall")
    expect(view.locator(".na-wf-title")).to_have_text("turn 1 · spoken · Pharmacy", timeout=30_000)
    critical = view.locator('.na-wf-row[data-kind="phase"][data-critical="true"] .na-wf-label')
    expect(critical.first).to_have_text("end_of_turn")
    expect(critical).to_contain_text(["end_of_turn", "reply_start", "tool", "first_audio"])
    model = view.locator('.na-wf-row[data-kind="phase"]:has(.na-wf-label:text-is("llm_response"))')
    expect(model.first).to_have_attribute("data-critical", "false")
    expect(view.locator(".na-wf-row", has_text="lk.end_of_turn_delay")).to_have_count(0)
    end_of_turn = view.locator('.na-wf-row:has(.na-wf-label:text-is("end_of_turn"))')
    expect(end_of_turn.locator(".na-wf-livekit")).to_have_count(1)

    names = view.locator(".na-wf-row:not(.na-wf-headings) .na-wf-name")
    line = view.locator(".na-wf-headings .na-wf-name").evaluate(
        "name => name.getBoundingClientRect().height"
    )  # the heading's name, "phase": one line
    measured = names.evaluate_all(
        """names => names.map(name => {
            const label = name.querySelector('.na-wf-label');
            return {
                text: name.textContent,
                height: name.getBoundingClientRect().height,
                cut: label.scrollWidth > label.clientWidth,
                hover: name.closest('.na-wf-row').title,
            };
        })"""
    )
    assert measured and all(abs(m["height"] - line) < 1 for m in measured), (line, measured)
    for m in measured:  # a name cut short is whole in its row's hover text
        assert not m["cut"] or m["text"].removesuffix(" (parallel)") in m["hover"], m
    # the axis's labels side by side, none over another (the unit on the last ran into the
    # one before it: "5000 6000 ms")
    spans = view.locator(".na-wf-tick-label").evaluate_all(
        "labels => labels.map(label => label.getBoundingClientRect())"
        ".map(box => [box.left, box.right])"
    )
    assert len(spans) > 2 and all(a[1] <= b[0] for a, b in pairwise(spans)), spans
    assert in_both_themes(page, ".na-waterfall", "waterfall-tool-turn") == []
    run_cell(page, "1")  # the kernel still answers
