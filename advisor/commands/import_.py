"""``ioadvisor import darshan LOG``: a synthetic trace from a Darshan log of a C/C++/Fortran/MPI HDF5 program."""
from __future__ import annotations

import os
import sys

from instrumentation.errors import OutputExistsError


def register(sub) -> None:
    p = sub.add_parser("import", help="turn another tool's log into a (synthetic) trace: darshan")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    d = kinds.add_parser("darshan", help="a Darshan log (binary, read with pydarshan, or darshan-parser text)",
                         description="Rebuild the HDF5 dataset accesses a Darshan log summarizes (H5D module) into "
                                     "a trace that trace show, predict, advise and verify accept. The trace is "
                                     "marked synthetic and lists what it guessed.")
    d.add_argument("log", metavar="LOG", help="Darshan log (.darshan) or the text `darshan-parser LOG` prints")
    d.add_argument("-o", "--output", metavar="TRACE",
                   help="trace file to write (default: LOG's name with .jsonl)")
    d.add_argument("--shape", action="append", default=[], metavar="DATASET=AxB",
                   help="a dataset's shape when its HDF5 file is not reachable (Darshan records only the number "
                        "of points); DATASET is its path, e.g. /fields/u=512x512x64; repeatable")
    d.add_argument("--force", action="store_true", help="replace TRACE if it exists")
    d.add_argument("--no-dxt", action="store_true", help="ignore DXT trace segments (placement stays synthetic)")
    d.add_argument("--no-files", action="store_true",
                   help="never open the HDF5 files the log names (shape, dtype, filters come from the log only)")
    d.set_defaults(func=run)


def run(args) -> int:
    from instrumentation.darshan import import_darshan, parse_shapes

    output = args.output or os.path.splitext(os.path.basename(args.log))[0] + ".jsonl"
    if os.path.exists(output) and not args.force:
        # said before reading the log, in the CLI's words (the API's error names its overwrite=True)
        raise OutputExistsError(f"{output} exists: not replacing an earlier trace (choose another path with -o, "
                              "or --force to replace it)")
    summary = import_darshan(args.log, output, shapes=parse_shapes(args.shape), dxt=not args.no_dxt,
                             reach_files=not args.no_files, overwrite=args.force)
    for name, why in summary.skipped:
        print(f"ioadvisor: not imported: {name}: {why}", file=sys.stderr)
    guessed = [f for f in summary.facts if f.guessed]
    print(f"ioadvisor: {len(summary.datasets)} dataset(s), {summary.n_access} synthesized accesses -> "
          f"{summary.trace} (synthetic; {len(guessed)} guessed facts, see `ioadvisor trace show {summary.trace}`)",
          file=sys.stderr)
    return 0
