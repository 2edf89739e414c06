"""Reading and writing trace files (JSON Lines, see docs/trace-format.md).

The writer streams: records are buffered briefly and flushed in batches, so
memory stays bounded and a process killed mid-run leaves a readable prefix
(at worst a truncated last line, which ``load_trace(..., allow_truncated=True)``
skips). The reader validates every line and names file and line on error.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .records import (
    SCHEMA_VERSION,
    AccessRecord,
    DatasetRecord,
    RecordError,
    ResizeRecord,
    TraceHeader,
)

FLUSH_EVERY = 256
"""Records buffered before a write; also flushed at least every FLUSH_SECONDS."""
FLUSH_SECONDS = 0.5


class TraceError(ValueError):
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
    """Append-only writer of one trace file; thread-safe."""

    def __init__(self, path: str | os.PathLike, header: TraceHeader):
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

    def resize(self, rec: ResizeRecord) -> None:
        self._push(_dumps({"t": "r", **rec.get_config()}))

    def flush(self) -> None:
        with self._lock:
            self._flush_locked(time.perf_counter())

    def close(self, missed: tuple[str, ...] = ()) -> None:
        """End the file; ``missed`` says what is known not to be in it (read back into ``TraceHeader.missed``)."""
        with self._lock:
            if self._fh.closed:
                return
            end = {"t": "end", "n_access": self.n_access}
            if missed:
                end["missed"] = list(missed)
            self._buf.append(_dumps(end))
            self._flush_locked(time.perf_counter())
            self._fh.close()


@dataclass
class Trace:
    """A loaded trace: header, datasets by id, accesses and resizes in file order.

    A merged multi-rank trace has one header per rank (``headers``), datasets
    renumbered so that one key has one id, and ``rank`` set on each record.
    """

    headers: list[TraceHeader]
    datasets: dict[int, DatasetRecord]
    accesses: list[AccessRecord]
    resizes: list[ResizeRecord] = field(default_factory=list)
    complete: bool = True
    source: str = ""

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

    def accesses_of(self, dataset_id: int) -> list[AccessRecord]:
        return [a for a in self.accesses if a.dataset == dataset_id]

    def accessed(self) -> list[DatasetRecord]:
        """Datasets with at least one access, in id order."""
        used = {a.dataset for a in self.accesses}
        return [d for i, d in sorted(self.datasets.items()) if i in used]

    def extent(self, dataset_id: int) -> tuple[int, ...]:
        """Largest extent the dataset reaches in the trace (see ``extent``)."""
        return extent(self.datasets[dataset_id], self.accesses_of(dataset_id),
                      [r.shape for r in self.resizes if r.dataset == dataset_id])


def extent(dataset: DatasetRecord, accesses: list[AccessRecord], resized=()) -> tuple[int, ...]:
    """Largest extent an array reaches: its recorded shape, resizes, and every selection's upper corner."""
    ndim = len(dataset.shape)
    if ndim == 0:  # a scalar: nothing to grow
        return ()
    tops = [np.asarray(dataset.shape, np.int64).reshape(1, ndim)]
    tops += [np.asarray([s], np.int64) for s in resized if len(s) == ndim]
    slabs = [a.selection for a in accesses if a.selection.kind == "hyperslab" and a.selection.ndim == ndim]
    if slabs:  # vectorized: start + stride * (count - 1) + block, where anything is selected
        start, count, stride, block = (np.asarray([getattr(s, k) for s in slabs], np.int64).reshape(-1, ndim)
                                       for k in ("start", "count", "stride", "block"))
        some = (count > 0) & (block > 0)
        tops.append(np.where(some, start + stride * (count - 1) + block, start))
    tops += [np.asarray([a.selection.bounds()[1]], np.int64) for a in accesses
             if a.selection.kind != "hyperslab" and len(a.selection.bounds()[1]) == ndim]
    return tuple(int(v) for v in np.concatenate(tops).max(axis=0))


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


def load_trace(path: str | os.PathLike, *, allow_truncated: bool = False) -> Trace:
    """Read and validate one trace file.

    With ``allow_truncated`` a last line that is cut short (a killed process)
    is skipped and the trace is marked incomplete; any other bad line is an
    error.
    """
    path = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read trace ({exc.strerror})") from None
    lines = raw.split(b"\n")
    ends_clean = raw.endswith(b"\n")
    if ends_clean:
        lines.pop()
    if not lines or not lines[0].strip():
        raise TraceError(f"{path}:1: empty trace, no header line")
    header = None
    other_headers: list[TraceHeader] = []
    datasets: dict[int, DatasetRecord] = {}
    accesses: list[AccessRecord] = []
    resizes: list[ResizeRecord] = []
    complete = False
    rank = 0
    for i, bline in enumerate(lines, start=1):
        where = f"{path}:{i}"
        last = i == len(lines)
        try:
            text = bline.decode("utf-8")
            kind, rec = _parse_line(text, where, rank)
        except (TraceError, UnicodeDecodeError) as exc:
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
        elif header.size > 1 and rec.rank not in {h.rank for h in [header, *other_headers]}:
            other_headers.append(rec)  # a merged trace keeps every rank's header
        else:
            raise TraceError(f"{where}: a second header line for rank {rec.rank}")
    if not complete and not allow_truncated:
        raise TraceError(
            f"{path}:{len(lines)}: trace has no end record (the traced process did not finish): "
            "pass allow_truncated / --allow-truncated to use the prefix"
        )
    return Trace([header, *other_headers], datasets, accesses, resizes, complete, path)


def merge_traces(traces: list[Trace]) -> Trace:
    """One view of several ranks' traces: datasets unified by key, records keep their rank."""
    if not traces:
        raise ValueError("no traces to merge")
    by_key: dict[str, DatasetRecord] = {}
    origin = min(h.t_origin_unix for tr in traces for h in tr.headers)
    accesses: list[AccessRecord] = []
    resizes: list[ResizeRecord] = []
    for tr in traces:
        remap = {}
        for ds in tr.datasets.values():
            if ds.key not in by_key:
                by_key[ds.key] = replace(ds, id=len(by_key))
            remap[ds.id] = by_key[ds.key].id
        # one clock per process: align on its own wall-clock origin (process parts share a rank)
        shift = {h.rank: h.t_origin_unix - origin for h in tr.headers}
        accesses += [replace(a, dataset=remap[a.dataset], t_start=a.t_start + shift.get(a.rank, 0.0))
                     for a in tr.accesses]
        resizes += [replace(r, dataset=remap[r.dataset]) for r in tr.resizes]
    accesses.sort(key=lambda a: a.t_start)
    return Trace(
        headers=sorted((h for tr in traces for h in tr.headers), key=lambda h: h.rank),
        datasets={d.id: d for d in by_key.values()},
        accesses=accesses,
        resizes=resizes,
        complete=all(tr.complete for tr in traces),
        source=",".join(tr.source for tr in traces),
    )


def write_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write a loaded (possibly merged) trace back out.

    A merged trace starts with rank 0's header, ``size`` set to the number of
    ranks, followed by the other ranks' headers; each record names its rank.
    """
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
        fh.write(_dumps({"t": "end", "n_access": len(trace.accesses)}) + "\n")


__all__ = [
    "SCHEMA_VERSION",
    "Trace",
    "TraceError",
    "TraceWriter",
    "extent",
    "load_trace",
    "merge_traces",
    "write_trace",
]
