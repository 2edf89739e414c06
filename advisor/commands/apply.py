"""``ioadvisor apply TRACE --out DEST``: rewrite the traced file into the advised layout (``advisor.apply``)."""
from __future__ import annotations

import json
import os
import signal
import sys

from instrumentation import settings

from . import add_profile_option


def register(sub) -> None:
    p = sub.add_parser("apply", help="copy the traced file into the advised layout, verified, resumable")
    p.add_argument("trace", help="trace from `ioadvisor run` / advisor.trace()")
    p.add_argument("--out", metavar="DEST", help="new .h5/.nc file or .zarr store (its library must match the advice)")
    p.add_argument("--in-place", action="store_true",
                   help="replace the traced file once the copy is verified (the original is kept as "
                        "FILE.ioadvisor-backup unless --no-backup)")
    p.add_argument("--no-backup", action="store_true", help="with --in-place: delete the original")
    p.add_argument("--dataset", action="append", default=[], metavar="NAME",
                   help="only these datasets take a new layout (repeatable; the rest is copied as it is)")
    p.add_argument("--layout", action="append", default=[], metavar="SPEC",
                   help="override the advice, predict's syntax plus codec=NAME|none and error=abs:X|rel:Y, "
                        "e.g. hdf5:chunks=1460x8x8,codec=lz4 or zarr:chunks=64x64,shards=512x512")
    p.add_argument("--max-memory", default="1GiB", metavar="BYTES", help="memory for data blocks (default 1GiB)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel blocks (Zarr destinations) / dask workers")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on dask.distributed: a scheduler address, or 'local' for a local cluster")
    p.add_argument("--max-error", metavar="abs:X|rel:Y", help="advice: allow lossy compressors with this bound")
    p.add_argument("--lossless-only", action="store_true", help="advice: never a lossy compressor")
    p.add_argument("--storage-options", metavar="JSON",
                   help="--out s3://bucket/new.zarr (or traced data on a store): fsspec storage options to reach it")
    p.add_argument("--endpoint-url", metavar="URL", help="the S3 endpoint of --out s3://...")
    add_profile_option(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


class _Bar:
    """A rich progress bar (bytes, rate, ETA) on a terminal; nothing otherwise."""

    def __init__(self, enabled: bool):
        self.progress = None
        self.task = None
        if enabled:
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                       TransferSpeedColumn)

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                     TransferSpeedColumn(), TimeRemainingColumn(), console=None, transient=True)

    def start(self, total: int, done: int) -> None:
        if self.progress is not None:
            self.progress.start()
            self.task = self.progress.add_task("apply", total=total, completed=done)

    def advance(self, label: str, nbytes: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, advance=nbytes, description=label)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _leave(line: str, status: int) -> None:
    """One line, then exit at once: h5py objects of a failed write (a full disk) flush again when collected
    at exit and print "Exception ignored" tracebacks; the journal, not those handles, holds what is done."""
    print(f"ioadvisor apply: {line}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run(args) -> int:
    import warnings

    from advisor.apply import ApplyOptions, apply
    from iomodel.layout import parse_bytes

    # the user asked for this codec by name (advice or --layout): zarr's warning that numcodecs codecs are
    # outside the Zarr 3 spec would only add lines before the summary or the one-line error
    warnings.filterwarnings("ignore", message="Numcodecs codecs are not in the Zarr version 3 specification")

    advise_kwargs = {"profile": args.profile}
    if args.max_error:
        advise_kwargs["max_error"] = args.max_error
    if args.lossless_only:
        advise_kwargs["lossless_only"] = True
    from .advise_store import store_options

    options = ApplyOptions(out=args.out, datasets=tuple(args.dataset), layouts=tuple(args.layout),
                           max_memory=parse_bytes(args.max_memory, "--max-memory"), jobs=args.jobs,
                           scheduler=args.scheduler, in_place=args.in_place, backup=not args.no_backup,
                           advise_kwargs=advise_kwargs,
                           storage_options=store_options(args.storage_options, args.endpoint_url))
    bar = _Bar(sys.stderr.isatty() and not args.json)
    # SIGTERM as SIGINT: the partial copy and journal stay for a rerun, the final name stays untouched
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        result = apply(args.trace, options, progress=bar.advance, on_start=bar.start)
    except KeyboardInterrupt:
        bar.stop()
        _leave("interrupted; run the same command again to resume", 130)
    except Exception as exc:  # noqa: BLE001  (h5py/zarr/codec errors: RuntimeError, TypeError, ...)
        bar.stop()
        if settings.debug():
            raise
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        _leave(f"error: {msg}", 2)
    finally:
        bar.stop()
    print(json.dumps(result.get_config()) if args.json else result.table())
    return 0
