"""``notebook-agents export``: a saved trace as OTLP JSON or Chrome trace-event JSON."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .chrome import to_chrome_json
from .otlp import to_otlp_json
from .trace import Trace

HELP = "export a saved trace as OTLP JSON or Chrome trace-event JSON"
DESCRIPTION = (
    "Export a trace saved by Trace.save (its events and livekit's spans) for standard viewers: "
    "otlp (OTLP/JSON, what Jaeger, Langfuse, Phoenix and OpenTelemetry collectors read) or "
    "chrome (trace events, for ui.perfetto.dev and chrome://tracing)."
)
FORMATS: dict[str, tuple[Callable[[Trace], str], str]] = {
    "otlp": (to_otlp_json, ".otlp.json"),
    "chrome": (to_chrome_json, ".chrome.json"),
}
"""format -> how to write it, and the suffix of the file written beside the trace"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", type=Path, help="the saved trace (.jsonl)")
    parser.add_argument(
        "--format",
        choices=list(FORMATS),
        default="otlp",
        help="what to write (default: %(default)s)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="where to write, - for standard output (default: beside the trace, "
        "TRACE.otlp.json or TRACE.chrome.json)",
    )


def run(args: argparse.Namespace) -> int:
    encode, suffix = FORMATS[args.format]
    try:
        trace = Trace.load(args.trace)
    except (OSError, ValueError) as e:
        print(f"notebook-agents export: cannot read {args.trace}: {e}", file=sys.stderr)
        return 2
    text = encode(trace)
    if args.out == "-":
        try:
            print(text, flush=True)
        except BrokenPipeError:  # the reader stopped early (| head): what it read was enough
            # as Python's signal docs advise: no second error when stdout is flushed at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    out = Path(args.out) if args.out else args.trace.with_suffix(suffix)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        print(f"notebook-agents export: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(out)
    return 0
