"""``notebook-agents export``: a saved trace as OTLP JSON or Chrome trace-event JSON, or sent
to an OpenTelemetry collector."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .chrome import CHROME_SUFFIX, to_chrome_json
from .otlp import OTLPSendError, send_otlp, to_otlp_json, traces_url
from .trace import Trace

HELP = "export a saved trace as OTLP JSON or Chrome trace-event JSON, or send it to a collector"
DESCRIPTION = (
    "Export a trace saved by Trace.save (its events and livekit's spans) for standard viewers: "
    "otlp (OTLP/JSON, what Jaeger, Langfuse, Phoenix, MLflow and OpenTelemetry collectors "
    "read) or chrome (trace events, for ui.perfetto.dev, speedscope and chrome://tracing); "
    "or send it as OTLP to a collector (--to)."
)
FORMATS: dict[str, tuple[Callable[[Trace], str], str]] = {
    "otlp": (to_otlp_json, ".otlp.json"),
    "chrome": (to_chrome_json, CHROME_SUFFIX),
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
        f"TRACE.otlp.json or TRACE{CHROME_SUFFIX})",
    )
    parser.add_argument(
        "--to",
        metavar="URL",
        default=None,
        help="send it as OTLP (protobuf over HTTP) to a collector instead: its base URL "
        "(http://127.0.0.1:4318, sent to /v1/traces) or its traces URL; headers from "
        "OTEL_EXPORTER_OTLP_HEADERS (default: write a file)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=None,
        help="how long --to may take, retries included (default: OTEL_EXPORTER_OTLP_TIMEOUT, "
        "else 10)",
    )


def run(args: argparse.Namespace) -> int:
    """Write (or send) the export: 0; 2 for a bad argument or a file that cannot be read or
    written, 1 when the collector does not take it."""
    encode, suffix = FORMATS[args.format]
    if args.to is not None:
        if args.format != "otlp" or args.out is not None:
            return _refuse("--to sends OTLP to a collector: leave out --format chrome and --out")
        try:
            traces_url(args.to)
        except ValueError as e:
            return _refuse(f"--to: {e}")
    try:
        trace = Trace.load(args.trace)
    except (OSError, ValueError) as e:
        return _refuse(f"cannot read {args.trace}: {e}")
    if args.to is not None:
        try:
            sent = send_otlp(trace, args.to, timeout=args.timeout)
        except OTLPSendError as e:
            print(f"notebook-agents export: {e}", file=sys.stderr)
            return 1
        print(f"sent {sent} spans to {traces_url(args.to)}")
        return 0
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
        return _refuse(f"cannot write {out}: {e.strerror or e}")
    print(out)
    return 0


def _refuse(problem: str) -> int:
    print(f"notebook-agents export: {problem}", file=sys.stderr)
    return 2
