"""Reading and writing traces (docs/trace-format.md): JSON Lines files and columnar trace directories.

``*.jsonl`` paths are JSON Lines (schema 1), an import and export format; every other path is a columnar
trace (``instrumentation.columnar``), the only format written live: records are buffered briefly and flushed in
batches, so memory stays bounded and a process killed mid-run leaves its whole batches (``load_trace(...,
allow_truncated=True)``). A ``*.jsonl`` trace is written columnar at ``tracedir.live_path`` while its run is live,
and exported at its end; ``load_trace`` reads what a killed run left there. The reader validates every record and
names file and line on error. Loaded traces hold their accesses as ``AccessColumns``.

The model is instrumentation/tracemodel.py, the codecs instrumentation/jsonl.py and columnar.py; this module
chooses by path and names their public parts.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from .columnar import ColumnarTraceWriter, load_columnar, write_columnar
from .jsonl import load_jsonl, read_records, resize_lines, write_jsonl
from .pendingbatch import waiting
from .records import SCHEMA_VERSION, TraceHeader
from .tracedir import is_jsonl, live_path
from .tracemodel import Trace, TraceError, array_identities, clock_shift, dumps, extent, merge_traces, \
    remap_columns, unify


class TraceWriter:
    """Append-only writer of one trace; thread-safe: the columnar format (``columnar.ColumnarTraceWriter``), the
    only live one. For a ``*.jsonl`` path it writes at ``tracedir.live_path(path)`` and exports ``path`` when
    closed (``ExportingWriter``).
    """

    def __new__(cls, path: str | os.PathLike, header: TraceHeader):
        return (ExportingWriter if is_jsonl(path) else ColumnarTraceWriter)(path, header)


class ExportingWriter(ColumnarTraceWriter):
    """A columnar writer at ``live_path(path)`` whose ``close`` exports the JSON Lines file ``path``
    (``merge.export_live``); a process killed before leaves the columnar trace, which ``load_trace(path)`` reads."""

    def __init__(self, path: str | os.PathLike, header: TraceHeader):
        super().__init__(live_path(path), header)
        self.export_to = Path(path)

    def close(self, missed: tuple[str, ...] = (), libraries: tuple[str, ...] = (), *, gather: bool = True) -> None:
        from .merge import export_live

        super().close(missed, libraries, gather=gather)
        with self._lock:
            if self.path.is_dir():  # not exported yet (close is idempotent)
                export_live(self.path, self.export_to)


def load_trace(path: str | os.PathLike, *, allow_truncated: bool = False,
               times: Sequence[str] = ("t0", "dt", "t_step"), step=None) -> Trace:
    """Read and validate one trace (JSON Lines file or columnar trace directory).

    With ``allow_truncated`` what a killed process left is used: JSON Lines
    skip a cut-off last line, columnar traces keep their complete batches (a ``*.jsonl`` trace whose run was killed
    before its export: those at its ``tracedir.live_path``); the trace is marked incomplete. Any other bad record
    is an error.
    ``times``: the timing columns of a columnar trace to read (``trace show`` needs ``dt`` only, ``advise``
    none); the others are 0. ``step(done, total)``: called as a columnar trace's rows are read (a progress bar).
    """
    path = str(path)
    if is_jsonl(path) and not os.path.exists(path) and live_path(path).is_dir():
        path = str(live_path(path))  # a run killed before its export: its columnar records
    if os.path.isdir(path):
        where = None
        if waiting(path):  # a native run's raw logs: converted by this first reader (instrumentation/pendingconvert.py)
            from .pendingconvert import settle, settled_copy_done

            where = settle(path)
        if where is None:
            return load_columnar(path, allow_truncated=allow_truncated, times=times, step=step)
        try:  # converted for this reader only (the directory is read-only)
            trace = load_columnar(where, allow_truncated=allow_truncated, times=times, step=step)
        finally:
            settled_copy_done(where)
        trace.source = path
        return trace
    return load_jsonl(path, allow_truncated)


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
    if is_jsonl(path):
        write_jsonl(trace, path)
    else:
        write_columnar(trace, path)


__all__ = ["SCHEMA_VERSION", "ExportingWriter", "Trace", "TraceError", "TraceWriter",
           "array_identities", "clock_shift", "dumps", "extent", "is_jsonl", "load_trace",
           "merge_traces", "read_records", "remap_columns", "replace_trace", "resize_lines", "unify",
           "write_trace"]
