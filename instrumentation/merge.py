"""The one merge of traces (docs/trace-format.md): MPI ranks' files, a run's child-process parts and the output of
its libhdf5 converters all reach a trace through here, one batch in memory at a time.

As coverage.py does with its data files, each process writes its own trace, and a separate step combines them.
There are two kinds of inputs:

- traces with their own dataset ids and clocks (the ranks of an MPI job, ``ioadvisor trace merge``):
  ``merge_files`` unifies their datasets by key and streams their batches, ids remapped and times moved onto
  one clock, into a columnar trace. A JSON Lines output is an export: the merged view, written once;
- the traces of one run's processes (followed children's parts, converters' outputs), which number their
  datasets from the run's registry and time their accesses from the run's origin: ``adopt`` moves their
  batches into the run's trace directory as they are and rewrites only its records file.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from .arrowcodec import COMPACT_ROWS, to_table, write_table
from .columns import AccessColumns
from .tracedir import META, is_jsonl, prepare
from .tracemodel import dumps


class DirectoryOut:
    """A trace directory written from whole records and batches (conversion, merging).

    Batches are gathered into files of up to COMPACT_ROWS rows: 1,000 ranks of one folded scan each make one
    file, not 1,000 that would each cost a reader a millisecond."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        prepare(self.path)
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


def open_source(path: str | os.PathLike, allow_truncated: bool):
    """A trace to merge: a columnar trace's records only (its batches are streamed), a JSON Lines file whole.
    Raises ``TraceError`` naming the file on bad input."""
    from .columnar_reader import read_meta
    from .jsonl import load_jsonl
    from .tracemodel import Trace

    if os.path.isdir(path):
        opens: list = []
        headers, datasets, resizes, complete, _ = read_meta(path, allow_truncated, opens)
        return Trace(headers, datasets, None, resizes, complete, str(path), opens=opens)
    return load_jsonl(str(path), allow_truncated)


def rank_sources(paths: list[Path]) -> tuple[list, list[str]]:
    """The readable ones of the rank files ``paths`` (``open_source``), and a note for each rank left out or
    cut short."""
    from .tracemodel import TraceError

    sources, missed = [], []
    for r, rp in enumerate(paths):
        try:
            trace = open_source(rp, allow_truncated=True)
        except TraceError as exc:
            missed.append(f"rank {r} trace left out of the merge: {exc}")
            continue
        if not trace.complete:
            missed.append(f"rank {r} trace {rp} is truncated; merged its readable prefix")
        sources.append((rp, trace))
    return sources, missed


def merge_files(paths: list, output: str | os.PathLike, *, allow_truncated: bool = False,
                missed: tuple[str, ...] = ()) -> tuple[int, int, int]:
    """Merge traces (paths, or (path, ``open_source`` result) pairs) into ``output``; ``missed`` (what the merge
    left out) goes into the first header. Returns (traces merged, accesses, datasets)."""
    sources = [p if isinstance(p, tuple) else (p, open_source(p, allow_truncated)) for p in paths]
    if is_jsonl(output):
        return _export_jsonl(sources, output, allow_truncated, missed)
    return _stream_columnar(sources, output, missed)


def _export_jsonl(sources: list, output, allow_truncated: bool, missed: tuple[str, ...]) -> tuple[int, int, int]:
    """The merged view written as JSON Lines: every access in time order, so all of them in memory."""
    from .columnar_reader import load_columnar
    from .jsonl import write_jsonl
    from .tracemodel import merge_traces

    traces = [load_columnar(p, allow_truncated=allow_truncated) if os.path.isdir(p) else t for p, t in sources]
    merged = merge_traces(traces)
    if missed:
        merged.headers[0] = replace(merged.headers[0], missed=merged.headers[0].missed + tuple(missed))
    write_jsonl(merged, output)
    return len(traces), merged.n_access, len(merged.datasets)


def _stream_columnar(sources: list, output, missed: tuple[str, ...]) -> tuple[int, int, int]:
    """One columnar trace of ``sources``, batch by batch: no two ranks' accesses in memory together."""
    from .columnar_reader import read_parts
    from .columns import fold_runs
    from .opens import mark_epochs
    from .tracemodel import clock_shift, remap_columns, shift_opens, unify

    traces = [t for _, t in sources]
    by_key, remaps = unify(traces)
    headers = sorted((h for t in traces for h in t.headers), key=lambda h: h.rank)
    origin = min(h.t_origin_unix for h in headers)
    out = DirectoryOut(output)
    size = max(h.size for h in headers)
    for i, h in enumerate(headers):
        out.record("h", replace(h, size=size, missed=h.missed + (missed if i == 0 else ())).get_config())
    for d in by_key.values():
        out.record("d", d.get_config())
    for t, remap in zip(traces, remaps):
        for r in t.resizes:
            out.record("r", replace(r, dataset=remap[r.dataset]).get_config())
    shifted = [shift_opens(t.opens, t.headers, origin, t.header.rank if len(t.headers) == 1 else None)
               for t in traces]
    merged = {d.id: d for d in by_key.values()}
    for opens in shifted:
        for o in opens:
            out.record("o", o.get_config())
    for (p, t), remap, opens in zip(sources, remaps, shifted):
        own = t.header.rank if len(t.headers) == 1 else None  # one process's own file: its accesses are its rank's
        batches = read_parts(p, t.datasets) if os.path.isdir(p) else [t.columns]
        for cols in batches:
            cols = clock_shift(remap_columns(cols, remap, 0.0, own), t.headers, origin)
            # ranks regrouped: no run folded across a close (the batches' own folds respected them)
            out.batch(cols if own is not None else fold_runs(mark_epochs(cols, opens, merged) if opens else cols))
    out.close()
    return len(traces), out.n_access, len(by_key)


def export_live(live: Path, path: str | os.PathLike) -> None:
    """Write the columnar trace ``live`` (``tracedir.live_path``) out as the JSON Lines file ``path`` the user
    asked for, then remove ``live``: the file appears whole (a process killed meanwhile leaves ``live``)."""
    import shutil

    from .columnar_reader import load_columnar
    from .jsonl import write_jsonl

    tmp = Path(f"{path}.tmp")
    write_jsonl(load_columnar(live), tmp)
    os.replace(tmp, path)
    shutil.rmtree(live)


def whole_lines(data: bytes) -> bytes:
    """``data`` up to its last line end (a writer killed in the middle of a line left the rest)."""
    return data[: data.rfind(b"\n") + 1]


def replace_records(path: Path, records: bytes) -> None:
    """Replace the records file of the trace directory ``path`` whole: a process killed meanwhile leaves the old
    file or the new one."""
    tmp = path / f".{META}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(records)
    os.replace(tmp, path / META)


def adopt(path: Path, batches: list[Path], records: bytes, final_records: bytes | None = None,
          procs: list[int] | None = None, closes: dict | None = None) -> None:
    """Move ``batches`` of traces that share the dataset ids and clock of the trace directory ``path`` into it
    (``rawparts.adopt_batches``; ``procs``: each batch's process index). Its records file becomes ``records``
    first (it must name their datasets), then, once every batch is in place, ``final_records`` where given;
    ``closes``: each process's close times (``rawparts.adopt_batches``)."""
    from .rawparts import adopt_batches

    replace_records(path, records)
    adopt_batches(path, batches, procs, closes)
    if final_records is not None:
        replace_records(path, final_records)


__all__ = ["DirectoryOut", "adopt", "export_live", "merge_files", "open_source", "rank_sources", "replace_records",
           "whole_lines"]
