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

import json
import mmap
import os
import re
import shutil
import threading
import time
import types
from importlib import import_module
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .columns import ARRAYS, ORTHOGONAL, POINTS, SLAB, AccessColumns, compact_runs, fold_runs
from .records import WRITE, AccessRecord, RecordError, Selection, TraceHeader
from .tracedir import META, PART as _PART, PARTS as _PARTS, RAW as _RAW, prepare as _prepare
from .jsonl import load_jsonl, read_records, resize_lines
from .tracedir import is_jsonl
from .tracemodel import Trace, TraceError, clock_shift, dumps, remap_columns, unify



class _Deferred(types.ModuleType):
    """A module imported at the first use of one of its attributes: writing a trace's records file (its header, a
    run that made no access: ``ioadvisor run`` of a program that did no I/O) never loads Arrow, about 0.1-0.2 s
    of a run's fixed cost (benchmarks/tracing_overhead.py, fixed cost)."""

    def __getattr__(self, attr):
        return getattr(import_module(self.__name__), attr)


pa, pq = _Deferred("pyarrow"), _Deferred("pyarrow.parquet")


def load_arrow() -> None:
    """Import Arrow now, off the path that needs it next (a launcher, while its program runs)."""
    import_module("pyarrow.parquet")

FORMAT_KEY = b"ioadvisor.columns"
FORMAT_VERSION = b"1"
"""Version of the access-column layout, in every part's Parquet metadata."""
BATCH_ROWS = 1 << 16
"""Accesses buffered before a batch is written; also written at least every BATCH_SECONDS."""
BATCH_SECONDS = 1.0
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
    tmp = path.with_name(f".{path.name}.tmp")
    schema = pa.schema([f.with_nullable(table.column(i).null_count > 0) for i, f in enumerate(table.schema)],
                       metadata=table.schema.metadata)
    table = pa.Table.from_arrays(table.columns, schema=schema)
    ints = [f.name for f in table.schema if pa.types.is_integer(f.type)]
    constant = [name for name in ints if _one_value(table.column(name))]
    pq.write_table(table, tmp, compression=CODEC, use_dictionary=False, write_statistics=constant or False,
                   column_encoding={c: "DELTA_BINARY_PACKED" for c in ints}, row_group_size=READ_ROWS)
    os.replace(tmp, path)


def _one_value(column: pa.ChunkedArray) -> bool:
    if column.null_count or not len(column):
        return False
    values = _values(column, "", "")
    return values.min() == values.max()


def from_table(table: pa.Table, where: str) -> AccessColumns:
    """AccessColumns of one batch; ``where`` names it in errors."""
    _check_version(table.schema.metadata, where)
    columns = _columns(table)
    cols = _allocate(table.num_rows, _width(table.column_names), [columns])
    _fill(cols, 0, table.num_rows, columns, where)
    return cols


def _columns(table: pa.Table) -> dict:
    return {name: table.column(i) for i, name in enumerate(table.schema.names)}


def _check_version(meta, where: str) -> None:
    meta = meta or {}
    if meta.get(FORMAT_KEY) != FORMAT_VERSION:
        got = meta.get(FORMAT_KEY, b"none").decode(errors="replace")
        raise TraceError(f"{where}: unknown access-column version {got} (this ioadvisor reads "
                         f"{FORMAT_VERSION.decode()})")


def _width(names) -> int:
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
           ("collective", bool, "coll", 0, _nonzero))
"""(AccessColumns field, dtype, Parquet column, value when the column is absent, conversion of its values)."""
_DIM_DEFAULTS = {"start": 0, "count": 1, "stride": 1, "block": 1, "step": 0}
"""Per-dimension fields (Parquet columns ``NAME_d``) and their value when absent."""


def _values(column: pa.ChunkedArray, name: str, where: str) -> np.ndarray:
    """An integer column as a read-only numpy view of its Arrow buffer. Not ``to_numpy``: Arrow's conversion
    imports pandas on its first call, 0.23 s of a process's first load."""
    arr = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    if not pa.types.is_integer(arr.type) or arr.null_count:
        raise TraceError(f"{where}: column '{name}' must hold integers without nulls, not {arr.type}")
    dtype = np.dtype(str(arr.type))
    if not len(arr):
        return np.zeros(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype, len(arr), arr.offset * dtype.itemsize)


def _fill(cols: AccessColumns, pos: int, rows: int, columns: dict, where: str, base: int = 0,
          known: np.ndarray | None = None) -> None:
    """Write a batch's ``rows`` rows into rows pos.. of ``cols`` (``_allocate``'s, wide enough), straight from the
    Arrow buffers: no per-batch intermediate arrays. ``columns``: name -> Arrow column, or the one value of a
    column not read (``_one_value``). ``known``: a lookup table of the dataset ids accesses may refer to (its last
    entry stands for every larger id; None: not checked). Errors name the file ``where`` and the row (``base``: the
    batch's first row in it)."""
    for need in ("ds", "op", "n", "bytes", "rep", "kind", "ndim"):
        if need not in columns:
            raise TraceError(f"{where}: missing column '{need}'")
    end = pos + rows

    def put(dest, name, default, convert):
        if not dest.flags.writeable:  # a column of one value in every batch: a view of that value (``_allocate``)
            return
        v = columns.get(name, default)
        if isinstance(v, int):  # one value: nothing to write for 0, the columns being zeroed
            if v:
                dest[:] = v if convert is None else convert(v)
        elif convert is None:
            dest[:] = _values(v, name, where)
        else:
            convert(_values(v, name, where), out=dest)

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


# ---------------------------------------------------------------------------- the directory

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


def write_raw(cols: AccessColumns, path: Path) -> None:
    """A followed process's batch as one numpy record array (``part-N.npy``), written atomically as ``write_table``
    writes: the process never runs Parquet's code, whose first run in a forked child costs it 3-8 ms of page faults
    (docs/tracing-overhead.md); the run's merge converts it (``adopt_batches``). Irregular rows have no place in
    it (the writer writes such a batch as Parquet)."""
    fields = [(name, getattr(cols, name).dtype, getattr(cols, name).shape[1:]) for name in ARRAYS]
    rec = np.empty(cols.rows, fields)
    for name in ARRAYS:
        rec[name] = getattr(cols, name)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, rec)
    os.replace(tmp, path)


def read_raw(path: Path) -> AccessColumns:
    """The accesses of a ``write_raw`` batch."""
    try:
        rec = np.load(path)
        return AccessColumns(**{name: np.ascontiguousarray(rec[name]) for name in ARRAYS})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(f"{path}: not a readable batch of accesses ({str(exc)[:120]})") from None


def batch_files(path: str | os.PathLike) -> list[Path]:
    """``part_files`` and the raw batches (``write_raw``) of a followed process's part, in order."""
    path = Path(path)
    raw = [(int(m.group(1)), f) for f in path.iterdir() if (m := _RAW.match(f.name))]
    parquet = [(int((_PART.match(f.name) or _PARTS.match(f.name)).group(1)), f) for f in part_files(path)]
    return [f for _, f in sorted(raw + parquet)]


def adopt_batches(path: str | os.PathLike, batches: list[Path]) -> None:
    """Move batch files of other traces into the trace directory ``path``, after its own batches.

    For traces that share ``path``'s dataset ids, clock and rank (the parts of a followed run):
    each Parquet batch is renamed, not rewritten; runs of raw batches (``write_raw``, one row per access) become
    Parquet files of up to COMPACT_ROWS rows, their runs folded batch by batch as the writer folds its own. Its
    ``_meta.jsonl`` must already name their datasets."""
    path = Path(path)
    last = -1
    for f in path.iterdir():
        m = _PART.match(f.name) or _PARTS.match(f.name)
        if m:
            last = max(last, int(m.groups()[-1]))
    n = last + 1
    raw: list[tuple[Path, AccessColumns]] = []

    def convert() -> None:
        nonlocal n
        if raw:
            write_table(to_table(AccessColumns.concat(compact_runs(cols) for _, cols in raw)),
                        path / f"part-{n:06d}.parquet")
            n += 1
            for f, _ in raw:
                f.unlink()
            raw.clear()

    for batch in batches:
        if _RAW.match(batch.name):
            cols = read_raw(batch)
            if raw and sum(c.rows for _, c in raw) + cols.rows > COMPACT_ROWS:
                convert()
            raw.append((batch, cols))
            continue
        convert()
        os.replace(batch, path / f"part-{n:06d}.parquet")
        n += 1
    convert()


class ColumnarTraceWriter:
    """Writer of a columnar trace directory (see the module docstring); thread-safe.

    Accesses are buffered as tuples (or as columns, ``access_columns``) and
    written as one Parquet batch every BATCH_ROWS accesses or BATCH_SECONDS
    (``flush(force=False)``, what the tracer's flusher calls), or at once
    (``flush()``). Runs of regular accesses are folded (``compact_runs``)
    batch by batch. ``raw``: batches are written as numpy record arrays
    (``write_raw``; a followed process's part, converted at the run's merge).
    """

    def __init__(self, path: str | os.PathLike, header: TraceHeader):
        self.path = Path(path)
        _prepare(self.path)
        self._lock = threading.Lock()
        self._rows: list[tuple] = []
        self._irregular: dict[int, Selection] = {}
        self._collective: list[int] = []
        self._columns: list[AccessColumns] = []  # buffered before self._rows
        self._column_rows = 0
        self._since = time.perf_counter()
        self._rank = header.rank
        self._next_part = 0
        self._parts: list[Path] = []
        self.raw = False
        self.n_access = 0
        self._meta = open(self.path / META, "w", encoding="utf-8")
        self._meta.write(dumps({"t": "h", **header.get_config()}) + "\n")
        self._meta.flush()

    # -- records --
    def _meta_text(self, text: str, at_once: bool) -> None:
        with self._lock:
            if not self._meta.closed:
                self._meta.write(text)
                if at_once:
                    self._meta.flush()

    def dataset(self, rec) -> None:
        self._meta_text(dumps({"t": "d", **rec.get_config()}) + "\n", at_once=True)  # accesses that follow refer to it

    def resizes(self, rows: list[tuple]) -> None:
        """Changes of extent: (ds, shape, t0, rep, step, t_step) rows (``ResizeRecord``'s fields)."""
        # with the next batch (``flush``): a write per resize cost an append loop 26 us of the flusher's CPU per
        # frame, with the GIL held (benchmarks/tracing_overhead.py)
        if rows:
            self._meta_text(resize_lines(rows), at_once=False)

    def access(self, rec: AccessRecord) -> None:
        s = rec.selection
        with self._lock:
            if s.kind != "hyperslab":
                lo, hi = s.bounds()
                self._irregular[len(self._rows)] = s
                if s.points is not None:
                    start, count, stride, block = lo, (1,) * len(lo), (1,) * len(lo), tuple(np.subtract(hi, lo))
                else:
                    start, count, stride, block = s.start, s.count, s.stride, s.block
            else:
                start, count, stride, block = s.start, s.count, s.stride, s.block
            if rec.collective:
                self._collective.append(len(self._rows))
            self._rows.append((rec.dataset, rec.op == WRITE, tuple(start), tuple(count), tuple(stride),
                               tuple(block), rec.nelements, rec.nbytes, rec.t_start, rec.duration))
            self.n_access += 1
        self.flush(force=False)

    def hyperslab_access(self, ds: int, op: str, start, count, stride, block,
                         nelements: int, nbytes: int, t0: float, dt: float) -> None:
        self.hyperslab_rows([(ds, op == WRITE, tuple(start), tuple(count), tuple(stride), tuple(block),
                              nelements, nbytes, t0, dt)])

    def hyperslab_rows(self, rows: list[tuple]) -> None:
        """Many hyperslab accesses: (ds, is_write, start, count, stride, block, n, nbytes, t0, dt) tuples."""
        with self._lock:
            self._rows.extend(rows)
            self.n_access += len(rows)
        self.flush(force=False)

    def access_columns(self, cols: AccessColumns) -> None:
        """Many accesses at once as columns (``ds`` this trace's ids, ``t0`` from its origin): the bulk path
        of converters that hold arrays (the libhdf5 interposer's records), with no Python object per access."""
        if not cols.rows:
            return
        with self._lock:
            if self._rows:  # file order = call order
                self._columns.append(self._take_rows())
            self._columns.append(cols)
            self._column_rows += cols.rows
            self.n_access += cols.n_access
        self.flush(force=False)

    def access_lines(self, lines: list[str]) -> None:
        """Access records formatted as JSON Lines (``{"t":"a",...}``), for writers of schema-1 lines."""
        for line in lines:
            obj = json.loads(line)
            obj.pop("t", None)
            try:
                self.access(AccessRecord.from_config(obj, self._rank))
            except RecordError as exc:
                raise ValueError(f"{self.path}: bad access line: {exc}") from None

    # -- batches --
    def _take_rows(self) -> AccessColumns:
        """The buffered tuples as columns, taken out of the buffer (lock held)."""
        rows, irregular, coll = self._rows, self._irregular, self._collective
        self._rows, self._irregular, self._collective = [], {}, []
        cols = rows_to_columns(rows, irregular, self._rank)
        cols.collective[coll] = True
        return cols

    def flush(self, force: bool = True) -> None:
        with self._lock:
            pending = len(self._rows) + self._column_rows
            if self._meta.closed:
                return
            if not force and pending < BATCH_ROWS and time.perf_counter() - self._since < BATCH_SECONDS:
                return
            self._meta.flush()  # a batch on disk finds the resizes before it there
            if not pending:
                return
            parts = self._columns + ([self._take_rows()] if self._rows else [])
            self._columns, self._column_rows = [], 0
            self._since = time.perf_counter()
            cols = AccessColumns.concat(parts)
            name = f"part-{self._next_part:06d}"
            self._next_part += 1
            if self.raw and not cols.irregular:
                # never gathered: only parts are raw; runs folded by the merge (``adopt_batches``), so that the
                # calls stay exact for a salvage of the process's libhdf5 records (follow.merge_parts)
                write_raw(cols, self.path / f"{name}.npy")
                return
            part = self.path / f"{name}.parquet"
            write_table(to_table(compact_runs(cols)), part)
            self._parts.append(part)

    def close(self, missed: tuple[str, ...] = (), libraries: tuple[str, ...] = (), *, gather: bool = True) -> None:
        """End the trace; ``missed`` says what is known not to be in it, ``libraries`` the libhdf5 copies hooked
        (read back into ``TraceHeader.missed`` / ``.libraries``). ``gather``: batches into one file (about
        20 ms for a few small ones, each of which costs a reader 0.3-0.4 ms); a followed process's part does
        not, its exit being the user's program's time (a loader worker's)."""
        self.flush()
        with self._lock:
            if self._meta.closed:
                return
            if gather and len(self._parts) > 1:
                compact_parts(self._parts)
            end = {"t": "end", "n_access": self.n_access}
            if missed:
                end["missed"] = list(missed)
            if libraries:
                end["libraries"] = list(libraries)
            self._meta.write(dumps(end) + "\n")
            self._meta.close()


def compact_parts(parts: list[Path], max_rows: int = COMPACT_ROWS) -> None:
    """Rewrite runs of consecutive ``part-N`` batch files, up to ``max_rows`` rows each, as one
    ``parts-FIRST-LAST`` file each (what a writer does at close)."""
    group: list[Path] = []
    rows = 0
    for part in parts + [None]:
        n = pq.read_metadata(part).num_rows if part is not None else 0
        if part is None or (group and rows + n > max_rows):
            if len(group) > 1:
                _merge_parts(group)
            group, rows = [], 0
        if part is not None:
            group.append(part)
            rows += n


def _merge_parts(group: list[Path]) -> None:
    # not pq.read_table: pyarrow.dataset imports pandas, 0.3 s of the traced program's exit
    table = pa.concat_tables([pq.ParquetFile(p).read() for p in group], promote_options="default").combine_chunks()
    # dimension columns absent from early batches (a later dataset had more dimensions) get their defaults
    for name in table.column_names:
        m = re.match(r"^(count|stride|block)_\d+$", name)
        if m and table.column(name).null_count:
            table = table.set_column(table.column_names.index(name), name, table.column(name).fill_null(1))
        elif re.match(r"^(start|step)_\d+$", name) and table.column(name).null_count:
            table = table.set_column(table.column_names.index(name), name, table.column(name).fill_null(0))
    table = table.replace_schema_metadata({FORMAT_KEY: FORMAT_VERSION})
    first = _PART.match(group[0].name).group(1)
    last = _PART.match(group[-1].name).group(1)
    write_table(table, group[0].with_name(f"parts-{first}-{last}.parquet"))
    for p in group:
        p.unlink()


def rows_to_columns(rows: list[tuple], irregular: dict[int, Selection], rank: int) -> AccessColumns:
    """AccessColumns of writer tuples (ds, is_write, start, count, stride, block, n, nbytes, t0, dt)."""
    m = len(rows)
    ds, write, start, count, stride, block, n, nbytes, t0, dt = zip(*rows)
    ndim = np.fromiter(map(len, start), np.int8, m)
    width = int(ndim.max()) if m else 0
    if (ndim == width).all():
        dims = [np.array(x, np.int64).reshape(m, width) for x in (start, count, stride, block)]
    else:  # datasets of different ranks in one batch: pad
        dims = []
        for x, fill in ((start, 0), (count, 1), (stride, 1), (block, 1)):
            arr = np.full((m, width), fill, np.int64)
            for i, v in enumerate(x):
                arr[i, : len(v)] = v
            dims.append(arr)
    kind = np.zeros(m, np.int8)
    for i, s in irregular.items():
        kind[i] = POINTS if s.points is not None else ORTHOGONAL
        ndim[i] = s.points.shape[1] if s.points is not None else s.ndim
    return AccessColumns(
        ds=np.array(ds, np.int32), write=np.array(write, bool), rank=np.full(m, rank, np.int32),
        t0=np.array(t0, float), dt=np.array(dt, float), t_step=np.zeros(m),
        n=np.array(n, np.int64), nbytes=np.array(nbytes, np.int64), rep=np.ones(m, np.int64),
        kind=kind, ndim=ndim, start=dims[0], count=dims[1], stride=dims[2], block=dims[3],
        step=np.zeros((m, width), np.int64), irregular=dict(irregular),
    )


# ---------------------------------------------------------------------------- reading

def read_meta(path: str | os.PathLike, allow_truncated: bool):
    """(headers, datasets, resizes, complete, n_access at end) of a trace directory."""
    meta = Path(path) / META
    try:
        raw = meta.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: a directory without {META}, not an ioadvisor columnar trace") from None
    except OSError as exc:
        raise TraceError(f"{meta}: cannot read trace ({exc.strerror})") from None
    return read_records(str(meta), raw, allow_truncated, None)


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
    _check_version(meta, str(part))
    return part, reader, names


def _known(datasets) -> np.ndarray:
    """The dataset-id lookup table of ``_fill``."""
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
    """The columns of a row group as ``_fill`` takes them: ``g.columns`` with those to decode read."""
    read = [i for i, c in enumerate(g.names) if g.columns[c] is None]
    if not read:
        return g.columns
    try:
        # a large row group is decoded on Arrow's threads (a column each)
        table = g.reader.read_row_group(g.index, column_indices=read, use_threads=_threaded(g.info))
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{g.part}: not a readable Parquet batch ({str(exc).splitlines()[0][:120]})") from None
    return {**g.columns, **_columns(table)}


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
            cols = _allocate(g.info.num_rows, _width(g.names), [columns])
            _fill(cols, 0, g.info.num_rows, columns, str(g.part), g.base, known)
            yield cols


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
    """The value every batch's column holds (``_fill``'s ``columns`` entries), or None."""
    first = values[0] if values else None
    if type(first) is not int or any(type(v) is not int or v != first for v in values):
        return None
    return first


def _allocate(rows: int, width: int, batches: list[dict]) -> AccessColumns:
    """Columns for ``_fill`` to fill with ``batches`` (the ``columns`` of each batch, in order). A column holding one
    value in every batch is a read-only zero-stride view of it: nothing to allocate, touch or write (19 of a loader
    trace's 22 columns: 112 of its 144 bytes per row); the others are zeroed (``_fresh``)."""
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


def load_columnar(path: str | os.PathLike, *, allow_truncated: bool = False, times=TIMES, step=None) -> Trace:
    """The trace in directory ``path`` (``load_trace``); ``step(rows read, rows)`` after each row group."""
    headers, datasets, resizes, complete, n_end = read_meta(path, allow_truncated)
    groups = _groups([_open_part(p) for p in part_files(path)], times)  # listed once: a live trace may gain parts
    cols = _allocate(sum(g.info.num_rows for g in groups), max([_width(g.names) for g in groups], default=0),
                     [g.columns for g in groups])
    known = _known(datasets)
    pos = 0
    for g in groups:  # filled in place: no second copy of the trace
        _fill(cols, pos, g.info.num_rows, _decode(g), str(g.part), g.base, known)
        pos += g.info.num_rows
        if step is not None:
            step(pos, cols.rows)
    if complete and n_end is not None and cols.n_access != n_end:
        raise TraceError(f"{Path(path) / META}: end record counts {n_end} accesses, the batches hold "
                         f"{cols.n_access}")
    return Trace(headers, datasets, cols, resizes, complete, str(path))


def count_accesses(path: str | os.PathLike) -> tuple[dict, int, int, int]:
    """(first header as JSON, datasets, accesses, reads) from the records file and the op/rep columns only."""
    path = Path(path)
    with open(path / META, "rb") as fh:
        head = json.loads(fh.readline() or b"{}")
        n_ds = sum(line.startswith(b'{"t":"d"') for line in fh)
    n_acc = n_read = 0
    for part in part_files(path):
        part, reader, names = _open_part(part)
        t = reader.read_all(column_indices=[names.index("op"), names.index("rep")])
        rep = _values(t.column("rep"), "rep", str(part))
        n_acc += int(rep.sum())
        n_read += int(rep[_values(t.column("op"), "op", str(part)) == 0].sum())
    return head, n_ds, n_acc, n_read


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
