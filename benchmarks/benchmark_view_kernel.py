"""BenchmarkView's effect on its trials in a real notebook: JupyterLab in headless chromium
runs one cell that alternates the arms round by round on the kernel's loop, each view displayed
and live in the page: ``cli`` (``run_benchmark`` with no view) and ``view`` (``await
view.run()``); it prints each arm's medians (the same table as
benchmark_view_perturbation.py, which measures the arms in a plain process).

    .venv/bin/python benchmarks/benchmark_view_kernel.py --rounds 4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.browser.lab import jupyter_lab, launch_chromium, open_notebook, write_notebook

CELL = """
import collections, statistics
from IPython.display import display
from notebook_agents.bench import BenchmarkConfig
from notebook_agents.bench.run import run_benchmark
from notebook_agents.views import BenchmarkView

config = BenchmarkConfig(providers=["openai", "gemini"], levels=["agent"], rtts_ms=[0.0],
                         history_turns=[2], trials={trials}, warmup=1)
found = collections.defaultdict(list)
for i in range({rounds}):
    for arm in (("cli", "view") if i % 2 == 0 else ("view", "cli")):
        if arm == "cli":
            found[arm] += (await run_benchmark(config)).trials
        else:
            view = BenchmarkView(config)
            display(view)
            found[arm] += (await view.run()).trials
lines = ["RESULT provider mode timing n cli view view-cli"]
for timing in ("reply_ms", "handoff_ms"):
    keys = sorted({{(t.provider, t.mode) for t in found["cli"]}})
    for provider, mode in keys:
        arms = [[getattr(t, timing) for t in found[a] if t.ok and t.provider == provider
                 and t.mode == mode and getattr(t, timing) is not None] for a in ("cli", "view")]
        if all(arms):
            a, b = (statistics.median(x) for x in arms)
            lines.append(f"RESULT {{provider}} {{mode}} {{timing}} {{len(arms[0])}} "
                         f"{{a:.1f}} {{b:.1f}} {{b - a:+.1f}}")
print("\\n".join(lines) + "\\nDONE")
"""


def main(rounds: int, trials: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "root", Path(tmp) / "home"
        root.mkdir()
        write_notebook(root / "perturb.ipynb", [CELL.format(rounds=rounds, trials=trials)])
        with jupyter_lab(root, home) as base, sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            open_notebook(page, base, "perturb.ipynb")
            page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")
            printed = page.locator(".jp-OutputArea-output pre", has_text="view-cli").last
            printed.wait_for(timeout=1_200_000)
            text = printed.inner_text()
            print(f"{rounds} rounds x {trials} trials per mode, RTT 0, history 2, in a kernel")
            for line in text.splitlines():
                if line.startswith("RESULT"):
                    print(line.removeprefix("RESULT "))
            browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    main(args.rounds, args.trials)
