"""Reading and writing traces (docs/trace-format.md): JSON Lines files and columnar trace directories.

``*.jsonl`` paths are JSON Lines (schema 1); every other path is a columnar
trace (``instrumentation.columnar``). Both writers stream: records are
buffered briefly and flushed in batches, so memory stays bounded and a
process killed mid-run leaves a readable prefix (``load_trace(...,
allow_truncated=True)``). The reader validates every record and names file and
line on error. Loaded traces hold their accesses as ``AccessColumns``.

The model is instrumentation/tracemodel.py, the codecs instrumentation/jsonl.py and columnar.py; this module
chooses by path and names their public parts.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from .columnar import ColumnarTraceWriter, load_columnar, write_columnar
from .jsonl import FLUSH_EVERY, FLUSH_SECONDS, JsonlTraceWriter, hyperslab_head, load_jsonl, read_records, \
    resize_lines, write_jsonl
from .records import SCHEMA_VERSION, TraceHeader
from .tracedir import is_jsonl
from .tracemodel import Trace, TraceError, array_identities, clock_shift, dumps, extent, merge_traces, \
    remap_columns, unify


class TraceWriter:
    """Append-only writer of one trace; thread-safe.

    ``TraceWriter(path, header)`` is a writer of JSON Lines (``jsonl.JsonlTraceWriter``) when ``path`` ends in
    ``.jsonl``, of the columnar format (``columnar.ColumnarTraceWriter``) otherwise.
    """

    def __new__(cls, path: str | os.PathLike, header: TraceHeader):
        return (JsonlTraceWriter if is_jsonl(path) else ColumnarTraceWriter)(path, header)


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
        return load_columnar(path, allow_truncated=allow_truncated, times=times, step=step)
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


__all__ = ["FLUSH_EVERY", "FLUSH_SECONDS", "SCHEMA_VERSION", "Trace", "TraceError", "TraceWriter",
           "array_identities", "clock_shift", "dumps", "extent", "hyperslab_head", "is_jsonl", "load_trace",
           "merge_traces", "read_records", "remap_columns", "replace_trace", "resize_lines", "unify",
           "write_trace"]
