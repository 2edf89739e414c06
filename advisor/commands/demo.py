"""``ioadvisor demo``: trace a small bundled h5py program, report what it did, and advise a better layout.

The program (``advisor.workloads.demo_rows``) writes its file to a temporary
directory that lives until every report step has run, so the advisor can
sample the data itself (compression estimates).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from instrumentation.patterns import summarize
from instrumentation.tracefile import Trace

from . import add_profile_option, add_quiet_option, with_progress
from .trace import format_trace


def show(trace: Trace, out, args) -> None:
    """What the trace saw: the ``ioadvisor trace show`` summary."""
    print(format_trace(trace, summarize(trace)), file=out)


def recommend(trace: Trace, out, args) -> None:
    """The advisor's answer: the recommended layout, its predicted speed-up over the current one, why, and
    the code to apply it (``ioadvisor advise`` has the full ranked table)."""
    from advisor import progress
    from advisor.api import advise
    from iomodel.layout import format_bytes

    t0 = time.perf_counter()
    progress.current().describe("advising")
    adv = advise(trace, profile=args.profile)
    for d in adv.datasets:
        cur, rec = d.current, d.recommendation
        print(f"\nRecommendation for {d.path} ({d.pattern}):", file=out)
        traced = f"traced {d.traced_seconds:8.3f} s, " if d.traced_seconds else ""
        print(f"  now:         {cur.label:<40} {traced}predicted {cur.seconds:8.3f} s", file=out)
        lo, hi = rec.seconds_ci
        print(f"  verdict:     {d.verdict} ({d.verdict_reason})", file=out)
        if d.verdict == "change":
            print(f"  recommended: {rec.label:<40} predicted {rec.seconds:8.3f} s (95% {lo:.3f}-{hi:.3f} s), "
                  f"stored {format_bytes(rec.stored_bytes)}", file=out)
            print(f"  speed-up: {d.speedup_vs_current():.1f}x over the current layout's traced time"
                  + "".join(f", {d.speedup(v):.1f}x over {k}'s default" for k, v in d.defaults.items()), file=out)
        for line in d.explanation[2:4]:
            print(f"  {line}", file=out)
        print("  apply it:", file=out)
        print("\n".join("    " + line for line in d.code().splitlines()), file=out)
    print(f"\n(advised in {time.perf_counter() - t0:.1f} s; `ioadvisor advise TRACE` shows every candidate, "
          f"`ioadvisor verify TRACE` measures them for real)", file=out)


STEPS = (show, recommend)
"""Report steps ``step(trace, out, args)`` run in order on the demo's trace, while its data file still exists."""


def register(sub) -> None:
    p = sub.add_parser("demo", help="trace a small bundled h5py program, report what it did, advise a layout")
    p.add_argument("-o", "--output", metavar="TRACE", help="keep the demo's trace in this file")
    p.add_argument("--force", action="store_true", help="replace an existing TRACE")
    add_profile_option(p)
    add_quiet_option(p)
    p.set_defaults(func=with_progress("demo", run, compiles=True))


def run(args) -> int:
    import advisor
    from advisor.workloads import demo_rows

    with tempfile.TemporaryDirectory(prefix="ioadvisor-demo-") as tmp:
        trace_path = Path(args.output) if args.output else Path(tmp, "demo-trace.jsonl")
        print(f"ioadvisor demo: running {demo_rows.__name__} ({demo_rows.ROWS} x {demo_rows.COLS} float32, "
              f"chunks {demo_rows.CHUNKS}) under tracing", file=sys.stderr)
        t0 = time.perf_counter()
        with advisor.trace(trace_path, overwrite=args.force) as tracer:
            demo_rows.main(tmp)
        elapsed = time.perf_counter() - t0
        trace = tracer.load()
        print(f"ioadvisor demo: traced in {elapsed:.2f} s; trace "
              + (str(trace_path) if args.output else "discarded (pass -o TRACE to keep it)"), file=sys.stderr)
        for step in STEPS:
            step(trace, sys.stdout, args)
    return 0
