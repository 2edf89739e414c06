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

import os
import time
from dataclasses import dataclass, field

from .logrow import RowOptions, content_hash, summarize_many
from .store import Appender, LogFile, apps_path, discover, known
from .apps import aggregate

BATCH = 50
"""Logs per task: about 2-5 s of work per task (benchmarks/triage.py measures the per-log cost), so the
scheduler's per-task overhead (milliseconds) is well under 1% and a site cluster's workers stay busy."""


@dataclass(frozen=True)
class TriageOptions:
    out: str
    scheduler: str | None = None
    workers: int = 2
    memory_limit: str = "1GiB"
    batch: int = BATCH
    rows: RowOptions = RowOptions()
    html: str | None = None


@dataclass(frozen=True)
class TriageResult:
    found: int
    new: int
    """Logs read by this run (new content)."""
    skipped: int
    """Logs already in the summary (same path, size and time, or same content)."""
    ok: int
    no_io: int
    bad: list[tuple[str, str]] = field(default_factory=list)
    """(path, one-line reason) of this run's unreadable logs."""
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0
    read_seconds: float = 0.0
    """The work itself: summed over logs (what a worker spent reading and judging them)."""
    apps: str = ""


def summarize_batch(batch: list[tuple[str, int, float, str]], opts: RowOptions) -> list[dict]:
    """A dask task: the rows of a batch of (path, size, mtime, content hash); never raises for a bad log."""
    rows = summarize_many([(path, digest) for path, _, _, digest in batch], opts)
    return [{**row, "size": size, "mtime": mtime} for row, (_, size, mtime, _) in zip(rows, batch)]


def plan(logs: list[LogFile], out: str) -> tuple[list[tuple[str, int, float, str]], int]:
    """The logs to read: not seen at this path with this size and time, and of content not yet summarized."""
    hashes, stats = known(out)
    todo, seen, skipped = [], set(hashes), 0
    for lf in logs:
        if (lf.path, lf.size, lf.mtime) in stats:
            skipped += 1
            continue
        try:
            digest = content_hash(lf.path)
        except OSError:
            digest = f"unreadable:{lf.path}"
        if digest in seen:
            skipped += 1
            continue
        seen.add(digest)
        todo.append((lf.path, lf.size, lf.mtime, digest))
    return todo, skipped


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
    logs, missing = discover(archives)
    todo, skipped = plan(logs, opts.out)
    counts = {"ok": 0, "no-io": 0}
    bad: list[tuple[str, str]] = []
    read_seconds = 0.0
    appender = Appender(opts.out)

    def take(rows: list[dict]) -> None:
        nonlocal read_seconds
        appender.write(rows)
        for r in rows:
            read_seconds += r["read_seconds"]
            if r["status"] == "bad":
                bad.append((r["path"], r["reason"]))
            else:
                counts[r["status"]] += 1
        if progress is not None:
            progress(len(rows))

    if todo:
        _run(todo, opts, take)
    apps = apps_path(opts.out)
    aggregate(opts.out, apps)
    if opts.html:
        from .html import write_html

        write_html(opts.out, apps, opts.html)
    return TriageResult(len(logs), len(todo), skipped, counts["ok"], counts["no-io"], bad, missing,
                        time.perf_counter() - t0, read_seconds, apps)


def _run(todo, opts: TriageOptions, take) -> None:
    from dask.distributed import as_completed

    client, cluster = _client(opts)
    try:
        batches = [todo[i:i + opts.batch] for i in range(0, len(todo), opts.batch)]
        futures = client.map(summarize_batch, batches, opts=opts.rows, pure=False, retries=0)
        batch_of = {f.key: b for f, b in zip(futures, batches)}
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

    path, size, mtime, digest = item
    return {**EMPTY, "status": "bad", "reason": reason, "start_time": mtime, "path": path, "content_hash": digest,
            "read_seconds": 0.0, "size": size, "mtime": mtime}


__all__ = ["BATCH", "TriageOptions", "TriageResult", "plan", "summarize_batch", "triage"]
