"""Opens and closes of files and datasets (``o`` records, docs/trace-format.md "Opens and closes") and what they
tell of each access: the open span of its dataset, in its process, it was made under (``AccessColumns.epoch``).

An HDF5 chunk cache belongs to an open dataset: HDF5 frees it when the dataset's last id closes, or its file
closes (``H5D_close``). A dataset closed and opened again starts with an empty cache: the loop
``with h5py.File(p) as f: f["x"][batch]`` decodes every chunk anew each time round, and ``f["x"][i]`` on a
temporary Dataset object (no other handle held) does so at every access. The capture records the opens and
closes it sees (``OpenRecord``); an access's ``epoch`` counts the closes of its dataset (or of its file) in its
process before the access began, and the model empties that process's chunk cache where the count changes
(``iomodel.replayer.Replay``). Traces without ``o`` records read as one open span per dataset and process.

Records name their file and dataset by key (``file``, ``path``; ``path`` null: the whole file), not by dataset
id: an open comes before any dataset record, and merges carry them without renumbering.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import RecordError, typed

OPEN, CLOSE = "open", "close"
EVENTS = (OPEN, CLOSE)


@dataclass(frozen=True)
class OpenRecord:
    """A file (``path`` None) or dataset/array (``path`` its name in the file) opened or closed at ``t_start``
    (seconds since the trace's clock origin) by process ``process`` of rank ``rank``. ``via``: the layer that saw
    it ("h5py", "zarr", "libhdf5")."""

    file: str
    path: str | None
    event: str
    t_start: float
    rank: int = 0
    process: int = 0
    via: str = ""

    def get_config(self) -> dict:
        return {
            "file": self.file,
            "path": self.path,
            "ev": self.event,
            "t0": self.t_start,
            **({"rank": self.rank} if self.rank else {}),
            **({"proc": self.process} if self.process else {}),
            **({"via": self.via} if self.via else {}),
        }

    @classmethod
    def from_config(cls, config: dict, rank: int = 0) -> "OpenRecord":
        if not isinstance(config, dict):
            raise RecordError("open record must be a JSON object")
        for k in ("file", "ev", "t0"):
            if k not in config:
                raise RecordError(f"missing field '{k}' in open record")
        event = config["ev"]
        if event not in EVENTS:
            raise RecordError(f"field 'ev' must be 'open' or 'close', got {event!r:.40}")
        path = config.get("path")
        process = typed(config.get("proc", 0), int, "proc")
        if process < 0:
            raise RecordError(f"field 'proc' must be >= 0, got {process}")
        return cls(typed(config["file"], str, "file"), None if path is None else typed(path, str, "path"), event,
                   float(typed(config["t0"], (int, float), "t0")), typed(config.get("rank", rank), int, "rank"),
                   process, str(config.get("via", "")))


def covers(rec: OpenRecord, file: str, path: str) -> bool:
    """Whether ``rec`` opens or closes the dataset ``file::path`` (itself, or its whole file)."""
    return rec.file == file and (rec.path is None or rec.path == path)


def close_times(opens, datasets) -> dict[tuple[int, int, int], np.ndarray]:
    """(rank, process, dataset id) -> the sorted times at which that process closed the dataset or its file."""
    by_file: dict[str, list[OpenRecord]] = {}
    for rec in opens:
        if rec.event == CLOSE:
            by_file.setdefault(rec.file, []).append(rec)
    out: dict[tuple[int, int, int], list[float]] = {}
    for ds in datasets.values():
        for rec in by_file.get(ds.file, ()):
            if rec.path is None or rec.path == ds.path:
                out.setdefault((rec.rank, rec.process, ds.id), []).append(rec.t_start)
    return {k: np.sort(np.asarray(v, float)) for k, v in out.items()}


def recorded_processes(opens) -> set[tuple[int, int]]:
    """The (rank, process) pairs whose opens were recorded (their datasets' spans come from them)."""
    return {(rec.rank, rec.process) for rec in opens}


def mark_epochs(cols, opens, datasets):
    """``cols`` (AccessColumns) with ``epoch`` set: per access, the closes of its dataset or file by its process
    before the access began. A folded run that a close cuts is unrolled (its accesses then differ in epoch)."""
    closes = close_times(opens, datasets)
    if not cols.rows or not closes:
        return cols
    groups = (cols.rank.astype(np.int64) << 40) + (cols.proc.astype(np.int64) << 20) + cols.ds
    last_t0 = cols.t0 + cols.t_step * (cols.rep - 1)
    first = np.zeros(cols.rows, np.int64)
    last = np.zeros(cols.rows, np.int64)
    for (rank, proc, ds), times in closes.items():
        rows = np.flatnonzero(groups == (rank << 40) + (proc << 20) + ds)
        if len(rows):
            first[rows] = np.searchsorted(times, cols.t0[rows], side="right")
            last[rows] = np.searchsorted(times, last_t0[rows], side="right")
    cut = first != last
    if not cut.any():
        return cols.with_epochs(first)
    return mark_epochs(cols.unrolled(cut), opens, datasets)


def cut_at(cols, closes) -> "object":
    """``cols`` (one row per access, not folded yet) with ``epoch`` counting the ``closes`` (sorted times, any
    file's) before each access: a writer folds no run across a close (``columns.compact_runs`` keeps epochs
    apart), so each access's time, and so its open span, stays exact where it matters. None or empty: ``cols``."""
    if closes is None or not len(closes) or not cols.rows:
        return cols
    return cols.with_epochs(np.searchsorted(np.asarray(closes, float), cols.t0, side="right"))


def open_lines(records) -> str:
    """``o`` lines of ``records`` (JSON Lines)."""
    import json

    return "".join(json.dumps({"t": "o", **r.get_config()}, separators=(",", ":")) + "\n" for r in records)


__all__ = ["CLOSE", "EVENTS", "OPEN", "OpenRecord", "close_times", "covers", "cut_at", "mark_epochs", "open_lines",
           "recorded_processes"]
