"""Throughput, memory, rerun cost and a 1,000,000-log estimate of ``ioadvisor triage`` (advisor.triage).

    .venv/bin/python -m benchmarks.speed.triage [ARCHIVE] [--reps 2] [--limit N] [--rerun-only]

ARCHIVE: made by benchmarks/speed/triage_archive.py (default ``$CACHE/triage-archive``). Measured through the public
API (``advisor.triage.triage``) with what a user passes:
1. logs/s with 1 and 2 workers, interleaved (1, 2, 1, 2, ...), each into a fresh summary; the cluster is
   started before the clock (as a site's running cluster would be: ``scheduler=`` its address); the local
   cluster's own start-up is timed apart;
2. peak memory per worker: each worker's peak RSS (VmHWM) plus its log reader process's;
3. a rerun after the archive grew by 1%, through the command a nightly cron job runs (``ioadvisor triage
   ARCHIVE --out S``, default local cluster): the archive is a directory of links to 99% of the logs for the
   first run, then to all of them; also a rerun with nothing new;
4. the 1,000,000-logs-on-64-workers estimate from the measured worker seconds per log, the scheduler's
   overhead per task (no-op tasks timed), the client's cost per log (Parquet append, per-application table
   and catalog updates).
Prints a table (docs/triage.md keeps the reference one) and the machine's load average.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from advisor.triage import RowOptions, TriageOptions, discover, load, triage  # noqa: E402
from advisor.triage.apps import aggregate  # noqa: E402
from advisor.triage.run import BATCH  # noqa: E402

CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor"))


def _peak_kib() -> dict:
    """Run on a worker: its peak RSS and its log reader process's (KiB)."""
    import psutil

    def hwm(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/status") as fh:
                return next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM"))
        except (OSError, StopIteration):
            return 0

    me = psutil.Process()
    return {"worker": hwm(me.pid), "reader": sum(hwm(c.pid) for c in me.children(recursive=True))}


def _noop(x):
    return x


def scheduler_overhead(client, n: int = 2000) -> float:
    """Seconds per task of no-op tasks through the scheduler (submit to result), the workers busy with nothing."""
    t = time.perf_counter()
    futures = client.map(_noop, range(n), pure=False)
    client.gather(futures)
    return (time.perf_counter() - t) / n


def client_cost(summary: str, tmp: Path) -> float:
    """The client's serial seconds per log: appending its row (received in batches, written 5000 at a time;
    the content hash is the worker's), folding it into the per-application table, adding it to the catalog."""
    from advisor.triage.apps import Applications
    from advisor.triage.store import CATALOG_COLUMNS, Appender, Catalog

    rows = load(summary).drop(columns=["month"]).to_dict("records")[: 2000]
    for r in rows:
        r["start_time"] = r["start_time"].timestamp()
        r["findings"] = list(r["findings"])
    out = str(tmp / "append.parquet")
    app, apps, catalog = Appender(out), Applications(), Catalog(out)
    t = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        app.write(rows[i:i + BATCH])
        apps.add(rows[i:i + BATCH])
    app.flush()
    catalog.add([{k: r[k] for k in CATALOG_COLUMNS} for r in rows], app.written)
    catalog.save()
    apps.write(str(tmp / "append.apps.parquet"), catalog.covers)
    return (time.perf_counter() - t) / max(len(rows), 1)


def cli(*args) -> float:
    """Seconds of one ``ioadvisor triage`` command, as a user (or cron) runs it: Python caches the modules'
    bytecode, as it does in a user's environment (this sandbox sets PYTHONDONTWRITEBYTECODE, which would make
    every run compile the modules it imports again, about 0.3 s a process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "ioadvisor"), "triage", *map(str, args)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def link_all(files: list[str], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for f in files:
        dest = into / f.replace(os.sep, "_")
        if not dest.exists():
            dest.symlink_to(f)


def run_once(files: list[str], workers: int, out: str) -> dict:
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit="1GiB", dashboard_address=None) as cl, \
            Client(cl) as client:
        opts = TriageOptions(out=out, scheduler=cl.scheduler_address, rows=RowOptions())
        t, cpu = time.perf_counter(), time.process_time()
        res = triage(files, opts)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        peaks = client.run(_peak_kib)
        sched = scheduler_overhead(client)
    return {"workers": workers, "logs": res.new, "wall": wall, "rate": res.new / wall, "bad": len(res.bad),
            "worker_s_per_log": res.read_seconds / max(res.new, 1), "sched_s_per_task": sched,
            "client_cpu_share": cpu / wall,
            "peak_mib": max((p["worker"] + p["reader"]) / 1024 for p in peaks.values()),
            "peak_worker_mib": max(p["worker"] / 1024 for p in peaks.values()),
            "peak_reader_mib": max(p["reader"] / 1024 for p in peaks.values())}


def quiet() -> None:
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)


def main() -> int:
    quiet()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archive", nargs="?", default=str(CACHE / "triage-archive"))
    ap.add_argument("--reps", type=int, default=2, help="interleaved runs per worker count")
    ap.add_argument("--limit", type=int, default=0, help="the 1-vs-2-worker runs use every k-th log, N in all "
                    "(0: all); the rerun measure always uses the whole archive")
    ap.add_argument("--rerun-only", action="store_true", help="only the rerun measure (a piece of the benchmark)")
    args = ap.parse_args()
    logs, _ = discover([args.archive])
    all_files = [lf.path for lf in logs]
    step = max(len(all_files) // args.limit, 1) if args.limit else 1
    files = all_files[::step][: args.limit or None]
    print(f"archive {args.archive}: {len(all_files):,} logs ({len(files):,} in the 1-vs-2-worker runs); "
          f"load average {os.getloadavg()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    try:
        from dask.distributed import LocalCluster

        t = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None):
            startup = time.perf_counter() - t
        rows = []
        for rep in range(0 if args.rerun_only else args.reps):
            for w in (1, 2):
                r = run_once(files, w, str(tmp / f"s{w}-{rep}.parquet"))
                rows.append(r)
                print(f"  rep {rep} workers {w}: {r['logs']:,} logs in {r['wall']:.1f} s = {r['rate']:.1f} logs/s, "
                      f"{r['worker_s_per_log'] * 1000:.1f} ms worker time per log, peak {r['peak_mib']:.0f} MiB "
                      f"(worker {r['peak_worker_mib']:.0f} + reader {r['peak_reader_mib']:.0f}), {r['bad']} bad; client and "
                      f"scheduler busy {100 * r['client_cpu_share']:.0f}% of a core; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        # rerun: 99% first, then the whole archive, through the command
        held = set(all_files[:: 100])
        grown = tmp / "archive"
        link_all([f for f in all_files if f not in held], grown)
        out = str(tmp / "grow.parquet")
        cli(grown, "--out", str(tmp / "warm.parquet"), "--workers", "2")  # writes the bytecode caches
        first_s = cli(grown, "--out", out, "--workers", "2")
        first_n = len(load(out, ["status"]))
        link_all(sorted(held), grown)
        reruns, nothings = [], []
        for k in range(args.reps):  # each from a copy of the first run's summary, catalog and table
            again = str(tmp / f"again{k}.parquet")
            for suffix in ("", ".apps", ".catalog"):
                src, dest = out[:-len(".parquet")] + suffix + ".parquet", again[:-len(".parquet")] + suffix + ".parquet"
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dest)
            reruns.append(cli(grown, "--out", again, "--workers", "2"))
            nothings.append(cli(grown, "--out", again, "--workers", "2"))
        rerun, nothing_new, out = statistics.median(reruns), statistics.median(nothings), again
        n_rows = len(load(out, ["status"]))
        rerun_rows = [
            f"| first run, {first_n:,} logs (99%): `ioadvisor triage ARCHIVE --out S --workers 2` | {first_s:.1f} s | |",
            f"| rerun after +1% ({n_rows - first_n} new of {n_rows:,}), the same command (median of {args.reps}: "
            f"{', '.join(f'{x:.2f}' for x in reruns)}) | {rerun:.2f} s = {100 * rerun / first_s:.1f}% of the first "
            "run | < 5% |",
            f"| rerun with nothing new, the same command (median of {args.reps}) | {nothing_new:.2f} s | |"]
        if args.rerun_only:
            print("\n| measure | value | target |\n|---|---|---|\n" + "\n".join(rerun_rows))
            print(f"load average at the end {os.getloadavg()}")
            return 0
        rate = {w: statistics.median(r["rate"] for r in rows if r["workers"] == w) for w in (1, 2)}
        t = time.perf_counter()
        aggregate(out, str(tmp / "apps.parquet"))
        agg_per_log = (time.perf_counter() - t) / n_rows
        per_log = statistics.median(r["worker_s_per_log"] for r in rows)
        sched = statistics.median(r["sched_s_per_task"] for r in rows)
        client_per_log = client_cost(out, tmp)
        n, w = 1_000_000, 64
        work = n * per_log / w
        serial = n / BATCH * sched + n * client_per_log
        print("\n| measure | value | target |")
        print("|---|---|---|")
        print(f"| logs/s, 1 worker (median of {args.reps}) | {rate[1]:.1f} | >= 10 |")
        print(f"| logs/s, 2 workers (median of {args.reps}) | {rate[2]:.1f} | >= 10 |")
        print(f"| 2 workers / 1 worker | {rate[2] / rate[1]:.2f}x | >= 1.7x |")
        print(f"| peak memory per worker (worker + its log reader), max over runs | "
              f"{max(r['peak_mib'] for r in rows):.0f} MiB | < 1 GB |")
        print("\n".join(rerun_rows))
        print(f"| local cluster start-up (2 workers) | {startup:.1f} s | |")
        print(f"| worker seconds per log (median; 1 worker / 2 workers) | {per_log * 1000:.1f} ms "
              f"({statistics.median(r['worker_s_per_log'] for r in rows if r['workers'] == 1) * 1000:.1f} / "
              f"{statistics.median(r['worker_s_per_log'] for r in rows if r['workers'] == 2) * 1000:.1f}) | |")
        print(f"| client and scheduler process busy (median; 1 worker / 2 workers), share of one core | "
              f"{100 * statistics.median(r['client_cpu_share'] for r in rows if r['workers'] == 1):.0f}% / "
              f"{100 * statistics.median(r['client_cpu_share'] for r in rows if r['workers'] == 2):.0f}% | |")
        print(f"| scheduler overhead per task (no-op tasks) | {sched * 1000:.2f} ms | |")
        print(f"| client seconds per log (Parquet append, application table, catalog) | {client_per_log * 1000:.2f} ms | |")
        print(f"| per-application table rebuilt from the whole summary (only after a stopped run), per log | "
              f"{agg_per_log * 1000:.3f} ms | |")
        print(f"| 1,000,000 logs on 64 workers (estimate) | {work + serial:.0f} s = {(work + serial) / 60:.1f} min: "
              f"{work:.0f} s of reading on 64 workers + {n / BATCH * sched:.0f} s scheduler "
              f"({n // BATCH:,} tasks) + {n * client_per_log:.0f} s client, "
              "added up (the client's and the scheduler's parts are serial; they overlap the reading in fact) | |")
        print(f"load average at the end {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
