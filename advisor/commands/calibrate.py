"""``ioadvisor calibrate [--quick] [-o PROFILE] [--skip-compression]``: measure this machine.

Runs the I/O microbenchmarks (``iomodel.calibrate``) and, unless skipped, the
compression calibration (``compression_model.calibrate``), then writes one
profile file ``{"schema": 1, "machine", "io", "compression", "calibration"}``.
Progress and the fit quality per term go to stderr; the profile path to stdout.
"""
from __future__ import annotations

import sys
import time

from instrumentation import settings
from instrumentation.extras import MissingExtra, installed, missing
from iomodel.calibrate import calibrate, write_profile
from iomodel.profile import user_profile_path

from . import add_quiet_option


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="measure this machine: fit the I/O (and compression) cost coefficients")
    p.add_argument("--quick", action="store_true", help="small grid, one repetition (a few minutes)")
    p.add_argument("-o", "--output", default=None, metavar="PROFILE",
                   help=f"profile file to write (default: this machine's, ${settings.PROFILE} or "
                        "~/.config/ioadvisor/profile.json, used from then on when no --profile is given)")
    p.add_argument("--skip-compression", action="store_true", help="do not calibrate the compression model")
    p.add_argument("--workdir", default=None, help="directory for the benchmark files (default: /tmp)")
    p.add_argument("--store", default=None, metavar="URL",
                   help="fit the object-store model of this store instead (s3://bucket/prefix: a scratch prefix "
                        "under it is written, measured and removed); the profile keeps one model per store")
    p.add_argument("--endpoint-url", default=None, metavar="URL", help="with --store: the S3 endpoint (e.g. MinIO)")
    p.add_argument("--storage-options", default=None, metavar="JSON",
                   help="with --store: fsspec storage options as JSON (credentials come from the environment "
                        "unless given here; they are never written to the profile)")
    add_quiet_option(p)
    p.set_defaults(func=run)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _step(bar, what: str):
    """A ``step(done, total)`` callback moving ``bar``."""
    def step(done: int, total: int) -> None:
        bar.describe(what)
        bar.set(done, total)
    return step


def run(args) -> int:
    from advisor import progress
    from compression_model.calibrate import calibrate as calibrate_compression

    args.output = args.output or str(user_profile_path())
    if args.store:
        from .calibrate_store import run_store

        return run_store(args)
    if not args.skip_compression and not installed("hdf5plugin"):  # said before the I/O section's minutes
        raise MissingExtra(f"{missing('hdf5plugin', 'calibrating the HDF5 filters')}, or give --skip-compression")
    t0 = time.perf_counter()
    _log(f"I/O calibration ({'quick' if args.quick else 'full'} grid)")
    with progress.task("I/O calibration") as bar, progress.compiling():
        bar.describe("page cache and device probes")
        result = calibrate(args.quick, workdir=args.workdir, progress=_log, step=_step(bar, "cases"))
    # the I/O section is kept even if the compression step fails or is interrupted
    write_profile(args.output, result)
    if not args.skip_compression:
        _log(f"I/O section written to {args.output}; compression calibration")
        with progress.task("compression calibration") as bar:
            compression = calibrate_compression(quick=args.quick, progress=_log,
                                                step=_step(bar, "fields x chunkings")).get_config()
        write_profile(args.output, result, compression)
    _log(f"done in {time.perf_counter() - t0:.0f}s")
    print(args.output)
    return 0
