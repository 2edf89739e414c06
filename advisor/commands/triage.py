"""``ioadvisor triage ARCHIVE... --out summary.parquet``: rank a Darshan archive's applications by recoverable
I/O time, on dask.distributed, reading only logs not yet in the summary (``advisor.triage``)."""
from __future__ import annotations

import os
import sys

from instrumentation import settings
from instrumentation.errors import InputError, OutputExistsError


def register(sub) -> None:
    p = sub.add_parser("triage", help="rank a Darshan archive's applications by recoverable I/O time (dask)",
                       description="Summarize every Darshan log under ARCHIVE (directories walked, globs, files) "
                                   "into a Parquet dataset partitioned by month (one row per log, bad logs with "
                                   "their reason), skipping logs already there, and rank applications by the "
                                   "I/O seconds their findings' fixes would recover.")
    p.add_argument("archive", metavar="ARCHIVE", nargs="+", help="log directory (e.g. Darshan's YEAR/MONTH/DAY "
                   "tree), glob or .darshan file")
    p.add_argument("--out", required=True, metavar="DIR", help="the summary dataset (e.g. summary.parquet); "
                   "appended to; the per-application table goes next to it (summary.apps.parquet)")
    p.add_argument("--html", metavar="FILE", help="also write the top applications, findings and next steps as HTML")
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running dask scheduler (tcp://host:8786) instead "
                   "of a local cluster")
    p.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 4), metavar="N",
                   help="local cluster's worker processes (default: the cores, up to 4)")
    p.add_argument("--memory-limit", default="1GiB", metavar="BYTES", help="per local worker (default 1GiB)")
    p.add_argument("--batch", type=int, default=None, metavar="N", help="logs per dask task (default: guided, "
                   "the logs left / (4 x workers), 10 to 200 logs each)")
    p.add_argument("--names", action="store_true", help="keep executable and user names (default: hashed; "
                   f"{settings.TRIAGE_KEY} keys the hash)")
    p.add_argument("--no-dxt", action="store_true", help="ignore DXT segments (faster; no modelled savings)")
    p.set_defaults(func=run)


def run(args) -> int:
    import logging

    from advisor.triage import RowOptions, TriageOptions, triage

    logging.getLogger("distributed").setLevel(logging.ERROR)  # the nanny's shutdown chatter is not the user's

    from importlib.util import find_spec

    for need in ("distributed", "pandas"):  # looked up, not imported: a rerun with few new logs uses neither
        if find_spec(need) is None:
            print(f"ioadvisor triage: error: needs {need}: pip install 'ioadvisor[triage]'", file=sys.stderr)
            return 2
    if args.workers < 1 or (args.batch is not None and args.batch < 1):
        raise InputError("--workers and --batch must be at least 1")
    if args.html and os.path.exists(args.html):
        raise OutputExistsError(f"{args.html} exists: not replacing it (choose another path for --html)")
    rows = RowOptions(dxt=not args.no_dxt, names=args.names, name_key=settings.triage_key())
    opts = TriageOptions(out=args.out, scheduler=args.scheduler, workers=args.workers,
                         memory_limit=args.memory_limit, batch=args.batch or 0, rows=rows, html=args.html)
    res = triage(args.archive, opts)
    for m in res.missing:
        print(f"ioadvisor triage: {m}: no log there", file=sys.stderr)
    if not res.found:
        raise InputError("no Darshan log found under " + " ".join(args.archive))
    print(f"{res.found:,} logs found, {res.skipped:,} already summarized, {res.new:,} read: {res.ok:,} with I/O, "
          f"{res.no_io:,} without, {len(res.bad):,} unreadable; {res.seconds:.1f} s "
          f"({res.new / res.seconds if res.seconds else 0:.1f} logs/s)")
    for path, why in res.bad[:20]:
        print(f"  bad: {path}: {why}")
    if len(res.bad) > 20:
        print(f"  ... {len(res.bad) - 20:,} more (status == 'bad' in {args.out})")
    import pyarrow.parquet as pq

    apps = pq.ParquetFile(res.apps).read(columns=["recoverable_low", "recoverable", "jobs", "exe", "top_code",
                                                  "next_step"])  # read_table would import pandas (a rerun needs none)
    print(f"top applications by recoverable seconds ({apps.num_rows:,} in {res.apps}):")
    for a in apps.slice(0, 10).to_pylist():
        print(f"  {a['recoverable_low']:9.3g} - {a['recoverable']:<9.3g} s  {a['jobs']:5d} job(s)  {a['exe']}  "
              f"[{a['top_code']}] {a['next_step'][:120]}")
    if args.html:
        print(f"ioadvisor: triage page -> {args.html}", file=sys.stderr)
    return 0
