"""The JSON Lines trace format (schema 1, docs/trace-format.md): an import and export format, its validating
reader and its writer of a whole trace (``write_jsonl``). Traces are written live in the columnar format only;
a ``*.jsonl`` trace asked for is exported from it at the run's end (``merge.export_live``).

The reader names file and line on error."""
from __future__ import annotations

import json
import os
from dataclasses import replace

from .opens import OpenRecord
from .records import AccessRecord, DatasetRecord, RecordError, ResizeRecord, TraceHeader

from .tracemodel import Trace, TraceError, dumps


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
        if kind == "o":
            return kind, OpenRecord.from_config(obj, rank)
        if kind == "h":
            return kind, TraceHeader.from_config(obj)
        if kind in ("end", "pending"):  # pending: a native run's raw logs wait (instrumentation/pendingbatch.py)
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


def read_records(path: str, raw: bytes, allow_truncated: bool, accesses: list | None, opens: list | None = None):
    """Header(s), datasets, resizes and completeness of JSON Lines records (``accesses`` collects access records;
    None: access lines are an error, as in a columnar trace's ``_meta.jsonl``; ``opens`` collects open records,
    None: they are skipped)."""
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
        elif kind == "o":
            if opens is not None:
                opens.append(rec)
        elif kind == "pending":
            continue  # converted before any read (load_trace): here only when its batch was never sealed
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
    opens: list[OpenRecord] = []
    headers, datasets, resizes, complete, _ = read_records(path, raw, allow_truncated, accesses, opens)
    return Trace(headers, datasets, accesses, resizes, complete, path, opens=opens)


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
        for o in trace.opens:
            fh.write(dumps({"t": "o", **o.get_config()}) + "\n")
        fh.write(dumps({"t": "end", "n_access": trace.n_access}) + "\n")


__all__ = ["load_jsonl", "read_records",
           "resize_lines", "write_jsonl"]
