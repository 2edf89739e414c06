"""Where a triage rerun's time goes beyond a rerun with nothing new: the log reader server's start, reading the
new logs, judging them, and what slicing them into batches costs.

The new logs are every 100th log of the archive (the +1% of benchmarks/speed/triage.py's rerun), read as the
command's in-process path reads them (``summarize_batch``: hashing, one reader child per batch, judging).
Wall seconds, medians of ``--reps``, one process (the server kept warm between the reads):

- the reader server's start: ``python -m instrumentation.darshan_raw`` run to its end with nothing to read (a
  Python start, numpy and pydarshan imported, pydarshan's example log read once);
- reading the new logs, in one batch (``read_raw_many``);
- reading and judging them in one batch, and in guided slices (``batches(todo, 1)``, as a cluster's tasks are cut).

Also says whether this process imported pandas (a rerun should not: docs/triage.md, "Reruns").

    python -m benchmarks.investigations.triage_rerun [ARCHIVE] [--reps 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from advisor.triage import RowOptions, discover  # noqa: E402
from advisor.triage.run import BATCH, batches, summarize_batch  # noqa: E402
from benchmarks.speed.triage import CACHE  # noqa: E402
from instrumentation.darshan_raw import read_raw_many, start_reader  # noqa: E402


def server_start() -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "instrumentation.darshan_raw"], stdin=subprocess.DEVNULL, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archive", nargs="?", default=str(CACHE / "triage-archive"))
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    logs, _ = discover([args.archive])
    new = [(lf.path, lf.size, lf.mtime) for lf in logs[::100]]
    opts = RowOptions()
    start_reader()
    summarize_batch(new[:2], opts)  # the server started, the judging's modules imported
    measures: dict[str, list[float]] = {}

    def timed(name: str, fn) -> None:
        t = time.perf_counter()
        fn()
        measures.setdefault(name, []).append(time.perf_counter() - t)

    slices = batches(new, 1)
    for _ in range(args.reps):
        timed("reader server start (a process of its own)", server_start)
        timed(f"read {len(new)} logs, one batch", lambda: read_raw_many([p for p, _, _ in new]))
        timed(f"read and judge {len(new)} logs, one batch", lambda: [summarize_batch(b, opts)
                                                                     for b in batches(new, 1, BATCH)])
        timed(f"read and judge {len(new)} logs, {len(slices)} guided slices",
              lambda: [summarize_batch(b, opts) for b in slices])
    print(f"archive {args.archive}: {len(logs):,} logs, {len(new)} new; load average {os.getloadavg()}")
    for name, xs in measures.items():
        print(f"| {name} | {statistics.median(xs) * 1000:.0f} ms | ({', '.join(f'{x * 1000:.0f}' for x in xs)})")
    print(f"pandas imported by this process: {'pandas' in sys.modules}; load average at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
