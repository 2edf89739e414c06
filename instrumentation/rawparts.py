"""Raw batches of a followed process's part (``part-N.npy``, numpy record arrays) and their adoption into the
run's trace directory as Parquet batches."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from .arrowcodec import COMPACT_ROWS, from_table, to_table, write_table
from .columnar_reader import parquet_file, part_files
from .columns import ARRAYS, AccessColumns, compact_runs
from .opens import cut_at
from .tracedir import PART as _PART, PARTS as _PARTS, RAW as _RAW
from .tracemodel import TraceError


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
        # a field a writer of another version lacks (``proc``, ``collective``) takes its default
        return AccessColumns(**{name: np.ascontiguousarray(rec[name]) for name in ARRAYS if name in rec.dtype.names})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(f"{path}: not a readable batch of accesses ({str(exc)[:120]})") from None


def batch_files(path: str | os.PathLike) -> list[Path]:
    """``part_files`` and the raw batches (``write_raw``) of a followed process's part, in order."""
    path = Path(path)
    raw = [(int(m.group(1)), f) for f in path.iterdir() if (m := _RAW.match(f.name))]
    parquet = [(int((_PART.match(f.name) or _PARTS.match(f.name)).group(1)), f) for f in part_files(path)]
    return [f for _, f in sorted(raw + parquet)]


def adopt_batches(path: str | os.PathLike, batches: list[Path], procs: list[int] | None = None,
                  closes: dict | None = None) -> None:
    """Move batch files of other traces into the trace directory ``path``, after its own batches.

    For traces that share ``path``'s dataset ids, clock and rank (the parts of a followed run):
    each Parquet batch is renamed, not rewritten; runs of raw batches (``write_raw``, one row per access) become
    Parquet files of up to COMPACT_ROWS rows, their runs folded batch by batch as the writer folds its own. Its
    ``_meta.jsonl`` must already name their datasets. ``procs``: the process index of each batch's accesses
    (``AccessColumns.proc``; None: all 0); a Parquet batch of a process other than 0 is rewritten with it.
    ``closes``: process index -> the times its files and datasets were closed (no run folded across one:
    ``opens.cut_at``)."""
    path = Path(path)
    last = -1
    for f in path.iterdir():
        m = _PART.match(f.name) or _PARTS.match(f.name)
        if m:
            last = max(last, int(m.groups()[-1]))
    n = last + 1
    raw: list[tuple[Path, AccessColumns]] = []
    raw_proc = 0  # the process of the raw batches gathered (one file holds one process's)

    def convert() -> None:
        nonlocal n
        if raw:
            cuts = (closes or {}).get(raw_proc)
            write_table(to_table(AccessColumns.concat(compact_runs(cut_at(cols, cuts)) for _, cols in raw)),
                        path / f"part-{n:06d}.parquet")
            n += 1
            for f, _ in raw:
                f.unlink()
            raw.clear()

    for batch, proc in zip(batches, procs if procs is not None else [0] * len(batches)):
        if _RAW.match(batch.name):
            cols = owned(read_raw(batch), proc)
            if raw and (sum(c.rows for _, c in raw) + cols.rows > COMPACT_ROWS or raw_proc != proc):
                convert()
            raw.append((batch, cols))
            raw_proc = proc
            continue
        convert()
        if proc:
            write_table(to_table(owned(from_table(parquet_file(batch).read_all(), str(batch)), proc)),
                        path / f"part-{n:06d}.parquet")
            batch.unlink()
        else:
            os.replace(batch, path / f"part-{n:06d}.parquet")
        n += 1
    convert()


def owned(cols: AccessColumns, proc: int) -> AccessColumns:
    """``cols`` made by process ``proc`` of its rank (``AccessColumns.proc``)."""
    if not cols.rows or (proc == 0 and not cols.proc.any()):
        return cols
    return replace(cols, proc=np.full(cols.rows, proc, np.int32))
