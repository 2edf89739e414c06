"""``ioadvisor demo``: trace a small bundled h5py program and report what it did.

The program (``advisor.workloads.demo_rows``) writes its file to a temporary
directory that lives until every report step has run, so steps that need the
data itself (sampling it for compression) can be added after ``show``.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from instrumentation.patterns import summarize
from instrumentation.tracefile import Trace

from .trace import format_trace


def show(trace: Trace, out) -> None:
    """What the trace saw: the ``ioadvisor trace show`` summary."""
    print(format_trace(trace, summarize(trace)), file=out)


STEPS = (show,)
"""Report steps run in order on the demo's trace, while its data file still exists."""


def register(sub) -> None:
    p = sub.add_parser("demo", help="trace a small bundled h5py program and report what it did")
    p.add_argument("-o", "--output", metavar="TRACE", help="keep the demo's trace in this file")
    p.set_defaults(func=run)


def run(args) -> int:
    import advisor
    from advisor.workloads import demo_rows

    with tempfile.TemporaryDirectory(prefix="ioadvisor-demo-") as tmp:
        trace_path = Path(args.output) if args.output else Path(tmp, "demo-trace.jsonl")
        print(f"ioadvisor demo: running {demo_rows.__name__} ({demo_rows.ROWS} x {demo_rows.COLS} float32, "
              f"chunks {demo_rows.CHUNKS}) under tracing", file=sys.stderr)
        t0 = time.perf_counter()
        with advisor.trace(trace_path) as tracer:
            demo_rows.main(tmp)
        elapsed = time.perf_counter() - t0
        trace = tracer.load()
        print(f"ioadvisor demo: traced in {elapsed:.2f} s; trace "
              + (str(trace_path) if args.output else "discarded (pass -o TRACE to keep it)"), file=sys.stderr)
        for step in STEPS:
            step(trace, sys.stdout)
    return 0
