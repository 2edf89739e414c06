"""``ioadvisor verify TRACE [--top K]``: rebuild the current and recommended layouts, replay them for real.

Prints predicted vs measured seconds side by side for every traced dataset
(cold page cache; the user's data when the recorded file is readable, else a
smooth random field of the same shape and dtype).
"""
from __future__ import annotations

import json
import sys

from . import add_profile_option


def register(sub) -> None:
    p = sub.add_parser("verify", help="replay the trace for real in the current and the top-K recommended layouts")
    p.add_argument("trace", help="trace file (JSON Lines) from `ioadvisor run` / advisor.trace()")
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
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from advisor.verify import verify

    if args.top < 0 or args.repeat < 1:
        raise ValueError("--top must be >= 0 and --repeat >= 1")
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
    print(f"ioadvisor verify: rebuilding and replaying {args.trace} (current + top {args.top}) ...",
          file=sys.stderr)
    result = verify(args.trace, top=args.top, profile=args.profile, dataset=args.dataset,
                    workdir=args.workdir, repeat=args.repeat, deadline=args.deadline, layouts=args.layout,
                    **constraints)
    print(json.dumps(result.get_config()) if args.json else result.table())
    return 0
