"""Reading and writing traces (docs/trace-format.md): JSON Lines files and columnar trace directories.

``*.jsonl`` paths are JSON Lines (schema 1); every other path is a columnar
trace (``instrumentation.columnar``). Both writers stream: records are
buffered briefly and flushed in batches, so memory stays bounded and a
process killed mid-run leaves a readable prefix (``load_trace(...,
allow_truncated=True)``). The reader validates every record and names file and
line on error. Loaded traces hold their accesses as ``AccessColumns``.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from .columns import KINDS, AccessColumns, as_columns, fold_runs
from .tracedir import is_jsonl
from .records import (
    SCHEMA_VERSION,
    AccessRecord,
    DatasetRecord,
    RecordError,
    ResizeRecord,
    TraceHeader,
)
from .errors import IoadvisorError

FLUSH_EVERY = 256
"""Records buffered before a write; also flushed at least every FLUSH_SECONDS."""
FLUSH_SECONDS = 0.5


class TraceError(IoadvisorError, ValueError):
    """A trace file cannot be read; str() is one line naming file and line."""


def _json_default(obj):
    if isinstance(obj, np.generic):
        value = obj.item()
        # long double and its complex have no Python counterpart: item() returns them unchanged
        return repr(value) if isinstance(value, np.generic) else value
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return repr(obj)


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), default=_json_default, allow_nan=True)


def _ilist(values) -> str:
    return "[" + ",".join(map(str, values)) + "]"


class TraceWriter:
    """Append-only writer of one trace; thread-safe.

    ``TraceWriter(path, header)`` writes JSON Lines when ``path`` ends in
    ``.jsonl`` and the columnar format (``instrumentation.columnar``) otherwise.
    """

    def __new__(cls, path: str | os.PathLike, header: TraceHeader):
        if cls is TraceWriter:
            if is_jsonl(path):
                cls = JsonlTraceWriter
            else:
                from .columnar import ColumnarTraceWriter as cls
        return super().__new__(cls)


def hyperslab_head(ds: int, op: str, ndim: int, count, stride, block, n: int, nbytes: int) -> str:
    """The JSON Lines access line of a hyperslab up to its t0 value, as a %-template of start."""
    start = "[" + ",".join(["%d"] * ndim) + "]"
    return (f'{{"t":"a","ds":{ds},"op":"{op}","sel":{{"start":{start},"count":{_ilist(count)},'
            f'"stride":{_ilist(stride)},"block":{_ilist(block)}}},"n":{n},"bytes":{nbytes},"t0":')


def resize_lines(rows: list[tuple]) -> str:
    """Resize records' JSON lines, as ``_dumps`` of their configs writes them, from (ds, shape, t0, rep, step,
    t_step) rows (times from ``perf_counter``: finite), formatted with one template per rank of array (json.dumps:
    5-10 us a line)."""
    templates: dict[tuple[int, bool], str] = {}
    lines = []
    for ds, shape, t0, rep, step, t_step in rows:
        key = (len(shape), rep != 1)
        line = templates.get(key)
        if line is None:
            ints = "[" + ",".join(["%d"] * len(shape)) + "]"
            line = templates[key] = ('{"t":"r","ds":%d,"shape":' + ints + ',"t0":%r'
                                     + (',"rep":%d,"step":' + ints + ',"t_step":%r}\n' if rep != 1 else "}\n"))
        lines.append(line % ((ds, *shape, float(t0), rep, *step, float(t_step)) if rep != 1 else (ds, *shape, float(t0))))
    return "".join(lines)


class JsonlTraceWriter(TraceWriter):
    """The JSON Lines writer (schema 1)."""

    def __init__(self, path: str | os.PathLike, header: TraceHeader):
        self._templates: dict = {}
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._buf: list[str] = []
        self._last_flush = time.perf_counter()
        self.n_access = 0
        self._fh.write(_dumps({"t": "h", **header.get_config()}) + "\n")
        self._fh.flush()

    def _push(self, line: str) -> None:
        with self._lock:
            self._buf.append(line)
            now = time.perf_counter()
            if len(self._buf) >= FLUSH_EVERY or now - self._last_flush > FLUSH_SECONDS:
                self._flush_locked(now)

    def _flush_locked(self, now: float) -> None:
        if self._buf and not self._fh.closed:
            self._fh.write("\n".join(self._buf) + "\n")
            self._fh.flush()
        self._buf.clear()
        self._last_flush = now

    def dataset(self, rec: DatasetRecord) -> None:
        line = _dumps({"t": "d", **rec.get_config()})
        with self._lock:  # datasets go out at once: accesses that follow refer to them
            self._buf.append(line)
            self._flush_locked(time.perf_counter())

    def access(self, rec: AccessRecord) -> None:
        self.n_access += 1
        self._push(_dumps({"t": "a", **rec.get_config()}))

    def hyperslab_access(self, ds: int, op: str, start, count, stride, block,
                         nelements: int, nbytes: int, t0: float, dt: float) -> None:
        """Fast path for the common case: a regular hyperslab given as int sequences."""
        self.n_access += 1
        self._push(
            f'{{"t":"a","ds":{ds},"op":"{op}","sel":{{"start":{_ilist(start)},"count":{_ilist(count)},'
            f'"stride":{_ilist(stride)},"block":{_ilist(block)}}},"n":{nelements},"bytes":{nbytes},'
            f'"t0":{t0!r},"dt":{dt!r}}}'
        )

    def access_lines(self, lines: list[str]) -> None:
        """Many access records at once, already formatted as ``hyperslab_access`` formats them."""
        with self._lock:
            self.n_access += len(lines)
            self._buf.extend(lines)

    def hyperslab_rows(self, rows: list[tuple]) -> None:
        """Many hyperslab accesses at once: (ds, is_write, start, count, stride, block, n, nbytes, t0, dt)."""
        templates = self._templates
        lines = []
        for ds, write, start, count, stride, block, n, nbytes, t0, dt in rows:
            key = (ds, write, len(start), count, stride, block, n, nbytes)
            head = templates.get(key)
            if head is None:
                if len(templates) > 4096:
                    templates.clear()
                head = templates[key] = hyperslab_head(ds, "write" if write else "read", len(start), count,
                                                       stride, block, n, nbytes)
            lines.append(f'{head % tuple(start)}{t0!r},"dt":{dt!r}}}')
        self.access_lines(lines)

    def access_columns(self, cols) -> None:
        """Many accesses as ``AccessColumns`` (``ds`` this trace's ids, ``t0`` from its origin); JSON Lines
        is text per access, so each gets its line."""
        if cols.irregular or (cols.rep != 1).any():
            for rec in cols.records():
                self.access(rec)
            return
        nd = cols.ndim.tolist()
        dims = [[tuple(row[:k]) for row, k in zip(getattr(cols, name).tolist(), nd)]
                for name in ("start", "count", "stride", "block")]
        self.hyperslab_rows(list(zip(cols.ds.tolist(), cols.write.tolist(), *dims, cols.n.tolist(),
                                     cols.nbytes.tolist(), cols.t0.tolist(), cols.dt.tolist())))

    def resizes(self, rows: list[tuple]) -> None:
        """Changes of extent: (ds, shape, t0, rep, step, t_step) rows (``ResizeRecord``'s fields)."""
        if rows:
            self._push(resize_lines(rows)[:-1])

    def flush(self, force: bool = True) -> None:
        with self._lock:
            self._flush_locked(time.perf_counter())

    def close(self, missed: tuple[str, ...] = (), libraries: tuple[str, ...] = (), *, gather: bool = True) -> None:
        """End the file; ``missed`` says what is known not to be in it, ``libraries`` the libhdf5 copies hooked
        (read back into ``TraceHeader.missed`` / ``.libraries``). ``gather``: unused (one file already)."""
        with self._lock:
            if self._fh.closed:
                return
            end = {"t": "end", "n_access": self.n_access}
            if missed:
                end["missed"] = list(missed)
            if libraries:
                end["libraries"] = list(libraries)
            self._buf.append(_dumps(end))
            self._flush_locked(time.perf_counter())
            self._fh.close()


@dataclass(init=False, eq=False)
class Trace:
    """A loaded trace: header(s), datasets by id, accesses as columns, resizes.

    ``columns`` (``AccessColumns``) is what the models read; ``accesses``, one
    AccessRecord per access, is made on first use for code that replays
    accesses one by one. A merged multi-rank trace has one header per rank
    (``headers``), datasets renumbered so that one key has one id, and a rank
    on each access. ``Trace(headers, datasets, accesses, ...)`` takes
    AccessColumns or a list of AccessRecords; records are held as a columnar
    trace stores them (``fold_runs``).
    """

    headers: list
    datasets: dict
    accesses: list  # the property below: dataclasses.replace(trace, accesses=...) works
    resizes: list
    complete: bool
    source: str

    def __init__(self, headers: list[TraceHeader], datasets: dict[int, DatasetRecord],
                 accesses: "AccessColumns | Sequence[AccessRecord]" = (), resizes=(), complete: bool = True,
                 source: str = ""):
        self.headers = list(headers)
        self.datasets = datasets
        self.resizes = list(resizes)
        self.complete = complete
        self.source = source
        if accesses is None:
            accesses = ()
        if isinstance(accesses, AccessColumns):
            self.columns, self._records = accesses, None
        else:
            self.accesses = accesses

    @property
    def accesses(self) -> list[AccessRecord]:
        if self._records is None:
            self._records = self.columns.records()
        return self._records

    @accesses.setter
    def accesses(self, records: Sequence[AccessRecord]) -> None:
        records = list(records)
        unfolded = AccessColumns.from_records(records)
        self.columns = fold_runs(unfolded)
        # records in another order than the columns' (ranks regrouped) are made again from the columns
        self._records = records if self.columns is unfolded else None

    @property
    def n_access(self) -> int:
        return self.columns.n_access

    @property
    def header(self) -> TraceHeader:
        return self.headers[0]

    @property
    def nprocs(self) -> int:
        return max(h.size for h in self.headers)

    @property
    def missed(self) -> tuple[str, ...]:
        """What is known not to be in the trace, over all ranks (empty: nothing known to be missing)."""
        return tuple(m for h in self.headers for m in h.missed)

    def dataset_by_key(self, key: str) -> DatasetRecord:
        for d in self.datasets.values():
            if d.key == key:
                return d
        raise KeyError(key)

    def same_array(self, dataset_id: int) -> list[int]:
        """Ids of the records of ``dataset_id``'s array (``array_identities``: its key, not recreated between)."""
        identity = array_identities(self.datasets)
        return [i for i in sorted(self.datasets) if identity[i] == identity[dataset_id]]

    def accesses_of(self, dataset_id: int) -> list[AccessRecord]:
        return [a for a in self.accesses if a.dataset == dataset_id]

    def columns_of(self, dataset_id: int) -> AccessColumns:
        cols = self.columns
        mine = cols.ds == dataset_id
        return cols if mine.all() else cols.take(mine)

    def accessed(self) -> list[DatasetRecord]:
        """Datasets with at least one access, in id order."""
        used = set(np.unique(self.columns.ds).tolist())
        return [d for i, d in sorted(self.datasets.items()) if i in used]

    def to_dataframe(self, *, runs: bool = False):
        """The accesses as a pandas DataFrame, one column per field: dataset (key), op, rank, t_start,
        duration, nelements, nbytes, kind, and start/count/stride/block per dimension (``start_0``, ...; for an
        index-list or point selection its bounding box). One row per access; ``runs=True``: one per stored row,
        a run of ``rep`` alike accesses ``step`` apart kept as one (with ``rep``, ``t_step`` and ``step_*``)."""
        import pandas as pd

        cols = self.columns if runs else self.columns.expanded()
        keys = {i: d.key for i, d in self.datasets.items()}
        ids = sorted(keys)
        out = {
            "dataset": pd.Categorical.from_codes(np.searchsorted(ids, cols.ds), [keys[i] for i in ids])
            if ids and cols.rows else pd.Categorical([]),
            "op": pd.Categorical.from_codes(cols.write.astype(np.int8), ["read", "write"]),
            "rank": cols.rank, "t_start": cols.t0, "duration": cols.dt, "nelements": cols.n, "nbytes": cols.nbytes,
            "kind": pd.Categorical.from_codes(cols.kind, list(KINDS)), "collective": cols.collective,
        }
        if runs:
            out.update(rep=cols.rep, t_step=cols.t_step)
        fields = ("start", "count", "stride", "block") + (("step",) if runs else ())
        for name in fields:
            values = getattr(cols, name)
            for d in range(cols.width):
                out[f"{name}_{d}"] = values[:, d]
        return pd.DataFrame(out)

    def extent(self, dataset_id: int) -> tuple[int, ...]:
        """Largest extent the dataset reaches in the trace (see ``extent``); kept while ``columns`` and the
        dataset's resizes are the same (an advise asks for it once per phase: a pass over 10M rows each)."""
        ds = self.datasets[dataset_id]
        resized = tuple(s for r in self.resizes if r.dataset == dataset_id for s in r.extents)
        cached = self.__dict__.get("_extents")
        if cached is None or cached[0] is not self.columns:
            cached = self._extents = (self.columns, {})
        got = cached[1].get(dataset_id)
        if got is None or got[0] is not ds or got[1] != resized:
            got = cached[1][dataset_id] = (ds, resized, extent(ds, self.columns_of(dataset_id), resized))
        return got[2]


def extent(dataset: DatasetRecord, accesses, resized=()) -> tuple[int, ...]:
    """Largest extent an array reaches: its recorded shape, resizes, and every selection's upper corner.

    ``accesses``: AccessColumns or AccessRecords of this dataset."""
    ndim = len(dataset.shape)
    if not ndim:
        return ()
    cols = as_columns(accesses)
    tops = [np.asarray(dataset.shape, np.int64)]
    tops += [np.asarray(s, np.int64) for s in resized if len(s) == ndim]
    top = cols.upper_corner(ndim) if cols.width >= ndim else None
    if top is not None:
        tops.append(top)
    return tuple(int(v) for v in np.max(np.stack(tops), axis=0))


def _parse_line(text: str, where: str, rank: int):
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict) or "t" not in obj:
        raise TraceError(f"{where}: record has no type field 't'")
    kind = obj.pop("t")
    try:
        if kind == "a":
            return kind, AccessRecord.from_config(obj, rank)
        if kind == "d":
            return kind, DatasetRecord.from_config(obj)
        if kind == "r":
            return kind, ResizeRecord.from_config(obj, rank)
        if kind == "h":
            return kind, TraceHeader.from_config(obj)
        if kind == "end":
            return kind, obj
    except RecordError as exc:
        raise TraceError(f"{where}: {exc}") from None
    raise TraceError(f"{where}: unknown record type {kind!r:.20}")


def _not_a_trace(path: str, raw: bytes, exc: Exception) -> str:
    """Why a file whose first line is no header record is not a trace, in one line."""
    if raw.startswith(b"PAR1"):
        what = ("a Parquet file, not an ioadvisor trace (a columnar trace is a directory of a _meta.jsonl file "
                "and part-*.parquet batches)")
    elif raw.startswith(b"\x89HDF\r\n\x1a\n"):
        what = "an HDF5 file, not a trace (trace a program reading it: `ioadvisor run -- python app.py`)"
    elif isinstance(exc, UnicodeDecodeError) or b"\0" in raw[:4096]:
        what = "binary data, not an ioadvisor trace (JSON Lines text or a columnar trace directory)"
    else:
        detail = str(exc).split(": ", 1)[-1] if isinstance(exc, TraceError) else str(exc)
        what = f"not an ioadvisor trace: no header record ({detail})"
    return f"{path}:1: {what}"


def _read_records(path: str, raw: bytes, allow_truncated: bool, accesses: list | None):
    """Header(s), datasets, resizes and completeness of JSON Lines records (``accesses`` collects access records;
    None: access lines are an error, as in a columnar trace's ``_meta.jsonl``)."""
    lines = raw.split(b"\n")
    ends_clean = raw.endswith(b"\n")
    if ends_clean:
        lines.pop()
    if not lines or not lines[0].strip():
        raise TraceError(f"{path}:1: empty trace, no header line")
    header = None
    other_headers: list[TraceHeader] = []
    datasets: dict[int, DatasetRecord] = {}
    resizes: list[ResizeRecord] = []
    complete = False
    n_end = None
    rank = 0
    for i, bline in enumerate(lines, start=1):
        where = f"{path}:{i}"
        last = i == len(lines)
        try:
            text = bline.decode("utf-8")
            kind, rec = _parse_line(text, where, rank)
        except (TraceError, UnicodeDecodeError) as exc:
            if header is None and not (bline.startswith(b"{") and b'"h"' in bline[:200]):
                raise TraceError(_not_a_trace(path, raw, exc)) from None  # not even a header: no trace
            if last and not ends_clean and allow_truncated:
                complete = False
                break
            msg = str(exc) if isinstance(exc, TraceError) else f"{where}: not UTF-8 text"
            if last and not ends_clean:
                msg += " (truncated last line: pass allow_truncated / --allow-truncated to skip it)"
            raise TraceError(msg) from None
        if header is None:
            if kind != "h":
                raise TraceError(f"{where}: first record must be the header (t='h'), got t={kind!r}")
            header = rec
            rank = header.rank
            continue
        if kind == "a":
            if accesses is None:
                raise TraceError(f"{where}: access record in the metadata of a columnar trace")
            if rec.dataset not in datasets:
                raise TraceError(f"{where}: access refers to unknown dataset id {rec.dataset}")
            accesses.append(rec)
        elif kind == "d":
            datasets[rec.id] = rec
        elif kind == "r":
            if rec.dataset not in datasets:
                raise TraceError(f"{where}: resize refers to unknown dataset id {rec.dataset}")
            resizes.append(rec)
        elif kind == "end":
            complete = True
            if rec.get("missed"):  # learnt while the process ran, after its header was written
                header = replace(header, missed=header.missed + tuple(map(str, rec["missed"])))
            if rec.get("libraries"):
                header = replace(header, libraries=header.libraries + tuple(map(str, rec["libraries"])))
            n_end = rec.get("n_access")
        elif header.size > 1 and rec.rank not in {h.rank for h in [header, *other_headers]}:
            other_headers.append(rec)  # a merged trace keeps every rank's header
        else:
            raise TraceError(f"{where}: a second header line for rank {rec.rank}")
    if header is None:  # allow_truncated, and the cut-off line was the header
        raise TraceError(f"{path}:1: the header line is cut off: nothing of the trace is readable")
    if not complete and not allow_truncated:
        raise TraceError(
            f"{path}:{len(lines)}: trace has no end record (the traced process did not finish): "
            "pass allow_truncated / --allow-truncated to use the prefix"
        )
    return [header, *other_headers], datasets, resizes, complete, n_end


def load_trace(path: str | os.PathLike, *, allow_truncated: bool = False,
               times: Sequence[str] = ("t0", "dt", "t_step"), step=None) -> Trace:
    """Read and validate one trace (JSON Lines file or columnar trace directory).

    With ``allow_truncated`` what a killed process left is used: JSON Lines
    skip a cut-off last line, columnar traces keep their complete batches; the
    trace is marked incomplete. Any other bad record is an error.
    ``times``: the timing columns of a columnar trace to read (``trace show`` needs ``dt`` only, ``advise``
    none); the others are 0. ``step(done, total)``: called as a columnar trace's rows are read (a progress bar).
    """
    path = str(path)
    if os.path.isdir(path):
        from .columnar import load_columnar

        return load_columnar(path, allow_truncated=allow_truncated, times=times, step=step)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read trace ({exc.strerror})") from None
    accesses: list[AccessRecord] = []
    headers, datasets, resizes, complete, _ = _read_records(path, raw, allow_truncated, accesses)
    return Trace(headers, datasets, accesses, resizes, complete, path)


def array_identities(datasets: dict[int, DatasetRecord]) -> dict[int, tuple[str, int]]:
    """Each record's array: (key, generation). A file recreated under the same name makes new arrays: each
    creation of a key after its first starts a generation; records that only opened it (another library,
    reopened) belong to the generation before them (records in id order, the order the tracer saw them)."""
    created: dict[str, int] = {}
    out = {}
    for i in sorted(datasets):
        d = datasets[i]
        if d.created:
            created[d.key] = created.get(d.key, 0) + 1
        out[i] = (d.key, max(created.get(d.key, 0) - 1, 0))
    return out


def _unify(traces: list[Trace]):
    """Datasets unified by array identity (``array_identities``; ids renumbered in order of first sight) and each
    trace's id map."""
    by_key: dict[tuple[str, int], DatasetRecord] = {}
    remaps = []
    for tr in traces:
        remap = {}
        identity = array_identities(tr.datasets)
        for ds in tr.datasets.values():
            ident = identity[ds.id]
            if ident not in by_key:
                by_key[ident] = replace(ds, id=len(by_key))
            remap[ds.id] = by_key[ident].id
        remaps.append(remap)
    return by_key, remaps


def remap_columns(cols: AccessColumns, remap: dict[int, int], shift: float, rank: int | None) -> AccessColumns:
    """Dataset ids mapped, times shifted by ``shift`` seconds, rank set (None: kept)."""
    if not cols.rows:
        return cols
    lut = np.zeros(max(max(remap, default=0), int(cols.ds.max())) + 1, np.int32)
    for old, new in remap.items():
        lut[old] = new
    changes = {"ds": lut[cols.ds], "t0": cols.t0 + shift}
    if rank is not None:
        changes["rank"] = np.full(cols.rows, rank, np.int32)
    return cols._with(**changes)


def clock_shift(cols: AccessColumns, headers: list[TraceHeader], origin: float) -> AccessColumns:
    """Times moved onto a clock starting at ``origin``: each process's accesses by its own header's origin
    (one header per rank; process parts of one rank each have their own trace)."""
    if not cols.rows:
        return cols
    by_rank = np.zeros(max(int(cols.rank.max()), max(h.rank for h in headers)) + 1)
    for h in headers:
        by_rank[h.rank] = h.t_origin_unix - origin
    return cols._with(t0=cols.t0 + by_rank[cols.rank])


def merge_traces(traces: list[Trace]) -> Trace:
    """One view of several ranks' traces: datasets unified by key, accesses keep their rank, in time order.

    Holds every rank in memory; ``merge_trace_files`` streams rank files into a columnar trace instead."""
    if not traces:
        raise ValueError("no traces to merge")
    by_key, remaps = _unify(traces)
    origin = min(h.t_origin_unix for tr in traces for h in tr.headers)
    parts, resizes = [], []
    for tr, remap in zip(traces, remaps):
        own = tr.header.rank if len(tr.headers) == 1 else None  # one process's own file: its accesses are its rank's
        parts.append(clock_shift(remap_columns(tr.columns, remap, 0.0, own), tr.headers, origin))
        resizes += [replace(r, dataset=remap[r.dataset]) for r in tr.resizes]
    cols = AccessColumns.concat(parts)
    if cols.rows:
        cols = cols.take(np.argsort(cols.t0, kind="stable"))
    return Trace(
        headers=sorted((h for tr in traces for h in tr.headers), key=lambda h: h.rank),
        datasets={d.id: d for d in by_key.values()},
        accesses=cols,
        resizes=resizes,
        complete=all(tr.complete for tr in traces),
        source=",".join(tr.source for tr in traces),
    )


def replace_trace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Move the trace ``src`` to ``dst``, replacing it: atomic for files, a directory is removed first."""
    dst = Path(dst)
    if dst.is_dir():
        import shutil

        shutil.rmtree(dst)
    os.replace(src, dst)


def write_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write a loaded (possibly merged) trace out: JSON Lines for ``*.jsonl``, else columnar.

    A merged trace starts with rank 0's header, ``size`` set to the number of
    ranks, followed by the other ranks' headers; each access names its rank.
    """
    if not is_jsonl(path):
        from .columnar import write_columnar

        write_columnar(trace, path)
        return
    size = trace.nprocs
    with open(path, "w", encoding="utf-8") as fh:
        for h in trace.headers:
            fh.write(_dumps({"t": "h", **replace(h, size=size).get_config()}) + "\n")
        for d in trace.datasets.values():
            fh.write(_dumps({"t": "d", **d.get_config()}) + "\n")
        for a in trace.accesses:
            fh.write(_dumps({"t": "a", **a.get_config()}) + "\n")
        for r in trace.resizes:
            fh.write(_dumps({"t": "r", **r.get_config()}) + "\n")
        fh.write(_dumps({"t": "end", "n_access": trace.n_access}) + "\n")


__all__ = [
    "SCHEMA_VERSION",
    "Trace",
    "TraceError",
    "TraceWriter",
    "extent",
    "is_jsonl",
    "load_trace",
    "merge_traces",
    "replace_trace",
    "write_trace",
]
