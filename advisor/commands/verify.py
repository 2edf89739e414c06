"""``ioadvisor verify TRACE [--top K]``: rebuild the current and recommended layouts, replay them for real.

Prints predicted vs measured seconds side by side for every traced dataset
(cold page cache; the user's data when the recorded file is readable, else a
smooth random field of the same shape and dtype).
"""
from __future__ import annotations

import json
import sys

from instrumentation.tracefile import load_trace

from . import add_profile_option, add_quiet_option
from instrumentation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("verify", help="replay the trace for real in the current and the top-K recommended layouts")
    p.add_argument("trace", help="trace (columnar directory or JSON Lines file) from `ioadvisor run` / advisor.trace()")
    p.add_argument("--top", type=int, default=3, metavar="K", help="recommended layouts to measure (default 3)")
    add_profile_option(p)
    p.add_argument("--dataset", metavar="NAME", help="only this dataset (id, path or file::path)")
    p.add_argument("--workdir", metavar="DIR", help="build the arrays here (default: a temporary directory)")
    p.add_argument("--repeat", type=int, default=1, metavar="N", help="replays per layout; the median is shown")
    p.add_argument("--deadline", type=float, metavar="SECONDS",
                   help="stop a replay after this long (its time is then shown as a lower bound)")
    p.add_argument("--max-error", metavar="abs:X|rel:Y", help="allow lossy compression within this bound")
    p.add_argument("--lossless-only", action="store_true", help="consider lossless compressors only")
    p.add_argument("--libraries", metavar="LIST", help="hdf5,zarr: the libraries the recommendations come from")
    p.add_argument("--cache-budget", metavar="BYTES", help="chunk-cache budget per process of the advice "
                   "(default 64MiB; 'none': no budget)")
    p.add_argument("--layout", action="append", metavar="SPEC", default=[],
                   help="also measure this layout, repeatable: current | hdf5:chunks=65536x8[,cache=64MiB,slots=N] "
                        "| zarr:chunks=4096x64[,shards=65536x64] | hdf5:contiguous (as `ioadvisor predict --layout`)")
    p.add_argument("--storage-options", metavar="JSON",
                   help="data on an object store: fsspec storage options to reach it (credentials, client_kwargs); "
                        "its layouts are rebuilt under a scratch prefix of its bucket (or of --workdir s3://...)")
    p.add_argument("--endpoint-url", metavar="URL", help="data on an object store: the S3 endpoint")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--html", metavar="FILE",
                   help="also write the HTML report of the advice with the measured times marked on its charts")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from advisor import progress
    from advisor.verify import verify

    if args.top < 0 or args.repeat < 1:
        raise InputError("--top must be >= 0 and --repeat >= 1")
    constraints = {}
    if args.max_error:
        constraints["max_error"] = args.max_error
    if args.lossless_only:
        constraints["lossless_only"] = True
    if args.libraries:
        constraints["libraries"] = [x.strip() for x in args.libraries.split(",") if x.strip()]
    if args.cache_budget:
        from iomodel.layout import parse_bytes

        constraints["cache_budget"] = (None if args.cache_budget.strip().lower() == "none"
                                       else parse_bytes(args.cache_budget, "--cache-budget"))
    # every argument is checked before the long work is announced
    from compression_model.error_bound import ErrorBound
    from iomodel import load_profile, pick_dataset

    trace = load_trace(args.trace)
    if args.dataset is not None:
        pick_dataset(trace, args.dataset)
    if args.max_error:
        ErrorBound.parse(args.max_error)
    if args.deadline is not None and args.deadline <= 0:
        raise InputError(f"--deadline must be > 0, got {args.deadline}")
    from .advise_store import store_options

    storage_options = store_options(args.storage_options, args.endpoint_url)
    load_profile(args.profile)  # readable; advise loads it again, rescaled to this machine (iomodel.probe)
    print(f"ioadvisor verify: rebuilding and replaying {args.trace} (current + top {args.top}) ...",
          file=sys.stderr)
    with progress.task("verify") as bar, progress.compiling():
        advice = None
        if args.html and args.top > 0:  # the report shows the advice the measured layouts came from
            from advisor.api import advise

            bar.describe("advising")
            with progress.task("advise"):
                advice = advise(trace, profile=args.profile, dataset=args.dataset, top=args.top, **constraints)
        result = verify(trace, top=args.top, profile=args.profile, dataset=args.dataset, workdir=args.workdir,
                        repeat=args.repeat, deadline=args.deadline, advice=advice, layouts=args.layout,
                        storage_options=storage_options, **constraints)
    if args.html and advice is None:
        print(f"ioadvisor verify: {args.html} not written: --top 0 measures the current layout only, no advice",
              file=sys.stderr)
    if advice is not None:
        from advisor.report import write_report

        write_report(advice, args.html, trace=trace, measured=result)
        print(f"report: {args.html}", file=sys.stderr)
    print(json.dumps(result.get_config()) if args.json else result.table())
    return 0

