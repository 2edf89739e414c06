"""``ioadvisor calibrate --store s3://bucket/prefix``: fit the object-store model of one store
(``iomodel.objectstore_calibrate``) and keep it in the profile's ``stores`` section beside the others."""
from __future__ import annotations

import json
import sys


def _fail(msg: str) -> int:
    print(f"ioadvisor calibrate: {msg}", file=sys.stderr)
    return 2


def run_store(args) -> int:
    from iomodel.objectstore import StoreProfileError, save_store, store_key
    from iomodel.objectstore_calibrate import StoreTarget, calibrate_store

    if "://" not in args.store or args.store.startswith("file://"):
        return _fail(f"--store {args.store}: not an object-store URL (s3://bucket/prefix)")
    try:
        options = json.loads(args.storage_options) if args.storage_options else {}
    except json.JSONDecodeError as exc:
        return _fail(f"--storage-options: not JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(options, dict):
        return _fail("--storage-options: must be a JSON object")
    if args.endpoint_url:
        options.setdefault("client_kwargs", {})["endpoint_url"] = args.endpoint_url
    target = StoreTarget(args.store, options)
    print(f"object-store calibration of {args.store} ({'quick' if args.quick else 'full'} grid)", file=sys.stderr)
    try:
        model, points = calibrate_store(target, quick=args.quick, repeat=1 if args.quick else 2,
                                        progress=lambda i, n: print(f"  {i}/{n}", file=sys.stderr, end="\r"))
    except ImportError as exc:
        return _fail(f"--store needs the fsspec client of {args.store.split(':', 1)[0]}:// ({exc})")
    except (OSError, ValueError, PermissionError) as exc:
        return _fail(f"--store {args.store}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    key = store_key(target.host, args.store)
    try:
        save_store(args.output, key, model)
    except StoreProfileError as exc:
        return _fail(str(exc))
    print(f"\n{key}: time to first byte {model.ttfb * 1e3:.1f} ms, {model.request_bandwidth / 1e6:.0f} MB/s per "
          f"request, {model.aggregate_bandwidth / 1e6:.0f} MB/s in all, {model.request_cpu * 1e3:.2f} ms client per "
          f"request, pool {model.max_inflight}; median |error| {model.fitted['median_abs_error']:.0%} on "
          f"{len(points)} points", file=sys.stderr)
    print(args.output)
    return 0
