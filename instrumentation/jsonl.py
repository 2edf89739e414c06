"""The JSON Lines trace format (schema 1, docs/trace-format.md): its streaming writer and its validating reader.

The writer streams: records are buffered briefly and flushed in batches, so memory stays bounded and a
process killed mid-run leaves a readable prefix. The reader validates every record and names file and line on
error."""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from .records import AccessRecord, DatasetRecord, RecordError, ResizeRecord, TraceHeader

from .tracemodel import Trace, TraceError, dumps

FLUSH_EVERY = 256
"""Records buffered before a write; also flushed at least every FLUSH_SECONDS."""
FLUSH_SECONDS = 0.5


def _ilist(values) -> str:
    return "[" + ",".join(map(str, values)) + "]"


def hyperslab_head(ds: int, op: str, ndim: int, count, stride, block, n: int, nbytes: int) -> str:
    """The JSON Lines access line of a hyperslab up to its t0 value, as a %-template of start."""
    start = "[" + ",".join(["%d"] * ndim) + "]"
    return (f'{{"t":"a","ds":{ds},"op":"{op}","sel":{{"start":{start},"count":{_ilist(count)},'
            f'"stride":{_ilist(stride)},"block":{_ilist(block)}}},"n":{n},"bytes":{nbytes},"t0":')


def resize_lines(rows: list[tuple]) -> str:
    """Resize records' JSON lines, as ``dumps`` of their configs writes them, from (ds, shape, t0, rep, step,
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


class JsonlTraceWriter:
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
        self._fh.write(dumps({"t": "h", **header.get_config()}) + "\n")
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
        line = dumps({"t": "d", **rec.get_config()})
        with self._lock:  # datasets go out at once: accesses that follow refer to them
            self._buf.append(line)
            self._flush_locked(time.perf_counter())

    def access(self, rec: AccessRecord) -> None:
        self.n_access += 1
        self._push(dumps({"t": "a", **rec.get_config()}))

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
            self._buf.append(dumps(end))
            self._flush_locked(time.perf_counter())
            self._fh.close()


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


def read_records(path: str, raw: bytes, allow_truncated: bool, accesses: list | None):
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




def load_jsonl(path: str, allow_truncated: bool = False) -> Trace:
    """Read and validate a JSON Lines trace (``tracefile.load_trace``)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read trace ({exc.strerror})") from None
    accesses: list[AccessRecord] = []
    headers, datasets, resizes, complete, _ = read_records(path, raw, allow_truncated, accesses)
    return Trace(headers, datasets, accesses, resizes, complete, path)


def write_jsonl(trace: Trace, path: str | os.PathLike) -> None:
    """Write a loaded trace as JSON Lines (``tracefile.write_trace``)."""
    size = trace.nprocs
    with open(path, "w", encoding="utf-8") as fh:
        for h in trace.headers:
            fh.write(dumps({"t": "h", **replace(h, size=size).get_config()}) + "\n")
        for d in trace.datasets.values():
            fh.write(dumps({"t": "d", **d.get_config()}) + "\n")
        for a in trace.accesses:
            fh.write(dumps({"t": "a", **a.get_config()}) + "\n")
        for r in trace.resizes:
            fh.write(dumps({"t": "r", **r.get_config()}) + "\n")
        fh.write(dumps({"t": "end", "n_access": trace.n_access}) + "\n")


__all__ = ["FLUSH_EVERY", "FLUSH_SECONDS", "JsonlTraceWriter", "hyperslab_head", "load_jsonl", "read_records",
           "resize_lines", "write_jsonl"]
