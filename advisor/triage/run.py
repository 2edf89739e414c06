"""Triage a Darshan archive on dask.distributed: new logs only, in batches, into the month-partitioned summary.

    from advisor.triage import TriageOptions, triage
    result = triage(["/darshan-logs/2026"], TriageOptions(out="summary.parquet", workers=2))

A local cluster by default (``workers`` processes, one thread each, ``memory_limit`` each: the nanny
restarts a worker that goes over it); ``scheduler`` connects to a site's cluster instead (dask-jobqueue's
clusters give such an address). Logs go to the workers in batches of ``batch`` (one task per batch: the
scheduler's overhead per task is paid once per batch). A batch whose worker died (killed, out of memory) is
retried log by log, so only the log that kills a worker is lost, and it is listed as bad with the reason.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

from instrumentation.darshan_raw import start_reader

from .apps import Applications, aggregate
from .logrow import RowOptions, content_hash, summarize_many
from .store import CATALOG_COLUMNS, Appender, Catalog, LogFile, apps_path, discover

BATCH = 200
"""Most logs per task: a few seconds of work (benchmarks/speed/triage.py measures the per-log cost), so the
scheduler's overhead per task (milliseconds, also measured there) is paid once per 200 logs."""
MIN_BATCH = 10
TASKS_PER_WORKER = 4
"""Guided batches: each batch is the logs left over this many times the workers (at most ``BATCH``, at least
``MIN_BATCH``), so the batches shrink towards the end and the workers finish together (a worker that draws
the last big batch would otherwise run alone while the other waits)."""
IN_PROCESS_MAX = 500
"""At most this many new logs are read in the calling process, without starting a local cluster: a local
cluster's start (seconds: benchmarks/triage.py) costs more than a second worker saves on fewer logs than
that (a nightly rerun over an archive that grew by 1%)."""


@dataclass(frozen=True)
class TriageOptions:
    out: str
    scheduler: str | None = None
    workers: int = 2
    memory_limit: str = "1GiB"
    batch: int = 0
    """Logs per task; 0: about TASKS_PER_WORKER tasks per worker, MIN_BATCH to BATCH logs each."""
    rows: RowOptions = RowOptions()
    html: str | None = None
    in_process: int = IN_PROCESS_MAX
    """Without ``scheduler``: at most this many new logs are read here, no cluster started (0: always one)."""


@dataclass(frozen=True)
class TriageResult:
    found: int
    new: int
    """Logs of new content this run added to the summary."""
    skipped: int
    """Logs already in the summary: same path, size and time (not read), or same content (read, not added)."""
    ok: int
    no_io: int
    bad: list[tuple[str, str]] = field(default_factory=list)
    """(path, one-line reason) of this run's unreadable logs."""
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0
    read_seconds: float = 0.0
    """The work itself: summed over logs (what a worker spent reading and judging them)."""
    apps: str = ""


def summarize_batch(batch: list[tuple[str, int, float]], opts: RowOptions) -> list[dict]:
    """A dask task: the rows of a batch of (path, size, mtime); never raises for a bad log."""
    start_reader()  # its start (importing pydarshan) overlaps the hashing
    items = []
    for path, _, _ in batch:
        try:
            items.append((path, content_hash(path)))
        except OSError as exc:
            items.append((path, f"unreadable:{path}:{exc.strerror}"))
    rows = summarize_many(items, opts)
    return [{**row, "size": size, "mtime": mtime} for row, (_, size, mtime) in zip(rows, batch)]


def plan(logs: list[LogFile], catalog: Catalog) -> tuple[list[tuple[str, int, float]], int, set[str]]:
    """The logs to read (not seen at this path with this size and time), how many were skipped, and the
    content hashes already summarized (a log copied under a new name is read, then dropped as known)."""
    hashes, stats = catalog.known()
    todo = [(lf.path, lf.size, lf.mtime) for lf in logs if (lf.path, lf.size, lf.mtime) not in stats]
    return todo, len(logs) - len(todo), hashes


def batches(todo: list, n_workers: int, batch: int = 0) -> list[list]:
    """``todo`` cut into tasks: ``batch`` logs each, or guided (see ``TASKS_PER_WORKER``)."""
    out, i = [], 0
    while i < len(todo):
        size = batch or min(BATCH, max(MIN_BATCH, math.ceil((len(todo) - i) / (n_workers * TASKS_PER_WORKER))))
        out.append(todo[i:i + size])
        i += size
    return out


def _client(opts: TriageOptions):
    from dask.distributed import Client, LocalCluster

    if opts.scheduler:
        return Client(opts.scheduler), None
    cluster = LocalCluster(n_workers=opts.workers, threads_per_worker=1, processes=True,
                           memory_limit=opts.memory_limit, dashboard_address=None)
    return Client(cluster), cluster


def triage(archives: list[str], opts: TriageOptions, progress=None) -> TriageResult:
    """Summarize the archive's new logs into ``opts.out`` and rewrite the per-application table."""
    t0 = time.perf_counter()
    if not opts.scheduler and opts.in_process:
        start_reader()  # ready when few new logs are read here; it overlaps the walk and the catalog
    logs, missing = discover(archives)
    catalog = Catalog(opts.out)
    todo, skipped, hashes = plan(logs, catalog)
    apps_file = apps_path(opts.out)
    apps = Applications.read(apps_file, catalog.covers)  # None: made again from the whole summary below
    counts = {"ok": 0, "no-io": 0}
    bad: list[tuple[str, str]] = []
    read_seconds = 0.0
    appender = Appender(opts.out)
    copies = 0
    added: list[dict] = []

    def take(rows: list[dict]) -> None:
        nonlocal read_seconds, copies
        fresh = [r for r in rows if r["content_hash"] not in hashes]
        copies += len(rows) - len(fresh)
        hashes.update(r["content_hash"] for r in fresh)
        appender.write(fresh)
        added.extend({k: r[k] for k in CATALOG_COLUMNS} for r in fresh)
        if apps is not None:
            apps.add(fresh)
        for r in fresh:
            read_seconds += r["read_seconds"]
            if r["status"] == "bad":
                bad.append((r["path"], r["reason"]))
            else:
                counts[r["status"]] += 1
        if progress is not None:
            progress(len(rows))

    if todo and not opts.scheduler and len(todo) <= opts.in_process:
        for batch in batches(todo, 1, BATCH):  # few new logs: read here, no cluster to start; whole batches,
            # as each costs a reader child's start (guided slices are for spreading work over workers)
            take(summarize_batch(batch, opts.rows))
    elif todo:
        _run(todo, opts, take)
    appender.flush()
    catalog.add(added, appender.written)
    catalog.save()
    if apps is None:
        aggregate(opts.out, apps_file)
    elif appender.written or not os.path.exists(apps_file):
        apps.write(apps_file, catalog.covers)
    if opts.html:
        from .html import write_html

        write_html(opts.out, apps_file, opts.html)
    return TriageResult(len(logs), len(todo) - copies, skipped + copies, counts["ok"], counts["no-io"], bad,
                        missing, time.perf_counter() - t0, read_seconds, apps_file)


def _run(todo, opts: TriageOptions, take) -> None:
    from dask.distributed import as_completed

    client, cluster = _client(opts)
    try:
        n_workers = max(len(client.scheduler_info().get("workers", {})), 1)
        tasks = batches(todo, n_workers, opts.batch)
        futures = client.map(summarize_batch, tasks, opts=opts.rows, pure=False, retries=0)
        batch_of = {f.key: b for f, b in zip(futures, tasks)}
        retry = []
        for fut in as_completed(futures):
            if fut.status == "finished":
                take(fut.result())
            else:  # the worker died under it (or the task raised): each log alone, to find the one at fault
                retry.extend(batch_of[fut.key])
            fut.release()
        if retry:
            singles = client.map(summarize_batch, [[x] for x in retry], opts=opts.rows, pure=False, retries=0)
            for fut, item in zip(singles, retry):
                try:
                    take(fut.result())
                except Exception as exc:  # noqa: BLE001 - KilledWorker and the like: this log is the one
                    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    take([_dead(item, f"the worker reading it died ({type(exc).__name__}: {why[:160]})")])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dead(item, reason: str) -> dict:
    from .logrow import EMPTY

    path, size, mtime = item
    try:
        digest = content_hash(path)
    except OSError as exc:
        digest = f"unreadable:{path}:{exc.strerror}"
    return {**EMPTY, "status": "bad", "reason": reason, "start_time": mtime, "path": path, "content_hash": digest,
            "read_seconds": 0.0, "size": size, "mtime": mtime}


__all__ = ["BATCH", "IN_PROCESS_MAX", "TriageOptions", "TriageResult", "batches", "plan", "summarize_batch",
           "triage"]
