"""The live writer of a columnar trace directory (docs/trace-format.md) and the compaction of its batches at
close."""
from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from .arrowcodec import COMPACT_ROWS, FORMAT_KEY, FORMAT_VERSION, StreamedBatch, pa, pq, to_table, write_table
from .columns import ORTHOGONAL, POINTS, AccessColumns, compact_runs
from .jsonl import resize_lines
from .opens import CLOSE, cut_at
from .rawparts import write_raw
from .records import WRITE, AccessRecord, RecordError, Selection, TraceHeader
from .tracedir import META, PART as _PART, prepare as _prepare
from .tracemodel import dumps

BATCH_ROWS = 1 << 16
"""Accesses buffered before a batch is written; also written at least every BATCH_SECONDS."""
BATCH_SECONDS = 1.0
STAGE_ROWS = 1 << 12
"""``stage`` writes a row group once this many accesses are buffered (fewer wait for the next one)."""
GATHER_BELOW = BATCH_ROWS // 2
"""Batches of fewer rows are gathered into one file at close (``compact_parts``); larger ones stay as written."""


class ColumnarTraceWriter:
    """Writer of a columnar trace directory (see columnar.py's docstring); thread-safe.

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
        self._other_rank: dict[int, int] = {}  # row -> rank, for records of another rank (an import, a merge)
        self._columns: list[AccessColumns] = []  # buffered before self._rows
        self._column_rows = 0
        self._prefolded = False  # all that is buffered came folded (``access_columns(folded=True)``)
        self._since = time.perf_counter()
        self._rank = header.rank
        self._next_part = 0
        self._parts: list[Path] = []
        self.raw = False
        self._open: StreamedBatch | None = None  # the batch ``stage`` writes into, not yet in place
        self.n_access = 0
        self._closes: list[float] = []  # times of the closes recorded (``opened``), in order
        self._open_text: dict[tuple, tuple[str, str]] = {}  # ``opened``'s line around t0, per record but its time
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
        # frame, with the GIL held (benchmarks/speed/tracing_overhead.py)
        if rows:
            self._meta_text(resize_lines(rows), at_once=False)

    def opened(self, rec) -> None:
        """An open or close of a file or dataset (``opens.OpenRecord``), written with the next batch; no run of
        accesses is folded across a close (``opens.cut_at``)."""
        key = (rec.file, rec.path, rec.event, rec.rank, rec.process, rec.via)
        around = self._open_text.get(key)
        if around is None:  # encoded once: a temporary handle per access (f["x"][i]) opens and closes at each
            text = dumps({"t": "o", **replace(rec, t_start=0.5).get_config()})
            at = text.find('"t0":0.5')
            around = self._open_text[key] = (text[:at + 5], text[at + 8:] + "\n") if at >= 0 else ()
        line = (f"{around[0]}{float(rec.t_start)!r}{around[1]}" if around  # else: no time field to fill in
                else dumps({"t": "o", **rec.get_config()}) + "\n")
        self._meta_text(line, at_once=False)
        if rec.event == CLOSE:
            with self._lock:
                self._closes.append(rec.t_start)

    def closes_pending(self) -> bool:
        """Whether a close was recorded that accesses not yet written may come before (``_cut`` tells them apart)."""
        return bool(self._closes)

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
            if rec.rank != self._rank:
                self._other_rank[len(self._rows)] = rec.rank
            self._rows.append((rec.dataset, rec.op == WRITE, tuple(start), tuple(count), tuple(stride),
                               tuple(block), rec.nelements, rec.nbytes, rec.t_start, rec.duration))
            self.n_access += 1
            self._prefolded = False
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
            self._prefolded = self._prefolded and not rows
        self.flush(force=False)

    def access_columns(self, cols: AccessColumns, folded: bool = False) -> None:
        """Many accesses at once as columns (``ds`` this trace's ids, ``t0`` from its origin): the bulk path
        of converters that hold arrays (the libhdf5 interposer's records), with no Python object per access.
        ``folded``: runs already folded as a batch's are (instrumentation/heldtakes.py), not folded again when
        the batch holds nothing else."""
        if not cols.rows:
            return
        with self._lock:
            self._prefolded = folded and not (self._rows or self._column_rows)
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
    def pending(self) -> int:
        """Accesses buffered, not yet in a batch."""
        with self._lock:
            return len(self._rows) + self._column_rows

    def due(self, more: int = 0) -> bool:
        """Whether ``flush(force=False)`` would write a batch with ``more`` accesses buffered besides these."""
        with self._lock:
            staged = self._open.rows if self._open is not None else 0
            return (len(self._rows) + self._column_rows + staged + more >= BATCH_ROWS
                    or time.perf_counter() - self._since >= BATCH_SECONDS)

    def _take_rows(self) -> AccessColumns:
        """The buffered tuples as columns, taken out of the buffer (lock held)."""
        rows, irregular, coll, other = self._rows, self._irregular, self._collective, self._other_rank
        self._rows, self._irregular, self._collective, self._other_rank = [], {}, [], {}
        cols = rows_to_columns(rows, irregular, self._rank)
        cols.collective[coll] = True
        if other:
            cols.rank[list(other)] = list(other.values())
        return cols

    def flush(self, force: bool = True) -> None:
        with self._lock:
            pending = len(self._rows) + self._column_rows
            if self._meta.closed:
                return
            staged = self._open.rows if self._open is not None else 0
            if not force and pending + staged < BATCH_ROWS and time.perf_counter() - self._since < BATCH_SECONDS:
                return
            self._meta.flush()  # a batch on disk finds the resizes before it there
            if self._open is not None:  # the staged batch, with what is buffered, put in place
                self._stage(pending)
                self._open.close()
                self._open = None
                self._since = time.perf_counter()
                return
            if not pending:
                return
            parts = self._columns + ([self._take_rows()] if self._rows else [])
            self._columns, self._column_rows = [], 0
            self._since = time.perf_counter()
            cols = AccessColumns.concat(parts)
            folded, self._prefolded = self._prefolded, False
            name = f"part-{self._next_part:06d}"
            self._next_part += 1
            if self.raw and not cols.irregular:
                # never gathered: only parts are raw; runs folded by the merge (``adopt_batches``), so that the
                # calls stay exact for a salvage of the process's libhdf5 records (follow.merge_parts)
                write_raw(cols, self.path / f"{name}.npy")
                return
            part = self.path / f"{name}.parquet"
            write_table(to_table(cols if folded else compact_runs(self._cut(cols))), part)
            self._parts.append(part)

    def _cut(self, cols: AccessColumns) -> AccessColumns:
        """``cols`` with the closes recorded among them told (``opens.cut_at``); closes before its last access are
        forgotten (a later batch's accesses come after them: only their order against the closes matters)."""
        closes = self._closes
        if not closes or not cols.rows:
            return cols
        last = float(cols.t0.max())
        self._closes = [c for c in closes if c > last]
        return cut_at(cols, closes)

    def stage(self) -> None:
        """Write what is buffered (STAGE_ROWS or more) as a row group of a batch that stays under its temporary
        name until ``flush`` puts it in place, as a due or forced flush would have written it whole: a launcher
        beside its program encodes the records as they come, and its exit only the last ones
        (instrumentation/launch.py). A kill loses what a flush would have: the batch not yet in place."""
        with self._lock:
            pending = len(self._rows) + self._column_rows
            if pending >= STAGE_ROWS and not self._meta.closed and not self.raw:
                self._meta.flush()
                self._stage(pending)

    def _stage(self, pending: int) -> None:
        """Buffered accesses into the staged batch (lock held)."""
        if not pending:
            return
        parts = self._columns + ([self._take_rows()] if self._rows else [])
        self._columns, self._column_rows, self._prefolded = [], 0, False
        table = to_table(compact_runs(self._cut(AccessColumns.concat(parts))))
        if self._open is not None and not self._open.fits(table):
            self._open.close()
            self._open = None
        if self._open is None:
            part = self.path / f"part-{self._next_part:06d}.parquet"
            self._next_part += 1
            self._open = StreamedBatch(part, table)
            self._parts.append(part)
        else:
            self._open.append(table)

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
    """Rewrite runs of consecutive small ``part-N`` batch files (under GATHER_BELOW rows each), up to ``max_rows``
    rows each, as one ``parts-FIRST-LAST`` file each (what a writer does at close). A larger batch stays as written:
    a reader's fixed cost per file is small beside its rows, and rewriting it would cost the exit time in
    proportion to every record (a busy C program's run: benchmarks/speed/tracing_overhead.py)."""
    group: list[Path] = []
    rows = 0
    for part in parts + [None]:
        n = pq.read_metadata(part).num_rows if part is not None else 0
        large = n >= GATHER_BELOW
        if part is None or large or (group and rows + n > max_rows):
            if len(group) > 1:
                _merge_parts(group)
            group, rows = [], 0
        if part is not None and not large:
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
        elif re.match(r"^(start|step)_\d+$|^proc$", name) and table.column(name).null_count:
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
