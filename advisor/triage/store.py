"""The triage summary on disk: a Parquet dataset of one row per log, partitioned by month, appended to.

Layout (``OUT`` is what ``--out`` names, e.g. ``summary.parquet``)::

    OUT/month=2026-11/part-<run>-<n>.parquet     one row per log (ok, no-io or bad), hive-partitioned
    OUT.apps.parquet (summary.apps.parquet)      one row per application, ranked by recoverable time
    OUT.catalog.parquet (summary.catalog.parquet) path, size, mtime, content hash of every log (for reruns)

``pandas.read_parquet(OUT)`` and DuckDB's ``read_parquet('OUT/*/*.parquet')`` read the dataset as is (the
month column comes from the directory names). Every file has the same schema (``LOG_SCHEMA``), so parts
written by different runs concatenate. A rerun reads only the catalog (``Catalog``: the ``content_hash``,
``path``, ``size`` and ``mtime`` columns of every part, in one file) to know which logs it has already
summarized.
"""
from __future__ import annotations

import glob
import json
import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from . import arrowrows

FINDING = pa.struct([("code", pa.string()), ("title", pa.string()), ("seconds", pa.float64()),
                     ("modelled", pa.float64()), ("saves", pa.float64()), ("hdf5", pa.bool_()),
                     ("advice", pa.string())])
LOG_SCHEMA = pa.schema([
    ("path", pa.string()), ("content_hash", pa.string()), ("size", pa.int64()), ("mtime", pa.float64()),
    ("status", pa.string()), ("reason", pa.string()),
    ("job_id", pa.int64()), ("exe", pa.string()), ("user", pa.string()), ("app", pa.string()),
    ("ranks", pa.int64()), ("start_time", pa.timestamp("s", tz="UTC")), ("run_time", pa.float64()),
    ("io_time", pa.float64()), ("hdf5_time", pa.float64()), ("n_files", pa.int64()), ("n_hdf5_files", pa.int64()),
    ("dxt", pa.bool_()), ("findings", pa.list_(FINDING)), ("codes", pa.string()),
    ("recoverable", pa.float64()), ("recoverable_low", pa.float64()), ("trace_hint", pa.string()),
    ("read_seconds", pa.float64()),
])
"""Columns of the per-log dataset (``month`` is the partition, in the directory names)."""
LOG_SUFFIXES = (".darshan", ".darshan.gz")


@dataclass(frozen=True)
class LogFile:
    """A log found in the archive, with what a rerun compares before reading it."""

    path: str
    size: int
    mtime: float


def discover(archives: list[str]) -> tuple[list[LogFile], list[str]]:
    """Every log under the arguments (directories walked, e.g. Darshan's YEAR/MONTH/DAY tree; globs; files),
    each once, in a stable order; and the arguments that matched nothing."""
    found: dict[str, LogFile] = {}
    missing = []
    for arg in archives:
        paths = sorted(glob.glob(arg, recursive=True)) if glob.has_magic(arg) else [arg]
        before = len(found)
        for p in paths:
            if os.path.isdir(p):
                _walk(found, os.path.abspath(p))
            elif os.path.isfile(p):
                _add(found, p)
        if len(found) == before:
            missing.append(arg)
    return list(found.values()), missing


def _walk(found: dict, top: str) -> None:
    """The logs under a directory, in name order: one stat per log (the directory entry's), none per other
    file, so a nightly rerun's walk of a large archive stays a small part of it."""
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):  # as os.walk: a linked directory is not entered (no cycles)
                _walk(found, e.path)
            elif e.name.endswith(LOG_SUFFIXES) and e.is_file() and e.path not in found:
                st = e.stat()
                found[e.path] = LogFile(e.path, st.st_size, st.st_mtime)
        except OSError:
            continue


def _add(found: dict, path: str) -> None:
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except OSError:
        return
    found.setdefault(path, LogFile(path, st.st_size, st.st_mtime))


CATALOG_COLUMNS = ["path", "size", "mtime", "content_hash"]
CATALOG_SCHEMA = pa.schema([(n, LOG_SCHEMA.field(n).type) for n in CATALOG_COLUMNS])
COVERS = b"ioadvisor.covers"
"""Parquet metadata key: JSON list of the part files (relative to the summary) a derived file was made of."""


class Catalog:
    """What a rerun compares before reading a log: every summarized log's path, size, mtime and content hash,
    kept in one small file next to the summary (``catalog_path``), so a rerun opens one file whatever the
    number of part files years of runs have left. The catalog names the parts it covers; parts it does not
    cover (a run that stopped after writing them) are read too, and a catalog naming parts that are gone is
    rebuilt from the parts."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.covers: list[str] = []
        self.table = pa.Table.from_batches([], schema=CATALOG_SCHEMA)  # empty_table() would import pandas
        self.changed = False
        now = [relative(out, f) for f in parts(out)]
        try:
            pf = pq.ParquetFile(catalog_path(out))
            covers = json.loads((pf.schema_arrow.metadata or {})[COVERS])
            if set(covers) <= set(now):
                self.table, self.covers = _as_catalog(pf.read(columns=CATALOG_COLUMNS)), covers
        except (OSError, KeyError, ValueError, pa.ArrowException):
            pass  # none yet, or unreadable: made again from the parts
        missing = sorted(set(now) - set(self.covers))
        if missing:
            self.table = pa.concat_tables(
                [self.table] + [_as_catalog(pq.read_table(os.path.join(out, m), columns=CATALOG_COLUMNS))
                                for m in missing])
            self.covers = sorted(set(self.covers) | set(missing))
            self.changed = True

    def known(self) -> tuple[set[str], set[tuple[str, int, float]]]:
        """Content hashes already in the dataset, and the (path, size, mtime) they were read from."""
        d = self.table.to_pydict()
        return set(d["content_hash"]), set(zip(d["path"], d["size"], d["mtime"]))

    def add(self, rows: list[dict], written: list[str]) -> None:
        """This run's rows, in the parts ``written`` (relative to the summary)."""
        if rows:
            self.table = pa.concat_tables([self.table, arrowrows.table(rows, CATALOG_SCHEMA)])
        if written:
            self.covers = sorted(set(self.covers) | set(written))
            self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        dest = catalog_path(self.out)
        table = self.table.replace_schema_metadata({COVERS: json.dumps(self.covers).encode()})
        pq.write_table(table, dest + ".tmp", compression="zstd")
        os.replace(dest + ".tmp", dest)
        self.changed = False


def _as_catalog(table: pa.Table) -> pa.Table:
    """The catalog's columns with the catalog's types; not cast when they have them already (a cast imports
    pyarrow.compute, a few hundredths of a second of every rerun)."""
    return table if table.schema.equals(CATALOG_SCHEMA) else table.cast(CATALOG_SCHEMA)


def known(out: str) -> tuple[set[str], set[tuple[str, int, float]]]:
    """Content hashes already in the dataset, and the (path, size, mtime) they were read from."""
    return Catalog(out).known()


def parts(out: str) -> list[str]:
    return sorted(glob.glob(os.path.join(out, "month=*", "*.parquet")))


def relative(out: str, part: str) -> str:
    """A part file's name inside the summary (``month=2026-11/part-....parquet``)."""
    return os.path.relpath(part, out)


def month_of(ts: float) -> str:
    return datetime.fromtimestamp(max(ts, 0), timezone.utc).strftime("%Y-%m")


class Appender:
    """Writes rows into month partitions, ``FLUSH_ROWS`` at a time (a Parquet file costs tens of ms whatever
    its size: benchmarks/speed/triage.py); a crashed run keeps what it flushed, the rest is read again next time."""

    FLUSH_ROWS = 5000

    def __init__(self, out: str) -> None:
        self.out = out
        self.run = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
        self.n = 0
        self.rows: list[dict] = []
        self.written: list[str] = []
        """The part files this appender wrote (relative to the summary)."""
        os.makedirs(out, exist_ok=True)

    def write(self, rows: list[dict]) -> None:
        self.rows.extend(rows)
        if len(self.rows) >= self.FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        by_month: dict[str, list[dict]] = {}
        for r in self.rows:
            by_month.setdefault(month_of(r["start_time"]), []).append(r)
        self.rows = []
        for month, group in by_month.items():
            d = os.path.join(self.out, f"month={month}")
            os.makedirs(d, exist_ok=True)
            table = arrowrows.table([{**r, "start_time": int(r["start_time"])} for r in group], LOG_SCHEMA)
            tmp = os.path.join(d, f".part-{self.run}-{self.n:05d}.parquet.tmp")
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, os.path.join(d, f"part-{self.run}-{self.n:05d}.parquet"))  # readers never see half
            self.written.append(os.path.join(f"month={month}", f"part-{self.run}-{self.n:05d}.parquet"))
            self.n += 1


def load(out: str, columns: list[str] | None = None):
    """The per-log dataset as a pandas DataFrame (with ``month``)."""
    import pandas as pd

    files = parts(out)
    if not files:
        return pd.DataFrame(columns=LOG_SCHEMA.names + ["month"])
    frames = []
    for f in files:
        df = pq.read_table(f, columns=columns).to_pandas()
        df["month"] = os.path.basename(os.path.dirname(f)).split("=", 1)[1]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def apps_path(out: str) -> str:
    """The per-application table next to the summary: ``summary.parquet`` -> ``summary.apps.parquet``."""
    return _base(out) + ".apps.parquet"


def catalog_path(out: str) -> str:
    """The rerun catalog next to the summary: ``summary.parquet`` -> ``summary.catalog.parquet``."""
    return _base(out) + ".catalog.parquet"


def _base(out: str) -> str:
    out = out.rstrip(os.sep)
    return out[:-len(".parquet")] if out.endswith(".parquet") else out


__all__ = ["Appender", "Catalog", "LOG_SCHEMA", "LogFile", "apps_path", "catalog_path", "discover", "known", "load",
           "month_of", "parts", "relative"]
