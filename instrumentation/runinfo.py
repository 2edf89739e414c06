"""What every process of one run shares (instrumentation/follow.py): its clock and rank (``RunInfo``,
``<parts dir>/_run.json``) and its dataset ids (``SharedIds``, ``<parts dir>/_datasets.jsonl``).

Below the tracer, the launcher and the converter, which each take a run's ids and clock from here."""
from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from .partsdir import DATASETS_FILE, RUN_FILE


@dataclass(frozen=True)
class RunInfo:
    """What every part of a run shares with the run's trace, so that parts merge without rewriting an access.

    The run's tracer writes it into its parts directory (``RUN_FILE``); a forked child copies its parent's.
    """

    t_origin_unix: float
    """The run's clock origin (``TraceHeader.t_origin_unix``): every part times its accesses from it."""
    origin: float
    """The same instant on ``time.perf_counter``'s clock (CLOCK_MONOTONIC, one per host): taken as it is, not
    through ``time.time``, parts' times are the run's to the nanosecond (a salvage matches calls microseconds
    apart: ``merge_parts``)."""
    rank: int
    size: int
    def part_path(self, parts_dir: str | os.PathLike, pid: int) -> Path:
        return Path(parts_dir) / f"{pid}.parquet"

    def get_config(self) -> dict:
        return {"t_origin_unix": self.t_origin_unix, "origin": self.origin, "rank": self.rank, "size": self.size}

    @classmethod
    def from_config(cls, config: dict) -> "RunInfo":
        return cls(float(config["t_origin_unix"]), float(config["origin"]), int(config["rank"]), int(config["size"]))

    def save(self, parts_dir: str | os.PathLike) -> None:
        path = Path(parts_dir) / RUN_FILE
        tmp = path.with_name(f".{RUN_FILE}.{os.getpid()}")
        tmp.write_text(json.dumps(self.get_config()))
        os.replace(tmp, path)  # a child starting now reads all of it or nothing

    @classmethod
    def load(cls, parts_dir: str | os.PathLike) -> "RunInfo | None":
        """The run's information; None when the run is over (its tracer merged the parts and removed it)."""
        try:
            return cls.from_config(json.loads((Path(parts_dir) / RUN_FILE).read_text()))
        except FileNotFoundError:
            return None


class SharedIds:
    """Dataset ids shared by every process of one run: ``<parts dir>/_datasets.jsonl``, one dataset record
    per line in id order, appended under an exclusive ``flock``.

    A process asks only for a dataset it has not seen yet; it reads the lines other processes
    appended since its last look. As within one tracer, a key seen before keeps its id unless the
    dataset was created anew. The merged trace's dataset records are these lines.
    """

    def __init__(self, parts_dir: str | os.PathLike):
        self.path = Path(parts_dir) / DATASETS_FILE
        self._read = 0  # bytes of the file already parsed
        self._ids: dict[str, int] = {}
        self._next = 0

    def id_of(self, record) -> int:
        """The run's id of ``record`` (a DatasetRecord; its own ``id`` is ignored)."""
        from .tracemodel import dumps

        # opened anew each time: a forked child must not share its parent's open file (flock is per open file)
        with open(self.path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(self._read)
            new = fh.read()
            lines = new.split(b"\n")
            torn = lines.pop()  # b"" after a whole last line; else a writer killed mid-line
            for line in lines:
                self._learn(line)
            self._read += len(new)
            if not record.created and record.key in self._ids:
                return self._ids[record.key]
            tid = self._next
            line = ((b"\n" if torn else b"") +  # ends a torn line: it stays unreadable, ours does not
                    dumps({"t": "d", **replace(record, id=tid).get_config()}).encode() + b"\n")
            fh.write(line)
            fh.flush()
            self._read += len(line)
            self._ids[record.key] = tid
            self._next = tid + 1
            return tid

    def describe_again(self, record) -> None:
        """Append ``record`` (its id the run's) again, completed: its chunk offsets, listed at the end
        (instrumentation/chunklisting.py). The merged trace's reader keeps an id's last record."""
        from .tracemodel import dumps

        with open(self.path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(self._read)
            new = fh.read()
            lines = new.split(b"\n")
            torn = lines.pop()
            for line in lines:
                self._learn(line)
            self._read += len(new)
            line = (b"\n" if torn else b"") + dumps({"t": "d", **record.get_config()}).encode() + b"\n"
            fh.write(line)
            fh.flush()
            self._read += len(line)

    def _learn(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
            key, tid = f"{obj['file']}::{obj['path']}", int(obj["id"])  # DatasetRecord.key
        except (ValueError, KeyError, TypeError):
            return  # a line torn by a killed writer: its id was never used
        # a key's latest array has its highest id (an id's record may come again: ``describe_again``)
        self._ids[key] = max(tid, self._ids.get(key, -1))
        self._next = max(self._next, tid + 1)


__all__ = ["RunInfo", "SharedIds"]
