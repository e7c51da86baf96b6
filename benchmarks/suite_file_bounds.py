"""What a malformed scenarios file costs before it is refused (goal: well under a second, a few
MB), against a well-formed one of the same kind for scale: ``load_suite`` on "billion laughs"
alias bombs of 530 and 650 bytes (9**9 and 9**11 scalars as the tree they mean; before the
bounds the 530-byte one ran past 60 s here), flow lists 3000 deep, and a 100-scenario file with
no mistake. Each is loaded ``--repeats`` times in this process; the median wall time and the
peak of Python's allocations during one load (tracemalloc) are printed.

    .venv/bin/python benchmarks/suite_file_bounds.py --repeats 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from notebook_agents.suites import SuiteFileError, load_suite
from tests.suites.test_suite_file import alias_bomb

WELL_FORMED = "name: hotel\nscenarios:\n" + "".join(
    f"  - label: scenario {i}\n"
    "    instructions: You are a caller who wants a room for two nights in June.\n"
    "    userdata: {guest: {name: Ada, nights: 2}, rooms: [king, twin]}\n"
    "    turns:\n"
    "      - user: book a room\n"
    "        expect: ['next_event().is_message(role=\"assistant\")']\n"
    for i in range(100)
)
FILES = {
    "alias bomb, 530 bytes": alias_bomb(9, size=530),
    "alias bomb, 650 bytes": alias_bomb(11, size=650),
    "flow lists 3000 deep": "scenarios:\n  - label: a\n    userdata: {a: "
    + "[" * 3000
    + "]" * 3000
    + "}\n",
    "100 scenarios, well formed": WELL_FORMED,
}


def load(path: Path) -> str:
    try:
        load_suite(path)
    except SuiteFileError as e:
        return "refused: " + str(e).split(": ", 2)[1][:50]
    return "read"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"{'file':28} {'bytes':>6} {'median ms':>10} {'peak KB':>8}  outcome")
    with tempfile.TemporaryDirectory() as directory:
        for name, text in FILES.items():
            path = Path(directory) / "scenarios.yaml"
            path.write_text(text)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                outcome = load(path)
                times.append(time.perf_counter() - start)
            tracemalloc.start()
            load(path)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(
                f"{name:28} {len(text.encode()):>6} {statistics.median(times) * 1000:>10.2f} "
                f"{peak / 1024:>8.0f}  {outcome}"
            )


if __name__ == "__main__":
    main()
