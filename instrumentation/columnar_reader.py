"""Reading a columnar trace directory (docs/trace-format.md): its records file, its batch files memory-mapped and
decoded row group by row group into one set of columns (arrowcodec.fill_columns)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .arrowcodec import (TIMES, allocate_columns, check_version, dim_width, fill_columns, int_values, pa, pq,
                         table_columns)
from .jsonl import read_records
from .tracedir import META, PART as _PART, PARTS as _PARTS
from .tracemodel import Trace, TraceError


def part_files(path: str | os.PathLike) -> list[Path]:
    """The batch files of a trace directory, in order (parts a compacted file covers left out)."""
    path = Path(path)
    singles, ranges = {}, []
    for f in path.iterdir():
        m = _PART.match(f.name)
        if m:
            singles[int(m.group(1))] = f
            continue
        m = _PARTS.match(f.name)
        if m:
            ranges.append((int(m.group(1)), int(m.group(2)), f))
    out = [(a, f) for a, _, f in ranges]
    out += [(i, f) for i, f in singles.items() if not any(a <= i <= b for a, b, _ in ranges)]
    return [f for _, f in sorted(out)]


def read_meta(path: str | os.PathLike, allow_truncated: bool, opens: list | None = None):
    """(headers, datasets, resizes, complete, n_access at end) of a trace directory (``opens`` collects its open
    records)."""
    meta = Path(path) / META
    try:
        raw = meta.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: a directory without {META}, not an ioadvisor columnar trace") from None
    except OSError as exc:
        raise TraceError(f"{meta}: cannot read trace ({exc.strerror})") from None
    return read_records(str(meta), raw, allow_truncated, None, opens)


THREADED_ROWS = 1 << 15
"""Row groups of at least this many rows are decoded on Arrow's threads (a column each); a smaller one decodes
faster on the calling thread than its 22 columns are handed out, unless zstd-compressed (traces written before
CODEC was LZ4) and not tiny: zstd's fixed cost per column then overlaps on the cores. Both thresholds come from
timing the two ways on the first load of benchmarks/scale.py's traces (docs/trace-format.md)."""
ZSTD_THREADED_ROWS = 1 << 12


def _threaded(group: pq.RowGroupMetaData) -> bool:
    rows = group.num_rows
    return rows >= THREADED_ROWS or (rows >= ZSTD_THREADED_ROWS and group.column(0).compression == "ZSTD")


def parquet_file(part: Path) -> pq.ParquetReader:
    """A batch file opened for reading on the calling thread, its reads on the system allocator.

    Not ``pq.ParquetFile``: it takes no memory pool, and our results would come from Arrow's default pool
    (mimalloc), whose first use in a process sets up a 1 GiB arena and faults its pages in: a large share of a
    fresh process's first load of a small trace (benchmarks/scale.py, 10k traces). The user's program keeps its default pool; the page
    buffers of compressed pages still come from it (``default_reader_properties()``: pyarrow has no way to give
    them another). No pre-buffering (``ParquetFile``'s default): it hands every read to an I/O thread, started on a
    process's first read, which slows a fresh process's first load of a small trace (benchmarks/scale.py). The file is
    memory-mapped: its reads (the footer, the column chunks) are views of the mapping, not allocations. The
    mapping outlives the file's name (the writer's close replaces batches by gathered files)."""
    reader = pq.ParquetReader(memory_pool=pa.system_memory_pool())
    reader.open(pa.memory_map(str(part)), pre_buffer=False)
    return reader


def _open_part(part: Path) -> tuple[Path, pq.ParquetReader, list[str]]:
    """(path, open file, column name of each leaf column: a list column's is its own name) of a batch file."""
    try:
        reader = parquet_file(part)
        meta = reader.metadata.metadata
        names = [path[0] for path in reader.column_paths]
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{part}: not a readable Parquet batch ({str(exc).splitlines()[0][:120]})") from None
    check_version(meta, str(part))
    return part, reader, names


def _known(datasets) -> np.ndarray:
    """The dataset-id lookup table of ``fill_columns``."""
    known = np.zeros(max(datasets, default=-1) + 2, bool)  # the last entry stands for "too big"
    known[np.fromiter(datasets, np.int64, len(datasets))] = True
    return known


class _Group(NamedTuple):
    """A row group of a batch file (READ_ROWS rows or fewer)."""

    part: Path
    reader: pq.ParquetReader
    names: list[str]
    """Column name of each leaf column (``_open_part``)."""
    index: int
    info: pq.RowGroupMetaData
    base: int
    """Its first row in the file."""
    columns: dict
    """Name -> the one value of a column the statistics say holds one value (``_constants``), of a timing column
    not read (0), or None: to decode (``_decode``)."""


def _groups(parts, times) -> list[_Group]:
    """The row groups of the batch files ``parts`` (``_open_part``'s) in order; of the timing columns only
    ``times`` (names among TIMES) are read."""
    skip = {f"{t}_ns" for t in TIMES if t not in times}
    out = []
    for part, reader, names in parts:
        base = 0
        try:
            meta = reader.metadata
            for group in range(meta.num_row_groups):
                info = meta.row_group(group)
                one = _constants(info)
                columns = {c: 0 if c in skip else one.get(c) for c in names}
                out.append(_Group(part, reader, names, group, info, base, columns))
                base += info.num_rows
        except (OSError, pa.ArrowException) as exc:
            raise TraceError(f"{part}: not a readable Parquet batch ({str(exc).splitlines()[0][:120]})") from None
    return out


def _decode(g: _Group) -> dict:
    """The columns of a row group as ``fill_columns`` takes them: ``g.columns`` with those to decode read."""
    read = [i for i, c in enumerate(g.names) if g.columns[c] is None]
    if not read:
        return g.columns
    try:
        # a large row group is decoded on Arrow's threads (a column each)
        table = g.reader.read_row_group(g.index, column_indices=read, use_threads=_threaded(g.info))
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{g.part}: not a readable Parquet batch ({str(exc).splitlines()[0][:120]})") from None
    return {**g.columns, **table_columns(table)}


def _constants(group: pq.RowGroupMetaData) -> dict[str, int]:
    """Column -> value of the integer columns a row group's statistics say hold one value (min = max, no nulls),
    whoever wrote them."""
    out = {}
    for i in range(group.num_columns):
        chunk = group.column(i)
        if chunk.is_stats_set:
            stats = chunk.statistics
            low = stats.min_raw  # not .min: converting by logical type costs 10x, and integers need none
            if (type(low) is int and low == stats.max_raw and stats.has_min_max and stats.has_null_count
                    and not stats.null_count):
                out[chunk.path_in_schema] = low
    return out


def read_parts(path: str | os.PathLike, datasets, *, times=TIMES):
    """AccessColumns of the batches in order, READ_ROWS rows at a time; of the timing columns only ``times``
    (names among TIMES) are read, the others are 0."""
    known = _known(datasets)
    for part in part_files(path):
        for g in _groups([_open_part(part)], times):
            columns = _decode(g)
            cols = allocate_columns(g.info.num_rows, dim_width(g.names), [columns])
            fill_columns(cols, 0, g.info.num_rows, columns, str(g.part), g.base, known)
            yield cols


def load_columnar(path: str | os.PathLike, *, allow_truncated: bool = False, times=TIMES, step=None) -> Trace:
    """The trace in directory ``path`` (``load_trace``); ``step(rows read, rows)`` after each row group."""
    opens: list = []
    headers, datasets, resizes, complete, n_end = read_meta(path, allow_truncated, opens)
    groups = _groups([_open_part(p) for p in part_files(path)], times)  # listed once: a live trace may gain parts
    cols = allocate_columns(sum(g.info.num_rows for g in groups), max([dim_width(g.names) for g in groups], default=0),
                     [g.columns for g in groups])
    known = _known(datasets)
    pos = 0
    for g in groups:  # filled in place: no second copy of the trace
        fill_columns(cols, pos, g.info.num_rows, _decode(g), str(g.part), g.base, known)
        pos += g.info.num_rows
        if step is not None:
            step(pos, cols.rows)
    if complete and n_end is not None and cols.n_access != n_end:
        raise TraceError(f"{Path(path) / META}: end record counts {n_end} accesses, the batches hold "
                         f"{cols.n_access}")
    return Trace(headers, datasets, cols, resizes, complete, str(path), opens=opens)


def count_accesses(path: str | os.PathLike) -> tuple[dict, int, int, int]:
    """(first header as JSON, datasets, accesses, reads) from the records file and the op/rep columns only."""
    path = Path(path)
    with open(path / META, "rb") as fh:
        head = json.loads(fh.readline() or b"{}")
        # distinct ids: an id's record may come twice (completed at the end: instrumentation/chunklisting.py)
        n_ds = len({line.split(b",", 2)[1] for line in fh if line.startswith(b'{"t":"d"')})
    n_acc = n_read = 0
    for part in part_files(path):
        part, reader, names = _open_part(part)
        t = reader.read_all(column_indices=[names.index("op"), names.index("rep")])
        rep = int_values(t.column("rep"), "rep", str(part))
        n_acc += int(rep.sum())
        n_read += int(rep[int_values(t.column("op"), "op", str(part)) == 0].sum())
    return head, n_ds, n_acc, n_read
