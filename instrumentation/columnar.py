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

def write_columnar(trace: Trace, path: str | os.PathLike) -> None:
    """``trace`` as a columnar trace directory (accesses in rank order, runs folded)."""
    from dataclasses import replace

    from .merge import DirectoryOut

    out = DirectoryOut(path)
    size = trace.nprocs
    for h in trace.headers:
        out.record("h", replace(h, size=size).get_config())
    for d in trace.datasets.values():
        out.record("d", d.get_config())
    for r in trace.resizes:
        out.record("r", r.get_config())
    for o in trace.opens:
        out.record("o", o.get_config())
    out.batch(fold_runs(trace.columns))  # its open spans (``epoch``) kept apart
    out.close()


def remove_trace(path: str | os.PathLike) -> None:
    """Delete a trace file or directory."""
    path = Path(path)
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


__all__ = ["ColumnarTraceWriter", "adopt_batches", "batch_files", "load_columnar", "part_files",
           "write_columnar", "is_jsonl", "remove_trace", "BATCH_ROWS", "BATCH_SECONDS"]
