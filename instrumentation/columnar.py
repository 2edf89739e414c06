"""Columnar traces: a directory of Parquet batches plus the records file (docs/trace-format.md).

    run.parquet/
        _meta.jsonl            header(s), dataset and resize records, end: JSON Lines, as in schema 1
        part-000000.parquet    accesses, one self-contained batch per file (LZ4; integers delta-coded)
        part-000001.parquet    ...

Each batch is written to a hidden temporary name and renamed into place, so a
killed process leaves only whole batches; ``_meta.jsonl`` is appended and
flushed like a JSON Lines trace (a cut-off last line is skipped with
``allow_truncated``). On a clean close consecutive small batches are rewritten
as ``parts-FIRST-LAST.parquet`` files of up to COMPACT_ROWS rows (readers skip
``part-`` files one covers, in case a crash left both). Parquet and the leading underscore make the directory a
dataset that pandas, pyarrow and DuckDB read directly
(``pandas.read_parquet("run.parquet")``).
"""
from __future__ import annotations

# the codec, reader, writer and raw parts live in their own modules; their names are re-exported here for
# every importer of instrumentation.columnar
import os
import shutil
from pathlib import Path

import numpy as np

from .arrowcodec import (CODEC, COMPACT_ROWS, FORMAT_KEY, FORMAT_VERSION, FRESH_BYTES, READ_ROWS, TIMES, from_table,
                         load_arrow, pa, pq, to_table, write_table)
from .columnar_reader import (THREADED_ROWS, ZSTD_THREADED_ROWS, count_accesses, load_columnar, parquet_file,
                              part_files, read_meta, read_parts)
from .columnar_writer import BATCH_ROWS, BATCH_SECONDS, ColumnarTraceWriter, compact_parts, rows_to_columns
from .columns import AccessColumns, fold_runs
from .jsonl import load_jsonl
from .rawparts import adopt_batches, batch_files, read_raw, write_raw
from .tracedir import META, prepare as _prepare
from .tracedir import is_jsonl
from .tracemodel import Trace, clock_shift, dumps, remap_columns, unify


# ---------------------------------------------------------------------------- writing whole traces

class _DirectoryOut:
    """A trace directory written from whole records and batches (conversion, merging).

    Batches are gathered into files of up to COMPACT_ROWS rows: 1,000 ranks of one folded scan each make one
    file, not 1,000 that would each cost a reader a millisecond."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        _prepare(self.path)
        self.meta = open(self.path / META, "w", encoding="utf-8")
        self.n_part = 0
        self.n_access = 0
        self._pending: list[AccessColumns] = []
        self._pending_rows = 0

    def record(self, t: str, config: dict) -> None:
        self.meta.write(dumps({"t": t, **config}) + "\n")

    def batch(self, cols: AccessColumns) -> None:
        if not cols.rows:
            return
        if self._pending_rows + cols.rows > COMPACT_ROWS:
            self._write_pending()
        self._pending.append(cols)
        self._pending_rows += cols.rows
        self.n_access += cols.n_access

    def _write_pending(self) -> None:
        cols = AccessColumns.concat(self._pending)
        for lo in range(0, cols.rows, COMPACT_ROWS):
            chunk = cols.take(np.arange(lo, min(lo + COMPACT_ROWS, cols.rows))) if cols.rows > COMPACT_ROWS else cols
            write_table(to_table(chunk), self.path / f"part-{self.n_part:06d}.parquet")
            self.n_part += 1
        self._pending, self._pending_rows = [], 0

    def close(self) -> None:
        self._write_pending()
        self.record("end", {"n_access": self.n_access})
        self.meta.close()


def write_columnar(trace: Trace, path: str | os.PathLike) -> None:
    """``trace`` as a columnar trace directory (accesses in rank order, runs folded)."""
    from dataclasses import replace

    out = _DirectoryOut(path)
    size = trace.nprocs
    for h in trace.headers:
        out.record("h", replace(h, size=size).get_config())
    for d in trace.datasets.values():
        out.record("d", d.get_config())
    for r in trace.resizes:
        out.record("r", r.get_config())
    out.batch(fold_runs(trace.columns))
    out.close()


def merge_trace_files(paths: list[str | os.PathLike], output: str | os.PathLike, *,
                      allow_truncated: bool = False, missed: tuple[str, ...] = ()) -> tuple[int, int, int]:
    """Merge per-rank traces into one columnar trace, one rank's batch in memory at a time; ``missed``
    (what the merge left out) goes into the first header.

    Returns (traces merged, accesses, datasets)."""
    from dataclasses import replace

    metas = []
    for p in paths:
        if os.path.isdir(p):
            headers, datasets, resizes, complete, _ = read_meta(p, allow_truncated)
            metas.append((p, Trace(headers, datasets, None, resizes, complete, str(p))))
        else:
            metas.append((p, load_jsonl(str(p), allow_truncated)))
    traces = [t for _, t in metas]
    by_key, remaps = unify(traces)
    headers = sorted((h for t in traces for h in t.headers), key=lambda h: h.rank)
    origin = min(h.t_origin_unix for h in headers)
    out = _DirectoryOut(output)
    size = max(h.size for h in headers)
    for i, h in enumerate(headers):
        out.record("h", replace(h, size=size, missed=h.missed + (missed if i == 0 else ())).get_config())
    for d in by_key.values():
        out.record("d", d.get_config())
    for t, remap in zip(traces, remaps):
        for r in t.resizes:
            out.record("r", replace(r, dataset=remap[r.dataset]).get_config())
    for (p, t), remap in zip(metas, remaps):
        own = t.header.rank if len(t.headers) == 1 else None
        batches = read_parts(p, t.datasets) if os.path.isdir(p) else [t.columns]
        for cols in batches:
            cols = clock_shift(remap_columns(cols, remap, 0.0, own), t.headers, origin)
            out.batch(cols if own is not None else fold_runs(cols))
    out.close()
    return len(traces), out.n_access, len(by_key)


def remove_trace(path: str | os.PathLike) -> None:
    """Delete a trace file or directory."""
    path = Path(path)
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


__all__ = ["ColumnarTraceWriter", "adopt_batches", "batch_files", "load_columnar", "merge_trace_files", "part_files",
           "write_columnar", "is_jsonl", "remove_trace", "BATCH_ROWS", "BATCH_SECONDS"]
