"""``ioadvisor report LOG [--json] [--html FILE]``: what a Darshan log shows, on any log (H5D or not)."""
from __future__ import annotations

import os
import sys

from instrumentation.errors import OutputExistsError


def register(sub) -> None:
    p = sub.add_parser("report", help="report on a Darshan log: files, findings with seconds at stake, HDF5 advice",
                       description="Characterize the I/O a Darshan log recorded (POSIX, MPI-IO, STDIO, DXT; "
                                   "H5D when present): HDF5/netCDF files, findings with stable codes and "
                                   "thresholds, each with its seconds at stake, and HDF5-aware advice.")
    p.add_argument("log", metavar="LOG", help="Darshan log (.darshan) or the text `darshan-parser LOG` prints")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--html", metavar="FILE", help="also write the report as an HTML page (never replaces FILE)")
    p.add_argument("--no-dxt", action="store_true", help="ignore DXT segments")
    p.add_argument("--no-files", action="store_true", help="never open the files the log names (signatures)")
    p.set_defaults(func=run)


def run(args) -> int:
    from advisor.darshan_report import report_darshan, write_json

    if args.html and os.path.exists(args.html):
        raise OutputExistsError(f"{args.html} exists: not replacing it (choose another path for --html)")
    rep = report_darshan(args.log, reach_files=not args.no_files, dxt=not args.no_dxt)
    print(write_json(rep) if args.json else rep.text())
    if args.html:
        with open(args.html, "x", encoding="utf-8") as fh:
            fh.write(rep.html())
        print(f"ioadvisor: report -> {args.html}", file=sys.stderr)
    return 0
