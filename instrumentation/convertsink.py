"""A trace written of converted libhdf5 records only (a ``sink.Sink``): the converter process's output
(instrumentation/converter.py) and the salvage of what a killed child left unconverted (instrumentation/parts.py).

It numbers datasets from its run's registry (``runinfo.SharedIds``) and times accesses from the run's origin, as
every part of the run does, so that the run's merge takes its batches as they are. Never attached to the hub: it
records nothing of the hooks, only what ``interpose.LibraryCapture`` hands it."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import replace
from pathlib import Path

from .chunklisting import ListLater
from .decode import record_resizes, write_resizes
from .records import ResizeRecord, TraceHeader
from .runinfo import RunInfo, SharedIds
from .sink import DatasetInfo
from .columnar import ColumnarTraceWriter


class ConvertedSink:
    """Converted records into ``path`` with ``header``, a process of the run whose parts go to ``parts_dir``."""

    run = None
    """Not a run's tracer: never handed a converter process of its own (``convert.Converter.start``)."""

    def __init__(self, path: Path, parts_dir: str, run: RunInfo, header: TraceHeader):
        self.path = Path(path)
        self.rank = run.rank
        self.spans: deque = deque()  # the h5py calls of the process: a libhdf5 call inside one is that call
        self._origin = run.origin
        self._shared_ids = SharedIds(parts_dir)
        self._ids: dict[DatasetInfo, int] = {}
        self._key_ids: dict[str, int] = {}
        self._resized: list[ResizeRecord] = []
        self._lock = threading.Lock()
        self._writer = ColumnarTraceWriter(self.path, header)
        self._later = ListLater()  # chunk offsets listed at the close, after the reads (instrumentation/chunklisting.py)

    @property
    def origin(self) -> float:
        return self._origin

    def register(self, info: DatasetInfo, created: bool = False, below: bool = False) -> int:
        with self._lock:
            tid = self._ids.get(info)
            if tid is not None:
                return tid
            tid = None if created else self._key_ids.get(info.key)
            if tid is None:
                shape = info.template.shape if info.shape is None else info.shape  # None: no dataspace
                record = replace(info.template, shape=shape, created=created or info.template.created)
                tid = self._shared_ids.id_of(record)  # the run's id, whichever of its processes saw it first
                self._writer.dataset(replace(record, id=tid))
                self._later.note(replace(record, id=tid))
                self._key_ids[info.key] = tid
            self._ids[info] = tid
            return tid

    def resize(self, info: DatasetInfo, t0: float) -> None:
        self._resized.append(ResizeRecord(self.register(info), info.shape, t0 - self._origin))

    def opened(self, rec, t: float) -> None:
        """``rec`` (``opens.OpenRecord``) at ``t`` (perf_counter clock), in this trace's clock and rank."""
        self._writer.opened(replace(rec, t_start=t - self._origin, rank=self.rank))

    def columns(self, cols) -> None:
        self.drain(force=False)  # the resizes before them go first
        self._writer.access_columns(cols)

    def drain(self, force: bool = True) -> None:
        """Write what is pending (``force``: now, else when the writer's batch is due)."""
        if self._resized:
            resized, self._resized = self._resized, []
            write_resizes(self._writer, record_resizes(resized, self.rank))
        self._writer.flush(force)

    def stage(self) -> None:
        """What was converted so far encoded now (``ColumnarTraceWriter.stage``), by a launcher whose program
        runs beside it (instrumentation/launch.py)."""
        self.drain(force=False)  # the resizes before them go first
        self._writer.stage()

    def close(self, lost: tuple[str, ...], libraries: tuple[str, ...], gather: bool = False) -> None:
        """The trace's end: ``lost`` (what could not be converted) and the ``libraries`` calls went through
        (``gather``: the writer's, for a run's own trace)."""
        self.drain()
        self._later.finish(self._describe_again)
        self._writer.close(lost, libraries, gather=gather)

    def _describe_again(self, record) -> None:
        self._writer.dataset(record)
        self._shared_ids.describe_again(record)


__all__ = ["ConvertedSink"]
