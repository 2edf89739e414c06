"""Fixed cost of one call into the replay kernel: microseconds per ``Replay.feed`` of one access.

Run: python -m benchmarks.speed.iomodel_percall [--calls N] [--repeat R]
``count_variables`` feeds once per run of one array's consecutive rows, so a trace that alternates between
arrays (``others``) pays this on every access; it is mostly numba typing the arguments. Per layout (HDF5
chunk cache; zarr shards), one single-row read (8 chunk visits) is fed ``--calls`` times, ``--repeat`` times;
the median of the per-feed CPU times (``time.process_time``: the machine is shared) is printed. The page
cache's arrays grow by each feed's bound until they reach the cache's (``SharedPageCache.reserve``, about 1,100
feeds for the shards here), and each growth copies them: the first ``--warm`` feeds, untimed, get past that.
"""
from __future__ import annotations

import argparse
import statistics
import time

from instrumentation.columns import as_columns
from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.chunks import trace_visits
from iomodel.layout import Layout
from iomodel.variables import Replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warm", type=int, default=2000, help="untimed feeds first (default 2000)")
    args = ap.parse_args()
    ds = DatasetRecord(0, "hdf5", "2.0", "f", "/x", (100_000, 64), "float32", chunks=(1000, 8))
    cols = as_columns([AccessRecord(0, "read", Selection.box((5, 0), (1, 64)), 64, 256, 0.0, 0.0)])
    layouts = {"hdf5 chunk cache": Layout.from_dataset(ds),
               "zarr shards": Layout("zarr", ds.shape, 4, (1000, 8), shards=(10_000, 64))}
    for name, lay in layouts.items():
        replay = Replay(ds, lay, 1 << 26)
        visits = trace_visits(cols, lay)
        for _ in range(max(1, args.warm)):  # compile / load the kernel, grow the page cache to its bound
            replay.feed(cols, visits)
        per = []
        for _ in range(args.repeat):
            t = time.process_time()
            for _ in range(args.calls):
                replay.feed(cols, visits)
            per.append((time.process_time() - t) / args.calls * 1e6)
        print(f"{name:18} {statistics.median(per):8.1f} us per feed (1 access, {len(visits)} chunk visits)")


if __name__ == "__main__":
    main()
