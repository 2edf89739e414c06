"""``ioadvisor advise TRACE``: recommend library, chunks, cache/shards, compressor and error bound per dataset."""
from __future__ import annotations

import sys

from . import add_profile_option, add_quiet_option
from instrumentation.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("advise", help="recommend a layout (library, chunks, cache/shards, codec) from a trace")
    p.add_argument("trace", help="trace (columnar directory or JSON Lines file) from `ioadvisor run` / advisor.trace()")
    add_profile_option(p)
    p.add_argument("--dataset", metavar="NAME", help="only this dataset (id, path or file::path)")
    p.add_argument("--top", type=int, default=5, metavar="K", help="candidates listed per dataset (default 5)")
    p.add_argument("--objective", choices=("time", "read", "size"), default="time",
                   help="time (default; with --max-bytes), read (the reads alone: write once, read many) or size "
                        "(needs --max-seconds)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="time budget for --objective size")
    p.add_argument("--max-bytes", metavar="BYTES", help="stored-size budget, e.g. 2GiB")
    p.add_argument("--max-error", metavar="abs:X|rel:Y", help="allow lossy compressors with this point-wise bound")
    p.add_argument("--lossless-only", action="store_true", help="never a lossy compressor")
    p.add_argument("--compressors", metavar="LIST",
                   help="comma-separated compressors to try (default: blosc-zstd,bitshuffle-lz4,zstd, "
                        "plus sz3,zfp with --max-error); 'none' = no compression")
    p.add_argument("--libraries", default="hdf5,zarr", metavar="LIST", help="hdf5,zarr (default both)")
    p.add_argument("--cache-budget", default="64MiB", metavar="BYTES",
                   help="chunk-cache memory per process, shared by the datasets open together (default 64MiB; "
                        "'none': no budget); a layout whose cache exceeds it is not recommended")
    p.add_argument("--procs", type=int, metavar="P", help="processes for the parallel model (default: trace's)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="threads evaluating candidates (default: the usable cores); under mpiexec the "
                        "candidates are split over the ranks instead and rank 0 prints")
    p.add_argument("--no-data", action="store_true", help="do not read the traced files (no compression)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="the profile's predictions as they are, not fitted to the trace's own call timings")
    p.add_argument("--allow-truncated", action="store_true", help="use the readable prefix of a cut trace")
    p.add_argument("--target", metavar="PATH|URL",
                   help="data on an object store is advised on that store; with --target, layouts on this other "
                        "storage are ranked instead (the local model for a path)")
    p.add_argument("--storage-options", metavar="JSON",
                   help="data on an object store: fsspec storage options to read it there (credentials, "
                        "client_kwargs), so compressors are estimated on a sample of it")
    p.add_argument("--endpoint-url", metavar="URL", help="data on an object store: the S3 endpoint")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML report: table, access map, cost chart, glossary")
    add_quiet_option(p)
    p.set_defaults(func=run)


def _world_comm():
    """MPI_COMM_WORLD when this process is one of several ranks of an MPI launcher, else None."""
    from instrumentation.extras import require
    from instrumentation.mpi import rank_size

    if rank_size()[1] <= 1:
        return None
    require("mpi4py", "advise across the ranks of an MPI launcher")
    from mpi4py import MPI

    return MPI.COMM_WORLD


def run(args) -> int:
    from advisor import progress

    if args.top < 1:
        raise InputError(f"--top must be >= 1, got {args.top}")
    if args.procs is not None and args.procs < 1:
        raise InputError(f"--procs must be >= 1, got {args.procs}")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    with progress.task("advise") as bar:  # from the start: the imports below take a second on a busy machine
        bar.describe("loading the models")
        from advisor.api import MODELS_FAILED, AdviseOptions, advise
        from instrumentation.tracefile import load_trace
        from iomodel import load_profile
        from iomodel.probe import check_machine
        from iomodel.layout import parse_bytes

        comm = _world_comm()
        compressors = None
        if args.compressors is not None:
            compressors = [c.strip() for c in args.compressors.split(",") if c.strip()]
        with progress.compiling():
            bar.describe("loading the trace")
            # the report's access map reads it too
            trace = load_trace(args.trace, allow_truncated=args.allow_truncated, step=bar.set)
            if not args.target:  # arrays on an object store: advised on that store (advisor.objectstore)
                from .advise_store import advise_on_stores

                trace = advise_on_stores(trace, args)
                if trace is None:
                    return 0
            options = AdviseOptions(
                dataset=args.dataset, objective=args.objective, max_seconds=args.max_seconds,
                max_bytes=None if args.max_bytes is None else parse_bytes(args.max_bytes, "--max-bytes"),
                max_error=args.max_error, lossless_only=args.lossless_only, compressors=compressors,
                libraries=[x.strip() for x in args.libraries.split(",") if x.strip()], top=args.top,
                allow_truncated=args.allow_truncated, read_data=not args.no_data, procs=args.procs,
                calibrate=not args.no_calibrate, jobs=args.jobs,
                cache_budget=None if args.cache_budget.strip().lower() == "none"
                else parse_bytes(args.cache_budget, "--cache-budget"),
            )
            adv = advise(trace, options, profile=args.profile, comm=comm)
    if comm is not None and comm.Get_rank() != 0:
        return 0  # every rank holds the same advice; rank 0 reports it
    if args.html:
        from advisor.report import write_report

        write_report(adv, args.html, trace=trace)
    if args.json:
        print(adv.to_json())
    else:
        sys.stdout.write(str(adv))
        if args.html:
            print(f"report: {args.html}")
    note = check_machine(load_profile(args.profile), args.profile or "the default profile")
    if note:
        print(note, file=sys.stderr)
    failed = [n for n in adv.not_advised if n.reason.startswith(MODELS_FAILED)]
    if failed and not adv.datasets:  # not an answer: the models could not run on any of them
        print(f"ioadvisor advise: error: the models failed on all {len(failed)} advisable datasets "
              f"(first: {failed[0].name}: {failed[0].reason})", file=sys.stderr)
        return 1
    return 0
