"""The Arrow codec of a columnar trace's batches: AccessColumns to and from Parquet tables, and the columns a
reader fills straight from Arrow's buffers (schema in docs/trace-format.md; the directory in columnar.py)."""
from __future__ import annotations

import mmap
import os
import types
from importlib import import_module
from pathlib import Path

import numpy as np

from .columns import ORTHOGONAL, POINTS, SLAB, AccessColumns
from .records import Selection
from .tracemodel import TraceError


class _Deferred(types.ModuleType):
    """A module imported at the first use of one of its attributes: writing a trace's records file (its header, a
    run that made no access: ``ioadvisor run`` of a program that did no I/O) never loads Arrow, about 0.1-0.2 s
    of a run's fixed cost (benchmarks/tracing_overhead.py, fixed cost)."""

    def __getattr__(self, attr):
        value = getattr(import_module(self.__name__), attr)
        setattr(self, attr, value)  # found here from now on: a batch's write looks up a hundred of them
        return value


pa, pq = _Deferred("pyarrow"), _Deferred("pyarrow.parquet")


def load_arrow() -> None:
    """Import Arrow now, off the path that needs it next (a launcher, while its program runs)."""
    import_module("pyarrow.parquet")

FORMAT_KEY = b"ioadvisor.columns"
FORMAT_VERSION = b"1"
"""Version of the access-column layout, in every part's Parquet metadata."""
READ_ROWS = 1 << 18
"""Rows per Parquet row group, converted at a time when reading: memory holds the result plus one of them."""
COMPACT_ROWS = 1 << 20
"""At close, consecutive batches are rewritten into files of up to this many rows: a long run writes a small batch
every BATCH_SECONDS, and each file costs its reader milliseconds however few rows it holds."""

_DIMS = ("start", "count", "stride", "block", "step")
TIMES = ("t0", "dt", "t_step")
"""The timing columns (stored as ``NAME_ns``)."""
_NS = 1e9


# ---------------------------------------------------------------------------- columns <-> Arrow

def _arrow(values: np.ndarray, dtype) -> pa.Array:
    """A numeric numpy column as an Arrow array. Not ``pa.array``: its first call imports pandas (to probe
    for pandas objects; about 0.25 s of CPU), which the tracer's writer would do inside the traced program."""
    values = np.ascontiguousarray(values, dtype=dtype)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _list_arrow(rows: list[list[int]], present: np.ndarray) -> pa.Array:
    """Rows of integers as an Arrow list<int64> array, null where not ``present`` (built from buffers, as
    ``_arrow``)."""
    offsets = np.zeros(len(rows) + 1, np.int32)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = _arrow(np.fromiter((v for r in rows for v in r), np.int64, count=int(offsets[-1])), np.int64)
    validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.ListArray.from_buffers(pa.list_(pa.int64()), len(rows), [validity, pa.py_buffer(offsets)],
                                     children=[values])


def to_table(cols: AccessColumns) -> pa.Table:
    """The Parquet batch of these accesses (schema in docs/trace-format.md)."""
    data = {
        "ds": _arrow(cols.ds, np.int32),
        "op": _arrow(cols.write, np.int8),
        "rank": _arrow(cols.rank, np.int32),
        "t0_ns": _arrow(np.round(cols.t0 * _NS), np.int64),
        "dt_ns": _arrow(np.round(cols.dt * _NS), np.int64),
        "t_step_ns": _arrow(np.round(cols.t_step * _NS), np.int64),
        "n": _arrow(cols.n, np.int64),
        "bytes": _arrow(cols.nbytes, np.int64),
        "rep": _arrow(cols.rep, np.int64),
        "kind": _arrow(cols.kind, np.int8),
        "ndim": _arrow(cols.ndim, np.int8),
        "coll": _arrow(cols.collective, np.int8),
    }
    if cols.proc.any():  # only in a run's trace holding followed processes: every other batch as before
        data["proc"] = _arrow(cols.proc, np.int32)
    for name in _DIMS:
        arr = getattr(cols, name)
        for d in range(cols.width):
            data[f"{name}_{d}"] = _arrow(arr[:, d], np.int64)
    if cols.irregular:
        idx, lens = [[] for _ in range(cols.rows)], [[] for _ in range(cols.rows)]
        present = np.zeros(cols.rows, bool)
        for i, s in cols.irregular.items():
            present[i] = True
            if s.points is not None:
                lens[i] = [len(s.points)]
                idx[i] = s.points.ravel().tolist()
            else:
                lens[i] = [-1 if ix is None else len(ix) for ix in s.indices]
                idx[i] = [v for ix in s.indices if ix is not None for v in ix]
        data["idx_len"] = _list_arrow(lens, present)
        data["idx"] = _list_arrow(idx, present)
    return pa.table(data).replace_schema_metadata({FORMAT_KEY: FORMAT_VERSION})


CODEC = "lz4"
"""Parquet compression of the batches (LZ4_RAW). Not zstd: its decoder sets up a context per column chunk
(two ``cpuid`` instructions, each a VM exit on a virtual machine), a fixed cost that is a large share of loading
a small trace, while after the delta coding zstd saves under 2% of the bytes (docs/trace-format.md has the
figures; benchmarks/scale.py measures the load)."""


def write_table(table: pa.Table, path: Path) -> None:
    """Write one batch atomically: a hidden temporary file renamed into place.

    Columns without nulls are written as required: a reader then decodes no definition levels (15% of reading
    a 10,000-row batch). Integer columns holding one value get Parquet statistics (min = max), which tell a
    reader that value without decoding the column (19 of a loader trace's 22 columns); the others get none (they
    would cost bytes, and a reader Python objects per column)."""
    batch = StreamedBatch(path, table)
    batch.close()


class StreamedBatch:
    """A batch written a row group at a time (``append``), under its hidden temporary name until ``close`` renames
    it into place: a launcher encodes its program's records while the program runs, so that its exit writes only
    the last ones (instrumentation/launch.py; benchmarks/speed/tracing_overhead.py, the 20,000-box C program).
    The first table decides the schema and the statistics (``write_table``'s rules); a table that does not fit
    them (``fits``) goes into another batch."""

    def __init__(self, path: Path, table: pa.Table):
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp")
        self.schema = pa.schema([f.with_nullable(table.column(i).null_count > 0) for i, f in enumerate(table.schema)],
                                metadata=table.schema.metadata)
        ints = [f.name for f in self.schema if pa.types.is_integer(f.type)]
        constant = [name for name in ints if _one_value(table.column(name))]
        self._writer = pq.ParquetWriter(self._tmp, self.schema, compression=CODEC, use_dictionary=False,
                                        write_statistics=constant or False,
                                        column_encoding={c: "DELTA_BINARY_PACKED" for c in ints})
        self.rows = 0
        self.append(table)

    def fits(self, table: pa.Table) -> bool:
        return table.schema.names == self.schema.names and all(
            f.type == self.schema.field(i).type and (self.schema.field(i).nullable or not table.column(i).null_count)
            for i, f in enumerate(table.schema))

    def append(self, table: pa.Table) -> None:
        self._writer.write_table(pa.Table.from_arrays(table.columns, schema=self.schema), row_group_size=READ_ROWS)
        self.rows += table.num_rows

    def close(self) -> None:
        self._writer.close()
        os.replace(self._tmp, self.path)


def _one_value(column: pa.ChunkedArray) -> bool:
    if column.null_count or not len(column):
        return False
    values = int_values(column, "", "")
    return values.min() == values.max()


def from_table(table: pa.Table, where: str) -> AccessColumns:
    """AccessColumns of one batch; ``where`` names it in errors."""
    check_version(table.schema.metadata, where)
    columns = table_columns(table)
    cols = allocate_columns(table.num_rows, dim_width(table.column_names), [columns])
    fill_columns(cols, 0, table.num_rows, columns, where)
    return cols


def table_columns(table: pa.Table) -> dict:
    return {name: table.column(i) for i, name in enumerate(table.schema.names)}


def check_version(meta, where: str) -> None:
    meta = meta or {}
    if meta.get(FORMAT_KEY) != FORMAT_VERSION:
        got = meta.get(FORMAT_KEY, b"none").decode(errors="replace")
        raise TraceError(f"{where}: unknown access-column version {got} (this ioadvisor reads "
                         f"{FORMAT_VERSION.decode()})")


def dim_width(names) -> int:
    width = 0
    while f"start_{width}" in names:
        width += 1
    return width


def _nonzero(v, out=None):
    return v != 0 if out is None else np.not_equal(v, 0, out=out)


def _seconds(ns, out=None):
    return ns / _NS if out is None else np.divide(ns, _NS, out=out)


_FIELDS = (("ds", np.int32, "ds", 0, None), ("write", bool, "op", 0, _nonzero), ("rank", np.int32, "rank", 0, None),
           ("t0", float, "t0_ns", 0, _seconds), ("dt", float, "dt_ns", 0, _seconds),
           ("t_step", float, "t_step_ns", 0, _seconds), ("n", np.int64, "n", 0, None),
           ("nbytes", np.int64, "bytes", 0, None), ("rep", np.int64, "rep", 1, None),
           ("kind", np.int8, "kind", 0, None), ("ndim", np.int8, "ndim", 0, None),
           ("collective", bool, "coll", 0, _nonzero), ("proc", np.int32, "proc", 0, None))
"""(AccessColumns field, dtype, Parquet column, value when the column is absent, conversion of its values)."""
_DIM_DEFAULTS = {"start": 0, "count": 1, "stride": 1, "block": 1, "step": 0}
"""Per-dimension fields (Parquet columns ``NAME_d``) and their value when absent."""


def int_values(column: pa.ChunkedArray, name: str, where: str) -> np.ndarray:
    """An integer column as a read-only numpy view of its Arrow buffer. Not ``to_numpy``: Arrow's conversion
    imports pandas on its first call, 0.23 s of a process's first load."""
    arr = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    if not pa.types.is_integer(arr.type) or arr.null_count:
        raise TraceError(f"{where}: column '{name}' must hold integers without nulls, not {arr.type}")
    dtype = np.dtype(str(arr.type))
    if not len(arr):
        return np.zeros(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype, len(arr), arr.offset * dtype.itemsize)


def fill_columns(cols: AccessColumns, pos: int, rows: int, columns: dict, where: str, base: int = 0,
                 known: np.ndarray | None = None) -> None:
    """Write a batch's ``rows`` rows into rows pos.. of ``cols`` (``allocate_columns``'s, wide enough), straight
    from the Arrow buffers: no per-batch intermediate arrays. ``columns``: name -> Arrow column, or the one value of a
    column not read (``_one_value``). ``known``: a lookup table of the dataset ids accesses may refer to (its last
    entry stands for every larger id; None: not checked). Errors name the file ``where`` and the row (``base``: the
    batch's first row in it)."""
    for need in ("ds", "op", "n", "bytes", "rep", "kind", "ndim"):
        if need not in columns:
            raise TraceError(f"{where}: missing column '{need}'")
    end = pos + rows

    def put(dest, name, default, convert):
        # a column of one value in every batch: a view of that value (``allocate_columns``)
        if not dest.flags.writeable:
            return
        v = columns.get(name, default)
        if isinstance(v, int):  # one value: nothing to write for 0, the columns being zeroed
            if v:
                dest[:] = v if convert is None else convert(v)
        elif convert is None:
            dest[:] = int_values(v, name, where)
        else:
            convert(int_values(v, name, where), out=dest)

    for attr, _, name, default, convert in _FIELDS:
        put(getattr(cols, attr)[pos:end], name, default, convert)
    for name, default in _DIM_DEFAULTS.items():
        arr = getattr(cols, name)
        for d in range(cols.width):
            put(arr[pos:end, d], f"{name}_{d}", default, None)
    # the checks read a column of one value as that value (its pages may never be touched)
    ds = columns["ds"] if isinstance(columns["ds"], int) else cols.ds[pos:end]
    if known is not None and rows and not (0 <= np.min(ds) and np.max(ds) < len(known) - 1
                                           and known[np.min(ds):np.max(ds) + 1].all()):
        ds = cols.ds[pos:end]
        bad = ~known[np.clip(ds, -1, len(known) - 1)]
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceError(f"{where}: row {base + i}: access refers to unknown dataset id {int(ds[i])}")
    rep = columns["rep"] if isinstance(columns["rep"], int) else cols.rep[pos:end]
    if rows and np.min(rep) < 1:
        rep = cols.rep[pos:end]
        raise TraceError(f"{where}: row {base + int(np.argmax(rep < 1))}: field 'rep' must be >= 1")
    kind = columns["kind"]
    odd = () if isinstance(kind, int) and kind == SLAB else np.flatnonzero(cols.kind[pos:end] != SLAB)
    if len(odd):
        if "idx" not in columns or "idx_len" not in columns:
            raise TraceError(f"{where}: index-list selections without the 'idx'/'idx_len' columns")
        idx, lens = columns["idx"], columns["idx_len"]
        for i in odd.tolist():
            cols.irregular[pos + i] = _selection(cols, pos + i, idx[i].as_py(), lens[i].as_py(), where, base + i)


def _selection(cols: AccessColumns, i: int, idx, lens, where: str, row: int) -> Selection:
    """The selection of row ``i`` of ``cols`` (row ``row`` of the batch ``where``)."""
    nd = int(cols.ndim[i])
    try:
        if cols.kind[i] == POINTS:
            pts = np.asarray(idx, np.int64).reshape(int(lens[0]), nd)
            z = tuple([0] * nd)
            return Selection(z, z, tuple([1] * nd), z, points=pts)
        if cols.kind[i] != ORTHOGONAL or len(lens) != nd:
            raise ValueError
        indices, pos = [], 0
        for k in lens:
            indices.append(None if k < 0 else tuple(idx[pos:pos + k]))
            pos += max(k, 0)
        return Selection(*(tuple(getattr(cols, name)[i, :nd].tolist()) for name in _DIMS[:4]),
                         indices=tuple(indices))
    except (TypeError, ValueError):
        raise TraceError(f"{where}: row {row}: 'idx'/'idx_len' do not describe a selection") from None


FRESH_BYTES = 1 << 22
"""Result columns of at least this many bytes are mapped anonymous memory (``_fresh``), not numpy's."""


def _fresh(shape, dtype) -> np.ndarray:
    """A zeroed array whose memory is faulted in on first touch, 4 KiB at a time. Not ``np.empty``/``np.zeros``
    for large arrays: numpy advises huge pages on allocations of 4 MiB or more, and with this kernel's THP defrag
    setting (``madvise``) a fault there compacts memory first, which can make a fresh process's first load of 10M
    rows several times slower than with huge pages free (benchmarks/scale.py, the 10M loader trace).
    Pages never touched cost nothing, as with calloc."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if size < FRESH_BYTES:
        return np.zeros(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), dtype).reshape(shape)


def _one(values):
    """The value every batch's column holds (``fill_columns``'s ``columns`` entries), or None."""
    first = values[0] if values else None
    if type(first) is not int or any(type(v) is not int or v != first for v in values):
        return None
    return first


def allocate_columns(rows: int, width: int, batches: list[dict]) -> AccessColumns:
    """Columns for ``fill_columns`` to fill with ``batches`` (the ``columns`` of each batch, in order). A column
    holding one value in every batch is a read-only zero-stride view of it: nothing to allocate, touch or write
    (19 of a loader trace's 22 columns: 112 of its 144 bytes per row); the others are zeroed (``_fresh``)."""
    out = {}
    for attr, dtype, name, default, convert in _FIELDS:
        v = _one([b.get(name, default) for b in batches])
        out[attr] = _fresh(rows, dtype) if v is None else _repeated(v if convert is None else convert(v), rows, dtype)
    for attr, default in _DIM_DEFAULTS.items():
        vs = [_one([b.get(f"{attr}_{d}", default) for b in batches]) for d in range(width)]
        out[attr] = _fresh((rows, width), np.int64) if None in vs else _repeated(vs, rows, np.int64)
    return AccessColumns(**out)


def _repeated(value, rows: int, dtype) -> np.ndarray:
    """``value`` (one, or one per dimension) on each of ``rows`` rows: a read-only view, zero-stride along the rows
    (``np.broadcast_to`` makes the same at twice the cost)."""
    one = np.array(value, dtype)
    view = np.ndarray((rows, *one.shape), dtype, one, strides=(0, *one.strides))
    view.flags.writeable = False
    return view
