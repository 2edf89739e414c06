"""The virtual Zarr reference against h5py through fsspec (issue #35; ``benchmarks/validation/objectstore.py
reference``).

The h5py minibatch workload's HDF5 file on SeaweedFS, read as it is (``h5py.File(fs.open(url))``, fsspec's default
read-ahead) and through a kerchunk reference beside it (``advisor.objectstore_reference``: zarr reading each chunk's
byte range of the same file). At each added latency the workload is traced in the current layout, the advice prices
both (``advisor.objectstore``, the store model fitted as ``calibrate --store --quick`` fits it), and both run for
real, latencies and variants interleaved, median of ``repeat`` runs.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

MiB = 2**20


def run_reference(server, proxy, delays, *, scale: float = 1.0, repeat: int = 3) -> dict:
    from advisor.objectstore_reference import REFERENCE
    from benchmarks.validation.objectstore_workloads import (build, models_by_delay, run_once, trace_and_advise,
                                                             workloads)

    from advisor.objectstore import StoreLayout

    workdir = Path(tempfile.mkdtemp(prefix="objstore-ref-"))
    opts = server.storage_options(proxy.url)
    models = models_by_delay(server, proxy, delays, "bench-ref")
    name, fn, data, start = next(w for w in workloads(scale) if w[1].__name__ == "minibatches")
    ref = StoreLayout(REFERENCE, start.chunks, cache_type="none")  # as advisor.objectstore.candidates makes it
    urls = {start: "s3://bench-ref/now.h5", ref: "s3://bench-ref/ref.h5"}
    for layout, url in urls.items():
        build(layout, data, url, server.storage_options())
    print(f"{name}: {data.nbytes / MiB:.0f} MiB", file=sys.stderr, flush=True)
    predicted = {}
    for delay in delays:
        proxy.delay = delay
        for layout, url in urls.items():  # one untimed run each: the store serves first reads after a write slower
            run_once(fn, layout, url, opts)
        stores = {f"127.0.0.1:{proxy.port}/bench-ref": models[delay]}
        advice, _, _ = trace_and_advise(fn, start, urls[start], opts, workdir, stores, top=1000)
        by_layout = {c.layout: c for c in advice.ranked}
        predicted[delay] = (advice.current.seconds, by_layout[ref].seconds, advice.recommendation.layout.describe(),
                            advice.traced_seconds, by_layout[ref].requests, advice.current.requests)
    times: dict = {}
    for _ in range(repeat):
        for delay in delays:
            proxy.delay = delay
            for layout, url in urls.items():
                times.setdefault((delay, layout), []).append(run_once(fn, layout, url, opts))
    rows = []
    for delay in delays:
        now, via_ref = (statistics.median(times[(delay, lay)]) for lay in (start, ref))
        p_now, p_ref, recommended, traced, n_ref, n_now = predicted[delay]
        rows.append(dict(workload=name, delay_ms=delay * 1e3, mib=data.nbytes / MiB, current=start.describe(),
                         measured_current=now, measured_reference=via_ref, predicted_current=p_now,
                         predicted_reference=p_ref, traced_current=traced, requests_current=n_now,
                         requests_reference=n_ref, claimed=p_now / p_ref, measured_gain=now / via_ref,
                         claim_ratio=(p_now / p_ref) / (now / via_ref), recommended=recommended))
        print(rows[-1], file=sys.stderr, flush=True)
    return dict(rows=rows, models={f"{d * 1e3:.0f} ms": m.get_config() for d, m in models.items()})


def reference_table(result: dict) -> str:
    out = ["| added latency | measured h5py+fsspec / reference (s) | predicted (s) | requests predicted |"
           " claimed / measured speed-up of the reference | advice's first |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['delay_ms']:.0f} ms | {r['measured_current']:.3f} / {r['measured_reference']:.3f} | "
                   f"{r['predicted_current']:.3f} / {r['predicted_reference']:.3f} | "
                   f"{r['requests_current']} / {r['requests_reference']} | "
                   f"{r['claimed']:.2f}x / {r['measured_gain']:.2f}x ({r['claim_ratio']:.2f}) | {r['recommended']} |")
    return "\n".join(out)
